"""Every file a person hands ptysup is read within bounds: a FIFO or a device is refused at
once (never read, never waited on), a file over 1 MiB is refused, YAML nesting, aliases
and their expansion are bounded, and no key is given twice. One `ptysup:` line, exit 2.

Each case runs the real command in a child with 1 GiB of address space and a time-out,
so a regression fails the test instead of eating the machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ptysup import userfile
from tests.helpers import ptysup_argv

MEMORY = 1024**3


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _ptysup(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The agent would leave `started` behind: nothing may start on bad input.
    return subprocess.run(
        ptysup_argv(*args),
        cwd=cwd,
        env={"PATH": os.environ["PATH"], "HOME": str(cwd)},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limit_memory,
    )


def _refused(result: subprocess.CompletedProcess[str], *words: str) -> str:
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ptysup: "), result.stderr
    assert result.returncode == 2
    for word in words:
        assert word in lines[0]
    return lines[0]


AGENT = ["--agent-cmd", "touch started", "--supervisor-cmd", "true"]

# How each kind of file reaches ptysup: (cwd, path) -> arguments.
KINDS: dict[str, Callable[[Path, Path], list[str]]] = {
    "config": lambda cwd, p: ["--config", str(p), *AGENT, "a task"],
    "plan": lambda cwd, p: ["--plan", str(p), *AGENT],
    "check": lambda cwd, p: ["check", str(p)],
    "batch": lambda cwd, p: ["batch", "plan", str(p)],
    "task-file": lambda cwd, p: ["--task-file", str(p), *AGENT],
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_device_is_refused_not_read(tmp_path: Path, kind: str) -> None:
    _refused(_ptysup(tmp_path, *KINDS[kind](tmp_path, Path("/dev/zero"))), "a device")
    assert not (tmp_path / "started").exists()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path, kind: str) -> None:
    fifo = tmp_path / "input.yaml"
    os.mkfifo(fifo)
    _refused(_ptysup(tmp_path, *KINDS[kind](tmp_path, fifo)), "a FIFO")


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_file_over_the_limit_is_refused(tmp_path: Path, kind: str) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * (userfile.MAX_BYTES // 10 + 1))
    _refused(_ptysup(tmp_path, *KINDS[kind](tmp_path, big)), "1 MiB")


YAML_KINDS = ["config", "plan", "check", "batch"]


@pytest.mark.parametrize("kind", YAML_KINDS)
def test_yaml_nested_50000_deep_is_refused_with_its_line(tmp_path: Path, kind: str) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("verify: " + "[" * 50_000 + "]" * 50_000 + "\n")
    _refused(_ptysup(tmp_path, *KINDS[kind](tmp_path, deep)), f"{deep}:1:", "nested more than")


def _bomb(levels: int = 9, width: int = 9) -> str:
    """The "billion laughs": each level an alias list of the one before."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + f"\nverify: *a{levels}\n"


@pytest.mark.parametrize("kind", YAML_KINDS)
def test_an_alias_bomb_is_refused(tmp_path: Path, kind: str) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_bomb())
    _refused(_ptysup(tmp_path, *KINDS[kind](tmp_path, bomb)), str(bomb), "aliases expand")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: &a [*a]\n", ":1: a YAML alias is inside its own anchor"),
        (
            "".join(f"k{i}: &x{i} [1]\n" for i in range(60)) + "v: [" + "*x1, " * 101 + "]\n",
            ":61: more than 100 YAML aliases",
        ),
    ],
)
def test_alias_loops_and_too_many_aliases_are_refused(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    _refused(_ptysup(tmp_path, "check", str(path)), f"{path}{problem}")


def test_a_deep_toml_config_is_refused(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.ptysup]\nverify = " + "[" * 50_000 + "]" * 50_000 + "\n")
    _refused(_ptysup(tmp_path, *AGENT, "a task"), str(pyproject), "nested too deep")


@pytest.mark.parametrize(
    ("kind", "text", "line"),
    [
        ("config", "max-iter: 3\nmax_iter: 4\n", 2),
        ("plan", "max_iter: 3\nsteps: [{do: x}]\nmax-iter: 4\n", 3),
        ("check", "steps:\n  - do: x\n    max-iter: 1\n    max_iter: 2\n", 4),
        ("batch", "tasks: [{id: a, task: x}]\nmax-iter: 1\nmax_iter: 2\n", 3),
        ("config", "verify: a\nverify: b\n", 2),
    ],
)
def test_a_key_given_twice_is_refused_with_both_lines(
    tmp_path: Path, kind: str, text: str, line: int
) -> None:
    path = tmp_path / "file.yaml"
    path.write_text(text)
    line_text = _refused(_ptysup(tmp_path, *KINDS[kind](tmp_path, path)), f"{path}:{line}:")
    assert "given twice: first at line" in line_text
    assert not (tmp_path / "started").exists()


@pytest.mark.parametrize("kind", YAML_KINDS)
@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("!!python/object:os.system 1", ("!!python/object:os.system", "not supported")),
        ("!custom 1", ("!custom", "not supported")),
        ("!!set {a}", ("!!set", "not supported")),
        ("!!binary aGVsbG8=", ("!!binary", "not supported")),
    ],
    ids=["python", "custom", "set", "binary"],
)
def test_a_yaml_tag_beyond_plain_values_is_refused_with_its_line(
    tmp_path: Path, kind: str, value: str, words: tuple[str, ...]
) -> None:
    path = tmp_path / "file.yaml"
    body = {"config": "max-iter: {v}\n", "batch": "tasks: [{{id: a, task: x}}]\nmax-iter: {v}\n"}
    path.write_text(body.get(kind, "steps:\n  - do: x\nmax-iter: {v}\n").format(v=value))
    line = {"config": 1, "batch": 2}.get(kind, 3)
    _refused(_ptysup(tmp_path, *KINDS[kind](tmp_path, path)), f"{path}:{line}:", *words)
    assert not (tmp_path / "started").exists()


