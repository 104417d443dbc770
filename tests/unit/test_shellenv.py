"""An agent's hook shell reads no ~/.bashrc when ptysup was not started from a shell:
Gemini CLI and Qwen Code run hooks as `bash -c` with sockets for stdin, and bash reads the
person's .bashrc then unless SHLVL says a shell is above it (a slow .bashrc delayed every
hook past the end of the turn)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from ptysup.agents.gemini.profile import GeminiProfile
from ptysup.agents.qwen.profile import QwenProfile
from ptysup.agents.shellenv import under_a_shell


def _hook_shell_read_bashrc(home: Path, env: dict[str, str]) -> bool:
    """Run `bash -c true` as Gemini CLI runs a hook (stdin a socket); whether it read
    HOME's .bashrc."""
    marker = home / "bashrc-read"
    (home / ".bashrc").write_text(f"touch {marker}\n")
    ours, theirs = socket.socketpair()
    with ours, theirs:
        subprocess.run(
            ["bash", "-c", "true"], stdin=theirs.fileno(), env=env, check=True, timeout=30
        )
    read = marker.exists()
    marker.unlink(missing_ok=True)
    return read


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_hook_shell_reads_no_bashrc_once_shlvl_says_a_shell_is_above(tmp_path: Path) -> None:
    bare = {"HOME": str(tmp_path), "PATH": os.defpath}  # ptysup started by a program
    assert _hook_shell_read_bashrc(tmp_path, bare)  # the cause, seen for real
    assert not _hook_shell_read_bashrc(tmp_path, under_a_shell(bare))


def test_shlvl_is_raised_to_one_only_where_no_shell_set_it() -> None:
    assert under_a_shell({})["SHLVL"] == "1"
    assert under_a_shell({"SHLVL": "0"})["SHLVL"] == "1"
    assert under_a_shell({"SHLVL": "x"})["SHLVL"] == "1"
    assert under_a_shell({"SHLVL": "3"})["SHLVL"] == "3"


def test_gemini_and_qwen_start_as_under_a_shell(tmp_path: Path) -> None:
    env = {"PATH": "/bin", "HOME": str(tmp_path), "GEMINI_CLI_HOME": str(tmp_path)}
    for profile in (GeminiProfile(), QwenProfile()):
        private = tmp_path / profile.name
        private.mkdir(mode=0o700)
        assert profile.launch([profile.name], env, None, private).env["SHLVL"] == "1"
