"""The checks (--verify, a plan step's verify) over the run: before any change (the
baseline), their last runs, and which went from failing to passing or back (the delta).

An event-log sink, fed by `verify_baseline` and `verify`, so a resumed run reads its
earlier events again (`replay`). Pure otherwise: events in, lines out.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ptysup.events import Learner, shown

MAX_CHECKS = 10  # checks listed; the rest are counted
MAX_COMMAND = 160  # characters of a command line shown

Key = tuple[str, ...]


@dataclass(frozen=True)
class Result:
    """One run of one check: whether it passed, how it ended, after which decision (None:
    the baseline, before any change)."""

    passed: bool
    how: str  # "passed", "exited 1", "did not finish"
    iteration: int | None = None


def _result(f: Mapping[str, Any], iteration: int | None) -> Result:
    code = f.get("exit_code")
    passed = bool(f.get("passed"))
    how = "passed" if passed else "did not finish" if code is None else f"exited {code}"
    return Result(passed, how, iteration)


def _key(command: Any) -> Key:
    return tuple(str(a) for a in command) if isinstance(command, list) else (str(command),)


class CheckLedger(Learner):
    """Every check's baseline and its runs (an event-log sink)."""

    def __init__(self) -> None:
        self._baseline: dict[Key, Result] = {}
        self._runs: dict[Key, list[Result]] = {}
        self._order: list[Key] = []
        self.baseline_run: bool | None = None  # None: not known yet; False: skipped
        self.cannot_tell: tuple[str, ...] = ()  # gates that passed before any change
        self.tamper_refusals = 0  # [COMPLETE]s the tamper guard refused (a resume's too)

    def learn(self, name: str, f: Mapping[str, Any]) -> None:
        """Take one event in."""
        if name == "verify_baseline":
            self.baseline_run = not f.get("skipped")
            self.cannot_tell = tuple(str(g) for g in f.get("cannot_tell") or ())
            for r in f.get("results") or ():
                if isinstance(r, Mapping):
                    key = self._known(r.get("command"))
                    self._baseline[key] = _result(r, None)
        elif name == "tamper" and f.get("verdict") in ("refused", "escalated"):
            self.tamper_refusals += 1
        elif name == "verify":
            iteration = f.get("iteration")
            runs = self._runs.setdefault(self._known(f.get("command")), [])
            runs.append(_result(f, iteration if isinstance(iteration, int) else None))
            del runs[:-2]  # the last two say what changed

    def _known(self, command: Any) -> Key:
        key = _key(command)
        if key not in self._order:
            self._order.append(key)
        return key

    def delta(self) -> list[str]:
        """The checks whose last run passed where the run before it (or the baseline)
        failed, or the other way round, in words."""
        out = []
        for key in self._order:
            runs = self._runs.get(key, [])
            before = runs[-2] if len(runs) > 1 else self._baseline.get(key)
            if not runs or before is None or before.passed == runs[-1].passed:
                continue
            went = "failing to passing" if runs[-1].passed else "passing to FAILING"
            out.append(f"`{_shown(key)}` went from {went} (since {_when(before)})")
        return out

    def render(self) -> list[str]:
        """The section's lines; empty when the run has no checks."""
        if not self._order:
            return []
        lines = ["Checks (run by ptysup after a [COMPLETE]; done only when they all pass):"]
        for key in self._order[:MAX_CHECKS]:
            lines.append(f"- `{_shown(key)}`: {self._state(key)}")
        if len(self._order) > MAX_CHECKS:
            lines.append(f"… and {len(self._order) - MAX_CHECKS} more")
        changed = self.delta()
        if changed:
            lines.append("Changed at their last run: " + "; ".join(changed))
        if self.cannot_tell:
            lines.append(
                "WARNING: before the agent changed anything these checks already passed ("
                + ", ".join(self.cannot_tell)
                + "): a pass cannot tell done from not done. Judge the work itself: what "
                "changed in the files, and whether it does what the task asks."
            )
        return lines

    def _state(self, key: Key) -> str:
        base = self._baseline.get(key)
        if base is not None:
            start = f"before any change {base.how}"
        elif self.baseline_run is False:
            start = "before any change not run (--no-verify-baseline)"
        else:
            start = "before any change not known"
        runs = self._runs.get(key)
        if not runs:
            return f"{start}; not run since"
        last = runs[-1]
        return f"{start}; at its last run ({_when(last)}) {last.how}"


def _when(result: Result) -> str:
    return "before any change" if result.iteration is None else f"decision #{result.iteration}"


def _shown(key: Key) -> str:
    return shown(shlex.join(key), MAX_COMMAND)
