"""`ptysup judge-bench [CASES] --supervisor-cmd CMD`: replays labelled turn ends through the
run's decision path with that judge and scores it; `ptysup judge-bench save RUN` makes a
case of a run's own turn end."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from ptysup.argspec import ArgSpec
from ptysup.exitcodes import ExitCode
from ptysup.judgebench.cases import KINDS, LABELS, Case, CaseError, case_files, load, write
from ptysup.judgebench.panels import Commands, command_panels, second_opinion
from ptysup.judgebench.replay import ERROR, JudgeCannotWork, Panels, Result, replay
from ptysup.judgebench.save import SaveError, make_case
from ptysup.judgebench.score import report, write_json, write_table
from ptysup.values import command_argv

FORMATS = ("table", "json")
USAGE = (
    "usage: ptysup judge-bench [CASES...] [--supervisor-cmd CMD] [--second-opinion CMD] "
    "[--kind KIND] [--format table|json]\n"
    "         replays labelled turn ends (case files, or folders of them; default: the "
    "bundled corpus)\n"
    "         through the decision path with that judge, and scores it (exit 0; 5 when "
    "a decision failed)\n"
    "       ptysup judge-bench save RUN [--iteration N] --label done|not_done|person "
    "--kind KIND [--why TEXT] [--out FILE]\n"
    "         makes a case of a run's turn end (default: its last decision)\n"
    f"       kinds: {', '.join(KINDS)}"
)
SAVE_ARGS = ArgSpec(
    options={
        "--iteration": "text",
        "--label": LABELS,
        "--kind": tuple(KINDS),
        "--why": "text",
        "--out": "file",
    },
    args=("file",),
)
ARGS = ArgSpec(
    options={
        "--supervisor-cmd": "text",
        "--second-opinion": "text",
        "--kind": tuple(KINDS),
        "--format": FORMATS,
    },
    args=("file",),
    subcommands={"save": SAVE_ARGS},
)
CASES_DIR = Path(".ptysup") / "judge-cases"  # where `save` writes by default


class _Usage(Exception):
    """A bad argument: one line, exit 2."""


@dataclass
class _Options:
    """What a command line of judge-bench asks."""

    words: list[str] = field(default_factory=list)  # positional arguments
    values: dict[str, list[str]] = field(default_factory=dict)

    def one(self, option: str, default: str | None = None) -> str | None:
        given = self.values.get(option)
        if given and len(given) > 1:
            raise _Usage(f"{option} is given {len(given)} times")
        return given[0] if given else default


def _parse(args: Sequence[str], spec: ArgSpec, repeatable: tuple[str, ...] = ()) -> _Options:
    """ARGS as SPEC declares them: `--opt VALUE`, `--opt=VALUE`, words; `--` ends options."""
    parsed = _Options()
    words = iter(args)
    for word in words:
        if word == "--":
            parsed.words += list(words)
            break
        option, eq, value = word.partition("=")
        if option not in spec.options:
            parsed.words.append(word)  # an unknown option was refused before main()
            continue
        if not eq:
            value = next(words, None)  # type: ignore[assignment]
            if value is None:
                raise _Usage(f"{option} needs a value")
        choices = spec.options[option]
        if isinstance(choices, tuple) and value not in choices:
            raise _Usage(f"{option} must be one of {', '.join(choices)}, not {value!r}")
        parsed.values.setdefault(option, []).append(value)
    for option, given in parsed.values.items():
        if len(given) > 1 and option not in repeatable:
            raise _Usage(f"{option} is given {len(given)} times")
    return parsed


def main(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Entry point of `ptysup judge-bench`."""
    out, err = out or sys.stdout, err or sys.stderr
    environ = dict(os.environ if env is None else env)
    if "-h" in args or "--help" in args:
        print(USAGE, file=out)
        return 0
    try:
        if args[:1] == ["save"]:
            return _save(_parse(args[1:], SAVE_ARGS), out)
        return _bench(_parse(args, ARGS, repeatable=("--kind",)), environ, out, err)
    except (_Usage, CaseError, SaveError) as exc:
        print(f"ptysup: judge-bench: {exc}", file=err)
        return int(ExitCode.USAGE)


