"""The system settings file ptysup gives Qwen Code for one run: its hooks, and the switches
that keep an unattended start free of dialogs and its input box free of suggestions.

Qwen Code 0.24 reads `QWEN_CODE_SYSTEM_SETTINGS_PATH` on top of the user's and the
project's settings (system settings win; its hooks run after the person's own, which
still run). The file is written in the run's private 0700 directory.
"""

from __future__ import annotations

from pathlib import Path

from ptysup.agents import settingsfile
from ptysup.agents.events import HOOK_NAMES

FILE_NAME = "qwen-system-settings.json"
ENV = "QWEN_CODE_SYSTEM_SETTINGS_PATH"
# Qwen Code otherwise starts itself again as a child (for a larger heap) that outlives its
# parent's SIGKILL: one process, which ends with its terminal.
NO_RELAUNCH = "QWEN_CODE_NO_RELAUNCH"
# The hooks ptysup listens to: Qwen Code's names and payloads are ptysup's (Claude Code's).
HOOKS = HOOK_NAMES
_TOOL_HOOKS = {"PostToolUse", "PostToolUseFailure"}
ASK_TOOL = "ask_user_question"
# The question tool's PermissionRequest goes to the waiting hook alone: the reporting one
# takes every other tool (Qwen Code's matchers are regular expressions).
_NOT_ASK = f"^(?!{ASK_TOOL}$).*$"
# ptysup replies to a question on every way out (a dead ptysup closes the socket), so the
# long wait only bounds a hung ptysup; Qwen Code's own timeout (ms) is a little longer.
ASK_WAIT_S = 86_400


def settings(hook_command: str | None, ask_command: str | None = None) -> dict[str, object]:
    """The settings: no follow-up suggestion pre-filled in the input box after a turn (an
    Enter would submit it with ptysup's text), none of the welcome-back, feedback or
    auto-mode notices, no auto-update during a run; and ptysup's hooks: HOOK_COMMAND
    reports, ASK_COMMAND (the same client, waiting for ptysup's reply) answers questions."""
    data: dict[str, object] = {
        "ui": {
            "enableFollowupSuggestions": False,
            "enableWelcomeBack": False,
            "enableUserFeedback": False,
            "autoModeAcknowledged": True,
        },
        "general": {"enableAutoUpdate": False},
    }
    if hook_command is None:
        return data
    entry = {"type": "command", "command": hook_command}
    hooks: dict[str, list[dict[str, object]]] = {
        name: [{"matcher": "*", "hooks": [entry]} if name in _TOOL_HOOKS else {"hooks": [entry]}]
        for name in HOOKS
    }
    hooks["PermissionRequest"] = [{"matcher": _NOT_ASK, "hooks": [entry]}]
    if ask_command is not None:
        ask = {"type": "command", "command": ask_command, "timeout": (ASK_WAIT_S + 60) * 1000}
        hooks["PermissionRequest"].append({"matcher": f"^{ASK_TOOL}$", "hooks": [ask]})
    data["hooks"] = hooks
    return data


def write(
    private: Path, hook_command: str | None, ask_command: str | None, base: Path | None
) -> Path:
    """Write the settings into PRIVATE (a 0700 directory of this run); the file's path.
    BASE is the system settings file the person already uses, if any: its settings are
    kept, ptysup's switches win, and its hooks run beside ptysup's."""
    return settingsfile.write(private / FILE_NAME, settings(hook_command, ask_command), base)
