"""One case through the run's own decision path: its project rebuilt in a temporary
folder (a git repository of its files before the agent, the checks' baseline and the
start's snapshot taken there as a run takes them, then the agent's changes written), the
run so far replayed into the judge's memory, then `DecisionPath.ask` and `settle` with
the judge (and second opinion) under test. A case without a project replays the evidence
and the checks' verdict the run recorded.
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ptysup.config import RunConfig
from ptysup.events import Event, EventLog
from ptysup.judgebench.cases import PROJECT, RIGHT, Case, Checks, File, placed
from ptysup.run import startstate
from ptysup.run.decision import (
    DecisionPath,
    Evidence,
    Guard,
    Judge,
    PromptSettings,
    SecondOpinion,
    VerdictKind,
)
from ptysup.run.evidence import Journal, RunEvidence
from ptysup.run.gitsnap import GitError
from ptysup.run.tamper import Finding, TamperGuard
from ptysup.run.tamper import Verdict as Tamper
from ptysup.run.verify import Verifier, Verify, VerifyResult
from ptysup.supervisor.decide import ApiErrorNotWaited, SupervisorFailed
from ptysup.supervisor.runner import SupervisorError

OUTCOME = {
    VerdictKind.DONE: "complete",
    VerdictKind.CONTINUE: "continue",
    VerdictKind.REFUSED: "continue",  # the checks or the tamper guard refused the [COMPLETE]
    VerdictKind.ESCALATE: "escalate",
    VerdictKind.ABORT: "abort",
}
ERROR = "error"  # the outcome of a case whose decision could not be made
# Events a run writes at its start: a case with a project takes its own start again.
_START_EVENTS = frozenset({"verify_baseline", "protect"})
CHECK_TIMEOUT_S = 300.0  # the most one of a case's checks may run


class JudgeCannotWork(Exception):
    """The judge fails in a way every case would repeat (authentication, a missing
    model): the bench stops."""


class Panel(Protocol):
    """The judge and second opinion under test, made for one case's project."""

    judge: Judge
    second: SecondOpinion | None
    split: bool  # the judge takes the unchanging part as its system prompt

    def close(self) -> None: ...


# Makes the panel for a case: its project folder (the judges' working directory) and the
# case's event log.
Panels = Callable[[Path, EventLog], Panel]


@dataclass(frozen=True)
class Result:
    """What the decision path made of one case."""

    case: str
    kind: str
    label: str
    outcome: str  # complete, continue, escalate, abort; "error" when it could not decide
    by: str = ""  # who decided: supervisor, verify, tamper, second_opinion
    judge: str = ""  # the judge's own answer (its action)
    second: str | None = None  # the second opinion's, when it was asked
    text: str = ""  # the verdict's text, cut
    seconds: float = 0.0  # the judge's (and second opinion's) time answering
    cost_usd: float = 0.0
    error: str = ""
    checks: Checks = field(
        default_factory=Checks
    )  # what the checks and the tamper guard made of it, if run

    def to_json(self) -> dict[str, Any]:
        """The report's entry."""
        return {
            "case": self.case,
            "kind": self.kind,
            "label": self.label,
            "outcome": self.outcome,
            "right": self.outcome == RIGHT[self.label],
            "by": self.by,
            "judge": self.judge,
            "second_opinion": self.second,
            "text": self.text,
            "seconds": round(self.seconds, 3),
            "cost_usd": round(self.cost_usd, 6),
            "checks": self.checks.result,
            "error": self.error or None,
        }


