"""Shell completion: subcommand names first, then the chosen subcommand's own options,
values and paths, as `eval "$(ptysup completion bash)"` asks for them."""

from __future__ import annotations

import re

import pytest

from ptysup.argspec import ArgSpec
from ptysup.cli.commandline import main
from ptysup.cli.completion import spec_of
from ptysup.cli.options import SUBCOMMANDS

RUN_ONLY = {"--plan", "--max-iter"}
# Completion imports a subcommand's module, which binds sys.stdout as a default argument:
# imported here, at collection, never under one test's captured output.
SPECS = {name: spec_of(name) for name in SUBCOMMANDS}


def completions(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    """What ptysup answers a shell's completion script that asks with `env`."""
    for name, value in env.items():  # completion sets them in os.environ: undone after
        monkeypatch.setenv(name, value)
    assert main([], env) == 0
    return capsys.readouterr().out


def answers(
    line: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> set[tuple[str, str]]:
    """(type, value) of each completion bash's script gets for `line`, its last word the
    one being completed."""
    env = {
        "_PTYSUP_COMPLETE": "bash_complete",
        "COMP_WORDS": line,
        "COMP_CWORD": str(len(line.split(" ")) - 1),
    }
    pairs = [row.split(",", 1) for row in completions(env, monkeypatch, capsys).splitlines()]
    return {(kind, value) for kind, value in pairs}


def offered(
    line: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> set[str]:
    return {value for kind, value in answers(line, monkeypatch, capsys) if kind == "plain"}


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ptysup ba", {"batch"}),
        ("ptysup re", {"replay", "resume"}),
        ("ptysup ", set(SUBCOMMANDS)),
        ("ptysup help d", {"doctor"}),
        ("ptysup completion ", {"bash", "zsh", "fish"}),
    ],
)
def test_subcommand_names_complete_at_the_first_word(
    line: str,
    expected: set[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert offered(line, monkeypatch, capsys) == expected


@pytest.mark.parametrize(
    ("line", "wanted", "unwanted"),
    [
        ("ptysup --max-i", {"--max-iter"}, {"batch"}),
        ("ptysup fix --pl", {"--plan"}, set()),
        ("ptysup -- replay --max-i", {"--max-iter"}, set()),  # a task named like a subcommand
        ("ptysup serve --", {"--host", "--port"}, RUN_ONLY),
        ("ptysup runs --", {"--json", "--watch", "--count"}, RUN_ONLY | {"--dry-run"}),
        ("ptysup runs prune --", {"--dry-run"}, RUN_ONLY | {"--json"}),
        ("ptysup attach --", {"--rw"}, RUN_ONLY),
        ("ptysup batch --j", {"--jobs"}, set()),
        # A batch passes run options on to each task, except paths each run keeps its own.
        ("ptysup batch --", {"--isolate", "--max-iter"}, {"--log-file", "--record"}),
        ("ptysup batch tasks.yaml --isolate ", {"worktree", "none"}, set()),
        ("ptysup batch plan tasks.yaml --format ", {"json", "github-matrix"}, set()),
        ("ptysup batch run tasks.yaml --", {"--index", "--id", "--max-iter"}, {"--jobs"}),
        # A resumed run keeps its files and plan: they are not offered.
        ("ptysup resume --", {"--say", "--max-iter"}, {"--plan", "--log-file", "--config"}),
        ("ptysup doctor --p", {"--probe", "--plan"}, set()),
    ],
)
def test_after_a_subcommand_its_own_options_complete(
    line: str,
    wanted: set[str],
    unwanted: set[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    got = offered(line, monkeypatch, capsys)
    assert wanted <= got
    assert not got & unwanted


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ptysup check ", {("file", "")}),
        ("ptysup replay ", {("file", "")}),
        ("ptysup serve ", {("dir", "")}),
        ("ptysup batch t", {("file", "t")}),
        ("ptysup batch ", {("file", ""), ("plain", "plan"), ("plain", "run")}),
        ("ptysup batch plan ", {("file", "")}),
    ],
)
def test_paths_complete_where_a_subcommand_takes_one(
    line: str,
    expected: set[tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert answers(line, monkeypatch, capsys) == expected


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_get_a_subcommands_options(
    shell: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # zsh's script sends the words as bash's does; fish's sends the word being completed.
    env = {
        "_PTYSUP_COMPLETE": f"{shell}_complete",
        "COMP_WORDS": "ptysup serve --",
        "COMP_CWORD": "2" if shell == "zsh" else "--",
    }
    out = completions(env, monkeypatch, capsys)
    assert "--host" in out and "--max-iter" not in out


def _declared(spec: ArgSpec) -> set[str]:
    own = {*spec.flags, *spec.options}
    return own.union(*(_declared(sub) for sub in spec.subcommands.values()))


@pytest.mark.parametrize("name", [n for n in SUBCOMMANDS if n != "help"])
def test_every_option_a_subcommands_help_names_completes(
    name: str, capfd: pytest.CaptureFixture[str]
) -> None:
    # Its parser is hand-written: this keeps the declared ARGS next to it up to date.
    assert main([name, "--help"], {}) == 0
    named = set(re.findall(r"(?<![\w-])--?[a-z][\w-]*", capfd.readouterr().out))
    assert named - {"-h", "--help"} <= _declared(SPECS[name])
