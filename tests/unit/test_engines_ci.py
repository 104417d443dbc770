"""The shell-free half of the engine files: outputs, the batch table, Claude Code's config."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from ptysup.engines import ci
from ptysup.testing import kit
from ptysup.testing.pins import pin


def test_outputs_survive_values_that_look_like_delimiters_or_span_lines(tmp_path: Path) -> None:
    path = tmp_path / "out"
    ci.write_outputs(path, {"outcome": "complete", "reason": "a\nEOF\nb=c"})
    lines = path.read_text().split("\n")
    name, delimiter = lines[0].split("<<")
    assert name == "outcome" and lines[1:3] == ["complete", delimiter]
    name, delimiter = lines[3].split("<<")
    assert name == "reason" and lines[4:8] == ["a", "EOF", "b=c", delimiter]
    assert delimiter not in "a\nEOF\nb=c"


def summary(root: Path, name: str, **fields: object) -> None:
    (root / name).mkdir(parents=True)
    (root / name / ci.SUMMARY_FILE).write_text(json.dumps(fields))


def test_the_table_lists_every_run_and_every_task_that_left_none(tmp_path: Path) -> None:
    summary(
        tmp_path,
        "ptysup-1-run-1",
        batch_id="cache",
        outcome="complete",
        exit_code=0,
        iterations=2,
        cost_usd=0.25,
        run_id="r1",
    )
    summary(
        tmp_path,
        "ptysup-2-run-1",
        batch_id="docs|x",
        outcome="abort",
        exit_code=1,
        iterations=1,
        cost_usd=None,
        run_id="r2",
    )
    text = ci.table(tmp_path, ["cache", "docs|x", "lost"])
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0].startswith("| task | outcome")
    assert rows[1] == "| cache | complete ✅ | 0 | 2 | $0.2500 | r1 |"
    assert rows[2] == "| docs\\|x | abort ❌ | 1 | 1 | $0.0000 | r2 |"
    assert rows[3].startswith("| lost | no run ❌ |")
    assert len(rows) == 4


def test_the_table_holds_no_control_or_escape_bytes(tmp_path: Path) -> None:
    raw = "\x1b[2J\x1b]0;owned\x07x\x00\x9b2J"
    summary(tmp_path, "ptysup-1-run-1", batch_id=f"t{raw}", outcome=f"abort{raw}", run_id=raw)
    text = ci.table(tmp_path, [f"t{raw}"])
    assert not re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), text
    assert "| tx | abortx ❌ |" in text and text.rstrip().endswith("| x |")


def test_the_table_says_so_when_nothing_was_uploaded(tmp_path: Path) -> None:
    out = io.StringIO()
    assert ci.main(["table", str(tmp_path / "missing")], env={}, out=out) == 0
    assert "No run directory was uploaded." in out.getvalue()


def test_claude_config_approves_the_jobs_key_and_trusts_the_folder(tmp_path: Path) -> None:
    key = "sk-ant-" + "k" * 40
    code = ci.main(
        ["claude-config", "--project", str(tmp_path)],
        env={"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"), "ANTHROPIC_API_KEY": key},
    )
    assert code == 0
    data = json.loads((tmp_path / "cfg" / ".claude.json").read_text())
    assert data["customApiKeyResponses"]["approved"] == [key[-20:]]
    assert data["projects"][str(tmp_path.resolve())]["hasTrustDialogAccepted"] is True


def test_claude_config_without_a_place_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert ci.main(["claude-config"], env={}) == 2
    assert capsys.readouterr().err.startswith("ptysup: claude-config needs")


def test_install_with_a_prefix_that_holds_the_pin_prints_its_binary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    package = tmp_path / "node_modules" / "@anthropic-ai" / "claude-code"
    package.mkdir(parents=True)
    claude = pin("claude")
    (package / "package.json").write_text(json.dumps({"version": claude.version}))
    binary = claude.local_bin(tmp_path)
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    assert kit.main(["claude", "install", "--prefix", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(binary)


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_outside_git_there_is_no_patch(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x\n")
    assert ci.work_diff(tmp_path) == b""


@pytest.mark.pty  # starts processes: the PTY tier's (docs/development.md)
def test_the_patch_holds_the_work_never_ptysup_s_or_an_agent_s_own_files(tmp_path: Path) -> None:
    import subprocess

    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    (tmp_path / "work.txt").write_text("before\n")
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([*git, *argv], cwd=tmp_path, check=True)
    (tmp_path / "work.txt").write_text("after\n")
    (tmp_path / "new.txt").write_text("new\n")
    # aider's histories (the chat's holds its command line) and cache; ptysup's folder.
    for own in (".aider.chat.history.md", ".aider.input.history", ".aider.tags.cache.v4/c.db"):
        (tmp_path / own).parent.mkdir(exist_ok=True)
        (tmp_path / own).write_text("aider's\n")
    (tmp_path / ".ptysup" / "runs").mkdir(parents=True)
    (tmp_path / ".ptysup" / "runs" / "x").write_text("ptysup's\n")
    patch = ci.work_diff(tmp_path).decode()
    files = re.findall(r"^diff --git a/(\S+)", patch, re.M)
    assert files == ["new.txt", "work.txt"]
