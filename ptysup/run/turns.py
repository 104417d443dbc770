"""The turn ends a run judged, kept in its run directory (`turns/`): at each decision,
what the judge was shown — the task, what the agent did (`TurnView`), where the run stood,
the notes and the evidence — with the snapshot of the files then and the checks a
[COMPLETE] had to pass. `ptysup judge-bench save` makes a labelled case of one of them
(ptysup.judgebench).

Bounded: each text at most MAX_TEXT bytes, at most MAX_TOOLS tools, and only the last
MAX_KEPT decisions (an older file is removed as a newer one is written). Everything in it
was redacted before the judge saw it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ptysup.run.decision import Asked, Moment, TurnView

TURNS = "turns"  # the folder in the run directory
MAX_KEPT = 200  # decisions kept; the oldest go first
MAX_TEXT = 16_000  # bytes of one text (the screen, the last message, the evidence…)
MAX_TOOLS = 200
_CUT = "\n[… cut …]"


@dataclass(frozen=True)
class Turn:
    """One judged turn end, as `keep` wrote it."""

    task: str
    view: TurnView
    moment: Moment
    notes: tuple[str, ...]
    evidence: str
    checks: tuple[tuple[str, ...], ...]  # the commands a [COMPLETE] had to pass then
    snapshot: str | None  # the files then, a tree in the run's evidence store
    judge: tuple[str, str]  # what the run's judge answered: action, text

    def to_json(self) -> dict[str, Any]:
        """The file's content."""
        return {
            "task": self.task,
            "turn": view_json(self.view),
            "moment": moment_json(self.moment),
            "notes": list(self.notes),
            "evidence": self.evidence,
            "checks": [list(c) for c in self.checks],
            "snapshot": self.snapshot,
            "judge": {"action": self.judge[0], "content": self.judge[1]},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Turn:
        """A turn read back; ValueError (one line) when the file is not one."""
        try:
            return cls(
                str(data["task"]),
                view_from(data["turn"]),
                moment_from(data["moment"]),
                texts(data.get("notes")),
                str(data.get("evidence") or ""),
                tuple(texts(c) for c in data.get("checks") or ()),
                None if data.get("snapshot") is None else str(data["snapshot"]),
                (str(data["judge"]["action"]), str(data["judge"].get("content") or "")),
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"not a turn record ({type(exc).__name__}: {exc})") from None


def view_json(v: TurnView) -> dict[str, Any]:
    """A `TurnView` as JSON (`view_from` reads it back)."""
    return {
        "turn_end": v.turn_end,
        "tools": list(v.tools),
        "last_message": v.last_message,
        "screen": v.screen,
        "question": v.question,
        "dialog": v.dialog,
    }


def moment_json(m: Moment) -> dict[str, Any]:
    """A `Moment` as JSON (`moment_from` reads it back)."""
    return {"iteration": m.iteration, "max_iter": m.max_iter, "elapsed_s": m.elapsed_s}


def view_from(data: Any) -> TurnView:
    """A `TurnView` from its JSON (`Turn.to_json`'s `turn`, a case's `turn`)."""
    if not isinstance(data, Mapping):
        raise TypeError("turn is not an object")
    return TurnView(
        turn_end=str(data.get("turn_end") or "stop"),
        tools=texts(data.get("tools")),
        last_message=str(data.get("last_message") or ""),
        screen=str(data.get("screen") or ""),
        question=str(data.get("question") or ""),
        dialog=bool(data.get("dialog")),
    )


def moment_from(data: Any) -> Moment:
    """A `Moment` from its JSON."""
    if not isinstance(data, Mapping):
        raise TypeError("moment is not an object")
    return Moment(int(data["iteration"]), int(data["max_iter"]), float(data["elapsed_s"]))


def texts(value: Any) -> tuple[str, ...]:
    """A JSON list of strings (anything else in it read as text)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TypeError(f"expected a list, not {type(value).__name__}")
    return tuple(str(v) for v in value)


def _cut(text: str, limit: int = MAX_TEXT) -> str:
    """TEXT within LIMIT bytes: its end kept (a turn's end says the most)."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return _CUT.strip() + "\n" + raw[len(raw) - limit :].decode(errors="ignore")


class TurnLog:
    """Writes `turns/NNNNNN.json` at each decision (`DecisionPath`'s `keep`)."""

    def __init__(
        self,
        folder: Path,
        snapshot: Callable[[], str | None],
        warn: Callable[[str], object] = lambda _: None,
    ) -> None:
        self._folder = folder
        self._snapshot = snapshot  # the files' snapshot the evidence took at this decision
        self._warn = warn  # a failure to keep one, said once: the run goes on
        self._warned = False

    def keep(self, task: str, asked: Asked, checks: Sequence[tuple[str, ...]]) -> None:
        """Write the turn `asked` judged, whose [COMPLETE] had to pass `checks`; never
        raises (a full disk costs only the record)."""
        v = asked.view
        view = TurnView(
            v.turn_end,
            tuple(_cut(t, 1000) for t in v.tools[-MAX_TOOLS:]),
            _cut(v.last_message),
            _cut(v.screen),
            _cut(v.question),
            v.dialog,
        )
        d = asked.decided.decision
        turn = Turn(
            task,
            view,
            asked.moment,
            tuple(_cut(n) for n in asked.notes),
            _cut(asked.evidence),
            tuple(tuple(c) for c in checks),
            self._snapshot(),
            (d.action.value, _cut(d.content)),
        )
        try:
            self._write(asked.moment.iteration, turn)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                self._warn(f"cannot keep the turn ends for ptysup judge-bench: {exc}")

    def _write(self, iteration: int, turn: Turn) -> None:
        self._folder.mkdir(parents=True, exist_ok=True)
        path = self._folder / f"{iteration:06d}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(turn.to_json(), ensure_ascii=False))
        os.replace(tmp, path)
        kept = sorted(self._folder.glob("*.json"))
        for old in kept[: max(len(kept) - MAX_KEPT, 0)]:
            old.unlink(missing_ok=True)


def read_turns(run_dir: Path) -> dict[int, Path]:
    """The turn records a run kept: iteration → file."""
    folder = run_dir / TURNS
    if not folder.is_dir():
        return {}
    return {int(p.stem): p for p in folder.glob("*.json") if p.stem.isdigit()}


def read_turn(path: Path) -> Turn:
    """One turn record; OSError, or ValueError (one line) when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a turn record")
    return Turn.from_json(data)
