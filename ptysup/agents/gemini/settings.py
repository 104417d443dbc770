"""The system settings file ptysup gives Gemini CLI for one run: its hooks, and the switches
that keep an unattended start free of dialogs.

Gemini CLI 0.61 reads `GEMINI_CLI_SYSTEM_SETTINGS_PATH` on top of the user's and the
project's settings (system settings win; `hooks` lists are concatenated, so the person's own
hooks still run). It skips the file, with only a warning, when a parent directory is group-
or world-writable: the run's private 0700 directory under ptysup's state dir is safe.
"""

from __future__ import annotations

from pathlib import Path

from ptysup.agents import settingsfile

FILE_NAME = "gemini-system-settings.json"
# The hooks ptysup listens to, by Gemini's names. BeforeTool only for the question tool:
# every other tool would start a Python process before it runs, for nothing.
HOOKS = ("SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "AfterTool", "Notification")
ASK_TOOL = "ask_user"
# A question waits for the supervisor's answer. ptysup replies on every way out (and a dead
# ptysup closes the socket), so this only bounds a hung ptysup; Gemini's own hook timeout
# (milliseconds) is set a little longer.
ASK_WAIT_S = 86_400
_HOOK_NAME = "ptysup"


def settings(hook_command: str | None, ask_command: str | None = None) -> dict[str, object]:
    """The settings: folder trust off (its dialog ends the process when answered, with the
    relaunch off), no auto-update during a run, and ptysup's hooks: HOOK_COMMAND reports,
    ASK_COMMAND (the same client, waiting for ptysup's reply) answers questions."""
    data: dict[str, object] = {
        "security": {"folderTrust": {"enabled": False}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }
    if hook_command is None:
        return data
    hooks: dict[str, list[dict[str, object]]] = {
        name: [{"hooks": [{"type": "command", "name": _HOOK_NAME, "command": hook_command}]}]
        for name in HOOKS
    }
    hooks["AfterTool"][0]["matcher"] = ".*"
    if ask_command is not None:
        ask = {
            "type": "command",
            "name": f"{_HOOK_NAME}-ask",
            "command": ask_command,
            "timeout": (ASK_WAIT_S + 60) * 1000,
        }
        hooks["BeforeTool"] = [{"matcher": f"^{ASK_TOOL}$", "hooks": [ask]}]
    data["hooks"] = hooks
    return data


def write(
    private: Path,
    hook_command: str | None,
    ask_command: str | None = None,
    base: Path | None = None,
) -> Path:
    """Write the settings into PRIVATE (a 0700 directory of this run); the file's path.
    BASE is the system settings file the person already uses, if any: its settings are
    kept, ptysup's switches win, and its hooks run beside ptysup's."""
    return settingsfile.write(private / FILE_NAME, settings(hook_command, ask_command), base)
