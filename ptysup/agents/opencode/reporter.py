"""The TUI plugin ptysup gives opencode for one run, and the TUI config that loads it.

opencode 1.18 has no shell hooks; its terminal UI loads plugins named in `tui.json`, and
`OPENCODE_TUI_CONFIG` names one more such file, read after the person's global one: the
plugin lists are joined, so the person's own TUI plugins still load. Both files are
written in the run's private 0700 directory; the plugin holds the socket's path and
token and the hook command that waits for ptysup's answer to a question, so nothing else
needs them in the environment.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ptysup.agents import settingsfile

ENV = "OPENCODE_TUI_CONFIG"
PLUGIN_NAME = "ptysup-reporter.js"
CONFIG_NAME = "ptysup-tui.json"
_TEMPLATE = Path(__file__).with_name("reporter.js")


def plugin_source(socket_path: str, token: str, ask_command: str) -> str:
    """The plugin's code for this run's socket, token and waiting hook command."""
    text = _TEMPLATE.read_text(encoding="utf-8")
    for name, value in (("SOCKET", socket_path), ("TOKEN", token), ("ASK_COMMAND", ask_command)):
        text = text.replace(f"__{name}__", json.dumps(value))
    return text


def write(private: Path, address: tuple[str, str], ask_command: str, base: Path | None) -> Path:
    """Write the plugin and the TUI config that loads it into PRIVATE; the config's path.
    BASE is the TUI config the person already names in OPENCODE_TUI_CONFIG, if any: its
    settings and plugins are kept (a plugin it names by a relative path must then be
    named by an absolute one), ptysup's plugin joins them."""
    plugin = private / PLUGIN_NAME
    fd = os.open(plugin, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(plugin_source(*address, ask_command))
    ours = {"plugin": [plugin.as_uri()]}
    return settingsfile.write(private / CONFIG_NAME, ours, base)
