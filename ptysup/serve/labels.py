"""How the page names a run's state: in the words `ptysup runs` uses, and with a tone.

A run that has ended is in state `done` or `failed`, but `failed` covers every outcome
but complete: a run the person stopped on purpose (the escape key's stop, exit 8), one
whose budget ran out, one handed to a person, one stopped by a signal and ready to be
resumed. The page calls an ended run by its outcome (the word in `ptysup runs`' OUTCOME
column: stopped, budget, escalated, abort…), and a live one by its state (working,
needs_input…, as in its STATE column); the tone says how to read it, and colours it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ptysup.exitcodes import Outcome
from ptysup.store import runstate

OK = "ok"  # finished its task
LIVE = "live"  # working on it
ATTENTION = "attention"  # waits for a person
HALTED = "halted"  # stopped before the end, by a person or a signal: resumable, no failure
LIMIT = "limit"  # a budget ran out, or the supervisor handed it to a person
FAILED = "failed"  # failed, crashed, or cannot be read

UNREADABLE = "unreadable"  # a row's state when the run's files cannot be read
READING = "reading"  # a row's state while its files are read for the first time

TONES: Mapping[str, str] = {
    Outcome.COMPLETE.value: OK,
    Outcome.STOPPED.value: HALTED,
    Outcome.SIGNAL.value: HALTED,
    Outcome.BUDGET.value: LIMIT,
    Outcome.TIME.value: LIMIT,
    Outcome.COST.value: LIMIT,
    Outcome.ESCALATED.value: LIMIT,
    Outcome.ABORT.value: FAILED,
    Outcome.API_ERROR.value: FAILED,
    Outcome.AGENT_EXITED.value: FAILED,
    Outcome.SUPERVISOR_FAILED.value: FAILED,
    Outcome.USAGE.value: FAILED,
    Outcome.ERROR.value: FAILED,
    Outcome.LOG_ERROR.value: FAILED,
    runstate.WORKING: LIVE,
    runstate.DECIDING: LIVE,
    runstate.API_WAIT: LIVE,
    runstate.NEEDS_INPUT: ATTENTION,
    runstate.CRASHED: FAILED,
    UNREADABLE: FAILED,
    READING: LIVE,
}


def label(row: Mapping[str, Any]) -> dict[str, str]:
    """The row's `label` (what the page calls its state) and `tone`; a state or outcome
    this version does not know reads as itself, in no colour of alarm."""
    state, outcome = str(row.get("state") or ""), row.get("outcome")
    ended = state in runstate.ENDED and isinstance(outcome, str) and bool(outcome)
    word = str(outcome) if ended else state
    return {"label": word, "tone": TONES.get(word, HALTED)}