def _bench(options: _Options, env: Mapping[str, str], out: TextIO, err: TextIO) -> int:
    path = env.get("PATH", os.defpath)
    judge = _command(options.one("--supervisor-cmd", "claude -p") or "", "--supervisor-cmd")
    given = options.one("--second-opinion")
    second = second_opinion(_command(given, "--second-opinion") if given else None, judge, path)
    if given is not None and second is None:
        raise _Usage(
            f"--second-opinion auto: no supervisor CLI of another vendor than the judge's "
            f"({judge[0]}) is installed"
        )
    # Bad cases are a usage error (exit 2) whatever the supervisor: they are read first.
    kinds = options.values.get("--kind") or []
    cases = [c for c in _cases(options.words) if not kinds or c.kind in kinds]
    if not cases:
        raise _Usage("no case to replay" + (f" of kind {', '.join(kinds)}" if kinds else ""))
    for role, argv in (("supervisor", judge), ("second opinion", second)):
        if argv is not None and shutil.which(argv[0], path=path) is None:
            print(f"ptysup: judge-bench: {role} command not found: {argv[0]}", file=err)
            return int(ExitCode.SUPERVISOR)
    panels = command_panels(Commands(judge, second), env)
    results: list[Result] = []
    try:
        for n, result in enumerate(_replayed(cases, panels, env), 1):
            results.append(result)
            said = result.error if result.outcome == ERROR else f"{result.seconds:.1f}s"
            print(
                f"ptysup: judge-bench: [{n}/{len(cases)}] {result.case}: {result.outcome} ({said})",
                file=err,
            )
    except JudgeCannotWork as exc:
        print(f"ptysup: judge-bench: {exc}", file=err)
        return int(ExitCode.SUPERVISOR)
    except KeyboardInterrupt:
        print(f"ptysup: judge-bench: interrupted after {len(results)} case(s)", file=err)
        return 130
    shown_judge, shown_second = " ".join(judge), " ".join(second) if second else None
    if options.one("--format", "table") == "json":
        write_json(report(results, shown_judge, shown_second), out)
    else:
        write_table(results, shown_judge, shown_second, out)
    failed = sum(r.outcome == ERROR for r in results)
    return int(ExitCode.SUPERVISOR) if failed else 0


def _replayed(cases: Sequence[Case], panels: Panels, env: Mapping[str, str]) -> Iterator[Result]:
    for case in cases:
        yield replay(case, panels, env)


def _command(text: str, option: str) -> tuple[str, ...]:
    try:
        return command_argv(text)
    except ValueError as exc:
        raise _Usage(f"{option}: {exc}") from None


def _cases(words: Sequence[str]) -> list[Case]:
    """Every case the words name, read before any is replayed (a bad one: exit 2)."""
    return [load(path) for path in case_files([Path(w) for w in words])]


def _save(options: _Options, out: TextIO) -> int:
    if len(options.words) != 1:
        raise _Usage("save takes one RUN (a run id, 'last', a run directory or its events)")
    label, kind = options.one("--label"), options.one("--kind")
    if label is None or kind is None:
        raise _Usage(
            f"save needs --label (done, not_done or person) and --kind ({', '.join(KINDS)})"
        )
    number = options.one("--iteration")
    if number is not None and (not number.isdigit() or int(number) < 1):
        raise _Usage(f"--iteration must be a decision's number (1, 2, …), not {number!r}")
    saved = make_case(
        options.words[0],
        label,
        kind,
        int(number) if number else None,
        options.one("--why", "") or "",
    )
    target = Path(options.one("--out") or CASES_DIR / f"{saved.case.name}.json")
    try:
        write(saved.case, target)
    except OSError as exc:
        raise SaveError(f"cannot write {exc.filename or target}: {exc.strerror or exc}") from None
    for note in saved.notes:
        print(f"ptysup: judge-bench: {note}", file=sys.stderr)
    print(f"saved {target}: decision {saved.case.moment.iteration}, {kind}, {label}", file=out)
    return 0