def replay(case: Case, panels: Panels, env: Mapping[str, str] | None = None) -> Result:
    """The decision path's verdict on `case`, with the judge `panels` makes for it.
    Raises JudgeCannotWork when the judge cannot work at all."""
    environ = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="ptysup-bench-") as tmp:
        root = Path(tmp)
        project = root / "project"
        project.mkdir()
        case = placed(case, project)
        journal = Journal()
        heard = _Heard()
        log = EventLog([*journal.sinks(), heard])
        try:
            evidence, gates, guard = _parts(case, project, root / "run", log, journal, environ)
        except (GitError, OSError, subprocess.SubprocessError) as exc:
            return _failed(case, f"the case's project: {exc}")
        panel = panels(project, log)
        try:
            result = _decide(case, panel, log, journal, evidence, gates, guard)
        finally:
            panel.close()
        checks = checks_from(heard.events, case.moment.iteration)
        # Said with the project's folder as a case writes it: the same wherever it ran.
        tail = checks.output_tail.replace(str(project), PROJECT)
        return replace(result, checks=replace(checks, output_tail=tail))


def _decide(
    case: Case,
    panel: Panel,
    log: EventLog,
    journal: Journal,
    evidence: Evidence,
    gates: Sequence[Verify],
    guard: Guard | None,
) -> Result:
    path = DecisionPath(
        panel.judge,
        log,
        PromptSettings(case.task, split=panel.split),
        evidence=evidence,
        gates=lambda: gates,
        guard=guard,
        second=panel.second,
        tampered=journal.checks.tamper_refusals,
    )
    try:
        asked = path.ask(case.turn, case.moment, case.notes)
        verdict = path.settle(asked)
    except SupervisorFailed as exc:
        cause = exc.__cause__
        if isinstance(cause, SupervisorError) and cause.fatal:
            raise JudgeCannotWork(str(exc)) from exc
        return _failed(case, str(exc))
    except ApiErrorNotWaited as exc:
        return _failed(case, str(exc))
    answer = asked.decided.answer
    second = verdict.second
    return Result(
        case.name,
        case.kind,
        case.label,
        OUTCOME[verdict.kind],
        by=verdict.by,
        judge=asked.decided.decision.action.value,
        second=None if second is None else second.decision.action.value,
        text=_cut(verdict.text),
        seconds=answer.duration_s + (second.answer.duration_s if second else 0.0),
        cost_usd=(answer.cost_usd or 0.0) + verdict.cost_usd,
    )


class _Heard:
    """An event sink that keeps what the checks and the tamper guard said."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def write(self, event: Event) -> None:
        if event.event in ("verify", "tamper"):
            self.events.append({"event": event.event, **event.fields})

    def close(self) -> None:
        pass


def checks_from(events: Sequence[Mapping[str, Any]], iteration: int) -> Checks:
    """What the checks and the tamper guard made of decision ITERATION's [COMPLETE], from
    the `verify` and `tamper` events after it ("none" when they did not run)."""
    mine = [e for e in events if e.get("iteration") == iteration]
    for t in mine:
        if t.get("event") == "tamper" and t.get("verdict") in ("refused", "escalated"):
            return Checks(
                "tampered",
                tuple(str(a) for a in t.get("command") or ()),
                _code(t.get("exit_code")),
                str(t.get("output_tail") or ""),
                tuple(str(f) for f in t.get("files") or ()),
            )
    runs = [e for e in mine if e.get("event") == "verify"]
    for v in runs:
        if not v.get("passed"):
            command = tuple(str(a) for a in v.get("command") or ())
            return Checks(
                "fail", command, _code(v.get("exit_code")), str(v.get("output_tail") or "")
            )
    return Checks("pass") if runs else Checks("none")


def _code(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _failed(case: Case, why: str) -> Result:
    return Result(case.name, case.kind, case.label, ERROR, error=_cut(why))


def _cut(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _parts(
    case: Case,
    project: Path,
    run_dir: Path,
    log: EventLog,
    journal: Journal,
    env: dict[str, str],
) -> tuple[Evidence, Sequence[Verify], Guard | None]:
    """The evidence, the checks and the tamper guard of the case's decision."""
    if case.start is None:  # as the run recorded them
        journal.replay(case.events)
        return _Said(case.evidence), _recorded_gates(case), _recorded_guard(case.checks)
    env = {**env, "PWD": str(project)}
    make = functools.partial(Verifier, cwd=str(project), env=env, timeout=CHECK_TIMEOUT_S)
    _write(project, case.start)
    _age(project, case.start, 3600.0)
    _commit(project)
    config = RunConfig(case.task, verify=case.verify, protect=case.protect, cwd=project)
    start = startstate.prepare(config, log, run_dir, resumed=False, make=make).start
    journal.replay([e for e in case.events if e.get("event") not in _START_EVENTS])
    _write(project, case.end)
    _age(project, case.end, 1800.0)  # the agent's changes came before the turn end
    guard = None
    if start.tree is not None and start.snapshot is not None and start.protected:

        def checks_in(commands: Sequence[tuple[str, ...]], folder: Path) -> Verify:
            here = {**env, "PWD": str(folder)}
            return Verifier(commands, cwd=str(folder), env=here, timeout=CHECK_TIMEOUT_S)

        guard = TamperGuard(start.tree, start.snapshot, start.protected, start.cwd, checks_in)
    gates = [make(case.verify)] if case.verify else []
    return RunEvidence(journal, start), gates, guard


