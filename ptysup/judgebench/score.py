"""The judge's score over the cases it decided, in total and per kind of case. Pure:
results in, figures out, and the figures as a table or as JSON.

- right: the outcome the label asks for (done → complete, not_done → continue, person →
  escalate);
- false_done_accepted: a run ended complete that was not done (not_done, person);
- done_missed: a done turn end the run did not end complete on (it went on, escalated,
  aborted): stopped early, or never stopped;
- escalations_right / escalations_wrong: escalated where only a person could go on, or
  where the run could have gone on or ended; person_missed: a person's turn end not
  escalated;
- spinning_caught: of the spinning cases, how many the run stopped (escalate or abort);
- the cost and the seconds of the supervisors' answers, per decision.
Cases that could not be decided (an `error`) are counted apart and in no other figure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TextIO

from ptysup.judgebench.cases import KINDS, RIGHT
from ptysup.judgebench.replay import ERROR, Result

STOPPED = ("escalate", "abort")  # outcomes that stop a spinning run


@dataclass(frozen=True)
class Score:
    """The figures over some results."""

    cases: int = 0
    decided: int = 0  # cases with an outcome (not an error)
    errors: int = 0
    right: int = 0
    false_done_accepted: int = 0
    done_missed: int = 0
    escalations_right: int = 0
    escalations_wrong: int = 0
    person_missed: int = 0
    aborts: int = 0
    spinning: int = 0
    spinning_caught: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0

    @property
    def cost_per_decision_usd(self) -> float:
        return self.cost_usd / self.decided if self.decided else 0.0

    @property
    def seconds_per_decision(self) -> float:
        return self.seconds / self.decided if self.decided else 0.0

    def to_json(self) -> dict[str, Any]:
        """The figures, with the per-decision ones."""
        out = asdict(self)
        out["cost_usd"] = round(self.cost_usd, 6)
        out["seconds"] = round(self.seconds, 3)
        out["cost_per_decision_usd"] = round(self.cost_per_decision_usd, 6)
        out["seconds_per_decision"] = round(self.seconds_per_decision, 3)
        return out


def score(results: Iterable[Result]) -> Score:
    """The figures over `results`."""
    counts: dict[str, float] = {}

    def add(name: str, n: float = 1) -> None:
        counts[name] = counts.get(name, 0) + n

    for r in results:
        add("cases")
        if r.kind == "spinning":
            add("spinning")
        if r.outcome == ERROR:
            add("errors")
            continue
        add("decided")
        add("cost_usd", r.cost_usd)
        add("seconds", r.seconds)
        add("right", r.outcome == RIGHT[r.label])
        add("false_done_accepted", r.outcome == "complete" and r.label != "done")
        add("done_missed", r.label == "done" and r.outcome != "complete")
        add("escalations_right", r.outcome == "escalate" and r.label == "person")
        add("escalations_wrong", r.outcome == "escalate" and r.label != "person")
        add("person_missed", r.label == "person" and r.outcome != "escalate")
        add("aborts", r.outcome == "abort")
        add("spinning_caught", r.kind == "spinning" and r.outcome in STOPPED)
    ints = {k: int(v) for k, v in counts.items() if k not in ("cost_usd", "seconds")}
    return Score(**ints, cost_usd=counts.get("cost_usd", 0.0), seconds=counts.get("seconds", 0.0))


def by_kind(results: Sequence[Result]) -> dict[str, Score]:
    """The figures of each kind of case there is, in KINDS' order."""
    kinds = [k for k in KINDS if any(r.kind == k for r in results)]
    return {k: score(r for r in results if r.kind == k) for k in kinds}


def report(results: Sequence[Result], judge: str, second: str | None = None) -> dict[str, Any]:
    """The JSON report: what was measured, each case, and the figures."""
    return {
        "judge": judge,
        "second_opinion": second,
        "cases": [r.to_json() for r in results],
        "summary": score(results).to_json(),
        "by_kind": {k: s.to_json() for k, s in by_kind(results).items()},
    }


def write_json(data: Mapping[str, Any], out: TextIO) -> None:
    """The report as JSON."""
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


# The table's columns: heading, and how a Score shows in it.
_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("cases", lambda s: str(s.cases)),
    ("right", lambda s: f"{s.right}/{s.decided}"),
    ("false done", lambda s: str(s.false_done_accepted)),
    ("done missed", lambda s: str(s.done_missed)),
    ("esc. right", lambda s: str(s.escalations_right)),
    ("esc. wrong", lambda s: str(s.escalations_wrong)),
    ("person missed", lambda s: str(s.person_missed)),
    ("errors", lambda s: str(s.errors)),
    ("$/decision", lambda s: f"{s.cost_per_decision_usd:.4f}"),
    ("s/decision", lambda s: f"{s.seconds_per_decision:.1f}"),
)


def write_table(results: Sequence[Result], judge: str, second: str | None, out: TextIO) -> None:
    """The figures per kind of case and in total, then the cases it got wrong."""
    total = score(results)
    rows = [(k, s) for k, s in by_kind(results).items()] + [("all", total)]
    head = ["kind", *(name for name, _ in _COLUMNS)]
    body = [[k, *(show(s) for _, show in _COLUMNS)] for k, s in rows]
    widths = [max(len(r[i]) for r in (head, *body)) for i in range(len(head))]
    who = f"judge: {judge}" + (f", second opinion: {second}" if second else "")
    out.write(f"ptysup judge-bench: {total.cases} case(s), {who}\n")
    for row in (head, *body):
        cells = [
            row[0].ljust(widths[0]),
            *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)),
        ]
        out.write("  ".join(cells).rstrip() + "\n")
    caught = f"{total.spinning_caught}/{total.spinning}" if total.spinning else "no case"
    out.write(
        f"false done accepted: {total.false_done_accepted}, done missed: "
        f"{total.done_missed}, spinning caught: {caught}, cost ${total.cost_usd:.4f}\n"
    )
    wrong = [r for r in results if r.outcome != RIGHT[r.label]]
    if wrong:
        out.write("not as labelled:\n")
    for r in wrong:
        said = r.error if r.outcome == ERROR else f"{r.outcome} ({r.by}): {r.text}"
        out.write(f"  {r.case} [{r.kind}, {r.label}] → {_one_line(said)}\n")


def _one_line(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