@pytest.mark.parametrize("kind", YAML_KINDS)
def test_a_key_that_is_no_text_is_refused_with_its_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "file.yaml"
    path.write_text("? [a, b]\n: 1\n")
    _refused(_ptysup(tmp_path, *KINDS[kind](tmp_path, path)), f"{path}:1:", "a key must be text")


def test_a_date_is_text_where_ptysup_wants_a_value(tmp_path: Path) -> None:
    # YAML 1.1 reads 2026-01-01 as a date, which no option takes: it stays the text it is.
    path = tmp_path / "file.yaml"
    path.write_text("max-cost: 2026-01-01\n")
    line = _refused(_ptysup(tmp_path, *KINDS["config"](tmp_path, path)), f"{path}:1:")
    assert "max-cost" in line and "2026-01-01" in line
    path.write_text("steps:\n  - do: 2026-01-01\n")
    checked = _ptysup(tmp_path, "check", str(path))
    assert (checked.returncode, checked.stderr) == (0, ""), checked.stderr


def test_a_toml_key_in_both_spellings_is_refused(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[project]\nname = 'x'\n\n[tool.ptysup]\nmax-iter = 3\nmax_iter = 4\n")
    _refused(_ptysup(tmp_path, *AGENT, "a task"), f"{pyproject}:6:", "given twice")


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("max-cost = 2026-01-01", ("max-cost: expected a number, not a date",)),
        ("agent-cmd = 10:00:00", ("agent-cmd: expected text, not a time", "quote it")),
        (
            "verify = 2026-01-01T10:00:00",
            ("verify: expected text or a list of text, not a datetime",),
        ),
    ],
)
def test_a_toml_date_is_refused_where_an_option_wants_another_type(
    tmp_path: Path, line: str, words: tuple[str, ...]
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"[tool.ptysup]\n{line}\n")
    _refused(_ptysup(tmp_path, *AGENT, "a task"), f"{pyproject}:2:", *words)
    assert not (tmp_path / "started").exists()


def test_the_task_on_standard_input_is_bounded(tmp_path: Path) -> None:
    result = subprocess.run(
        ptysup_argv("--task-file", "-", *AGENT),
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        input="x" * (userfile.MAX_BYTES + 10),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limit_memory,
    )
    _refused(result, "--task-file -", "1 MiB")


@pytest.mark.parametrize("kind", YAML_KINDS)
def test_a_nul_byte_in_yaml_is_one_line_with_its_line(tmp_path: Path, kind: str) -> None:
    # It was a traceback: the reader refused it as the loader was made, outside the try.
    path = tmp_path / "file.yaml"
    path.write_text("max-iter: 3\nverify: make \x00test\n")
    _refused(_ptysup(tmp_path, *KINDS[kind](tmp_path, path)), f"{path}:2:", "#x0000")
    assert not (tmp_path / "started").exists()


@pytest.mark.parametrize("kind", YAML_KINDS)
def test_a_megabyte_of_values_is_refused_before_it_is_composed(tmp_path: Path, kind: str) -> None:
    # 524,000 values in 1 MiB cost 21 s of CPU and 390 MB before the refusal.
    path = tmp_path / "file.yaml"
    path.write_text("[" + ",".join(["1"] * 524_000) + "]\n")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    _refused(_ptysup(tmp_path, *KINDS[kind](tmp_path, path)), f"{path}:1:", "more than 100000")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert cpu < 5.0, cpu  # ptysup's start included; refused in a fraction of a second