def _write(project: Path, files: Mapping[str, File | None]) -> None:
    """Write (or, for None, delete) each file under `project`."""
    for name, f in files.items():
        target = project / name
        if target.is_symlink() or target.is_file():
            target.unlink()
        if f is None:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.link:
            target.symlink_to(os.fsdecode(f.data))
            continue
        target.write_bytes(f.data)
        if f.executable:
            target.chmod(0o755)


def _age(project: Path, files: Mapping[str, File | None], seconds: float) -> None:
    """Date `files` back. In a run, the start, the agent's changes and the tamper guard's
    copy of the originals are seconds apart at least; a replay writes them within the same
    second, where a cache that trusts a file's mtime and size (Python's bytecode: `a - b`
    and `a + b` are the same size) would run the code it cached from the other version."""
    then = time.time() - seconds
    for name, f in files.items():
        if f is not None:
            os.utime(project / name, (then, then), follow_symlinks=False)


def _commit(project: Path) -> None:
    """The project as a new git repository, its files committed: the start of the run."""
    identity = ("-c", "user.name=ptysup", "-c", "user.email=judge-bench@ptysup.invalid")
    for args in (
        ("init", "-q"),
        ("add", "-A"),
        (*identity, "-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", "start"),
    ):
        subprocess.run(("git", *args), cwd=project, check=True, capture_output=True, timeout=60)


class _Said:
    """The evidence as the run recorded it."""

    def __init__(self, text: str) -> None:
        self._text = text

    def gather(self) -> str:
        return self._text


class _Recorded:
    """A check whose verdict the run recorded: it passes, or fails as it failed then."""

    def __init__(self, commands: Sequence[tuple[str, ...]], failed: VerifyResult | None) -> None:
        self.commands = list(commands)
        self._failed = failed

    def run(self, deadline: float | None = None) -> list[VerifyResult]:
        if self._failed is not None:
            return [self._failed]
        return [VerifyResult(c, 0, "(as recorded)", 0.0) for c in self.commands]


def _failure(checks: Checks) -> VerifyResult:
    return VerifyResult(checks.command or ("?",), checks.exit_code, checks.output_tail, 0.0)


def _recorded_gates(case: Case) -> list[Verify]:
    c = case.checks
    if c.result == "none" or not case.verify:
        return []
    return [_Recorded(case.verify, _failure(c) if c.result == "fail" else None)]


class _RecordedGuard:
    def __init__(self, finding: Finding) -> None:
        self._finding = finding

    def check(self, commands: Sequence[tuple[str, ...]], deadline: float | None = None) -> Finding:
        return self._finding


def _recorded_guard(checks: Checks) -> Guard | None:
    if checks.result != "tampered":
        return None
    return _RecordedGuard(Finding(checks.files, Tamper.FAILED, _failure(checks)))
