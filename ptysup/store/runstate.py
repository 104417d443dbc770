"""A run's state, kept current in `.ptysup/runs/<id>/state.json` and read back trustworthily.

The writer (`StateTracker`) is an event-log sink: the loop's events (turn ends, decisions,
injections, waits, questions, run_end) move it, and two taps see what cannot wait for the
loop's thread: Claude Code's hooks as they arrive (a permission request, the agent going
on) and the screen model (a dialog opening or closing). The file is rewritten atomically,
and only when something shown changed.

The reader (`derive`) never trusts the file alone: a live state needs the run's lock held
(flock is released by the kernel however the process dies), so a run killed with SIGKILL
reads as `crashed`, never as `working` forever.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ptysup.agents.questions import ASK_TOOL
from ptysup.events import Event
from ptysup.logread import is_number
from ptysup.store import readback
from ptysup.store.rundir import STATE_FILE as STATE_FILE  # the run directory names its files
from ptysup.store.rundir import write_atomic

WORKING = "working"  # the agent works on what it was given (or is starting)
NEEDS_INPUT = "needs_input"  # a permission dialog, a question or an escalation waits
DECIDING = "deciding"  # a turn ended: the supervisor decides (and verification runs)
API_WAIT = "api_wait"  # waiting out an API error or usage limit before going on
DONE = "done"  # ended with the outcome complete
FAILED = "failed"  # ended with any other outcome (abort, budget, signal, error, ...)
CRASHED = "crashed"  # never written: no run_end and the lock is free (kill -9, a reboot)

LIVE = frozenset({WORKING, NEEDS_INPUT, DECIDING, API_WAIT})
ENDED = frozenset({DONE, FAILED})
STATES = (WORKING, NEEDS_INPUT, DECIDING, API_WAIT, DONE, FAILED, CRASHED)

FOR_A_PERSON = "question for a person: "
PAUSED = "supervision paused: a person has the agent"
PAUSED_IDLE = f"{PAUSED}, whose turn ended"  # no decision until the person resumes
YOUR_TEXT = "your text is in the input box (Enter sends it)"  # ptysup waits for it
DETAIL_MAX = 200  # characters of `detail`: a line in a table, not a transcript
# Hooks that mean the agent waits for a person's answer, and those that mean it went on.
_ASKING_NOTIFICATIONS = frozenset({"permission_prompt", "idle_prompt"})
_GOING_ON = frozenset({"PostToolUse", "PostToolUseFailure", "UserPromptSubmit"})


def state_for_outcome(outcome: str | None) -> str:
    """`done` for the outcome complete, `failed` for every other one."""
    return DONE if outcome == "complete" else FAILED


class StateTracker:
    """Keeps state.json current for one run (part); safe to call from any thread."""

    def __init__(
        self,
        path: Path,
        run_id: str,
        pid: int,
        clock: Callable[[], float] = time.time,
        redact: Callable[[str], str] = lambda text: text,
        write: Callable[[Path, str], None] = write_atomic,
        warn: Callable[[OSError], None] = lambda err: None,
    ) -> None:
        self.path = path
        self._clock = clock
        self._redact = redact
        self._write = write
        self._warn = warn  # hears the first write that failed, naming state.json
        self._lock = threading.Lock()
        self._dialog = False  # the screen shows a dialog
        self._paused = False  # the person paused supervision (the escape key)
        self._decided = False  # the turn's decision is made: ptysup acts on it, waits on nobody
        self.errors: list[OSError] = []  # writes that failed (the run goes on regardless)
        self._data: dict[str, Any] = {
            "run_id": run_id,
            "state": WORKING,
            "since": clock(),
            "pid": pid,
            "iteration": 0,
            "max_iter": None,
            "step": None,
            "cost_usd": 0.0,
            "detail": "starting",
            "until": None,
            "outcome": None,
            "exit_code": None,
            # The budgets as they stand (a person may move them: `ptysup budget`) and what
            # the run waits on a person for (ptysup.run.waiting), for whoever steers it.
            "budgets": None,
            "waiting": None,
        }
        self._written: dict[str, Any] | None = None

    @property
    def state(self) -> str:
        """The state last set."""
        with self._lock:
            return str(self._data["state"])

    def snapshot(self) -> dict[str, Any]:
        """What state.json says (or is about to)."""
        with self._lock:
            return dict(self._data)

    # -- the event-log sink ----------------------------------------------------------
    def write(self, event: Event) -> None:
        """Move the state on one of the run's events (EventLog sink)."""
        f = event.fields
        name = event.event
        with self._lock:
            if name in ("run_start", "run_resume"):
                self._data.update(
                    iteration=int(f.get("iterations") or 0),
                    max_iter=f.get("max_iter"),
                    step=f.get("step"),
                    cost_usd=float(f.get("cost_usd") or 0.0),
                    outcome=None,
                    exit_code=None,
                )
                self._set(WORKING, "starting the agent")
            elif name == "agent_ready":
                self._set(WORKING, "")
            elif name == "step_start":
                self._data["step"] = f.get("id")
            elif name == "inject":
                self._set(WORKING, f"typed: {f.get('kind', '')}")
            elif name in ("turn_end", "decision_cancelled") and self._paused:
                self._decided = False
                self._set(NEEDS_INPUT, PAUSED_IDLE)  # the run waits on the person
            elif name == "turn_end":
                self._decided = False
                kind = str(f.get("kind", ""))
                self._set(API_WAIT if kind == "api_error" else DECIDING, f"turn end: {kind}")
            elif name == "person_command" and f.get("command") in ("pause", "resume"):
                self._paused = f.get("command") == "pause"
                if self._paused and self._data["state"] == WORKING:
                    self._set(WORKING, PAUSED)
                elif self._paused and self._data["state"] == DECIDING and not self._decided:
                    self._set(NEEDS_INPUT, PAUSED_IDLE)  # no decision until the person resumes
                elif self._data["detail"] == PAUSED_IDLE:  # the turn it ended gets decided
                    self._set(DECIDING, "supervision resumed")
                elif self._data["state"] == WORKING:
                    self._set(WORKING, "supervision resumed")
            elif name == "question":
                self._decided = False
                to_person = f.get("to") == "person"
                self._set(
                    NEEDS_INPUT if to_person else DECIDING,
                    (FOR_A_PERSON if to_person else "the agent asks: ")
                    + _questions(f.get("questions")),
                )
            elif name == "answer":
                self._set(WORKING, f"answered by {f.get('by', '?')}")
            elif name == "decision":
                self._data.update(
                    iteration=int(f.get("iteration") or 0),
                    max_iter=f.get("max_iter", self._data["max_iter"]),
                    cost_usd=float(f.get("total_cost_usd") or self._data["cost_usd"]),
                )
                self._decided = True
                self._set(DECIDING, f"decided: {f.get('action', '')}")
            elif name == "decision_cancelled":
                self._set(WORKING, "the person took over")
            elif name == "person_input" and f.get("state") == "typing":
                self._set(NEEDS_INPUT, YOUR_TEXT)  # nothing is decided or typed meanwhile
            elif name == "person_input" and self._data["detail"] == YOUR_TEXT:
                gone = f.get("state") == "cleared"  # else submitted: the person's turn runs
                self._set(DECIDING if gone else WORKING, "your text " + str(f.get("state")))
            elif name == "escalation" and f.get("waiting"):
                self._set(NEEDS_INPUT, f"escalated: {f.get('reason', '')}")
            elif name == "wait":
                seconds = float(f.get("seconds") or 0.0)
                self._data["until"] = round(event.ts + seconds, 3)
                self._set(API_WAIT, f"waiting {seconds:g}s: {f.get('reason', '')}")
            elif name == "run_end":
                outcome = f.get("outcome")
                self._data.update(
                    outcome=outcome,
                    exit_code=f.get("exit_code"),
                    iteration=int(f.get("iterations") or self._data["iteration"]),
                    cost_usd=float(f.get("cost_usd") or self._data["cost_usd"]),
                )
                self._set(state_for_outcome(outcome), str(f.get("reason") or ""))
            else:
                return
            self._flush()

    def close(self) -> None:
        """Nothing to release: every change was written when it happened."""

    def budgets(self, budgets: Mapping[str, Any]) -> None:
        """The run's budgets now: {"max_iter", "max_time" (s), "max_cost"}."""
        with self._lock:
            self._data["budgets"] = dict(budgets)
            self._data["max_iter"] = budgets.get("max_iter", self._data["max_iter"])
            self._flush()

    def waiting(self, waiting: Mapping[str, Any] | None) -> None:
        """What the run waits on a person for now (None: nothing), redacted like `detail`."""
        shown = None if waiting is None else {**waiting, "text": self._redact(str(waiting["text"]))}
        with self._lock:
            self._data["waiting"] = shown
            self._flush()

    def spent(self, cost_usd: float) -> None:
        """The run's spend so far, agent and supervisor, whenever the agent reports its
        own: kept at once, so a part killed mid-turn is charged what it spent."""
        with self._lock:
            if cost_usd <= self._data["cost_usd"]:
                return
            self._data["cost_usd"] = round(cost_usd, 6)
            self._flush()

    # -- the taps --------------------------------------------------------------------
    def hook(self, name: str, payload: Mapping[str, Any]) -> None:
        """A Claude Code hook, as it arrives (before the loop's thread sees it)."""
        with self._lock:
            if name == "PermissionRequest" and payload.get("tool_name") == ASK_TOOL:
                # The question's picker: the loop left it to a person (else no dialog).
                questions = payload.get("tool_input")
                if isinstance(questions, Mapping):
                    questions = questions.get("questions")
                self._ask(f"{FOR_A_PERSON}{_questions(questions)}")
            elif name == "PermissionRequest":
                self._ask(f"permission for {_tool(payload)}")
            elif name == "Notification" and payload.get("notification_type") in (
                _ASKING_NOTIFICATIONS
            ):
                # A reminder (~6 s into a dialog, or after 60 s idle): it names nothing
                # the hook before it did not. While ptysup decides or waits it is ptysup's
                # own pause, not a question (see _ask).
                message = str(payload.get("message") or payload.get("notification_type"))
                self._ask(message, vague=True)
            elif name in _GOING_ON:
                self._went_on()
            elif name == "Stop" and self._paused and self._data["state"] == WORKING:
                self._set(NEEDS_INPUT, PAUSED_IDLE)  # the person's own turn ended
            else:
                return
            self._flush()

    def screen(self, dialog: bool) -> None:
        """The screen model's reading after each update: whether a dialog is open."""
        with self._lock:
            if dialog == self._dialog:
                return
            self._dialog = dialog
            if dialog:
                self._ask("a dialog is open on the agent's screen", vague=True)
            else:
                self._went_on()
            self._flush()

    # -- internals (called with the lock held) ---------------------------------------
    def _ask(self, detail: str, vague: bool = False) -> None:
        """The agent waits for an answer: needs input, unless ptysup has the turn. A
        `vague` detail (the screen's, a reminder's) never replaces one that names the tool
        or the question."""
        state = self._data["state"]
        if state == WORKING or (state == NEEDS_INPUT and not vague):
            self._set(NEEDS_INPUT, detail)

    def _went_on(self) -> None:
        if self._data["state"] == NEEDS_INPUT:
            self._set(WORKING, PAUSED if self._paused else "")

    def _set(self, state: str, detail: str) -> None:
        if state != self._data["state"]:
            self._data["since"] = round(self._clock(), 3)
        if state != API_WAIT:
            self._data["until"] = None
        detail = " ".join(self._redact(detail).split())
        if len(detail) > DETAIL_MAX:
            detail = detail[: DETAIL_MAX - 1] + "…"
        self._data.update(state=state, detail=detail)

    def _flush(self) -> None:
        """Write state.json if anything in it changed (never per byte of output)."""
        if self._data == self._written:
            return
        try:
            self._write(self.path, json.dumps(self._data, ensure_ascii=False) + "\n")
        except OSError as exc:  # said, but the run goes on: its log has every change
            if not self.errors:
                self._warn(OSError(exc.errno, exc.strerror, str(self.path)))
            self.errors.append(exc)
            return
        self._written = dict(self._data)


def _tool(payload: Mapping[str, Any]) -> str:
    tool = str(payload.get("tool_name") or "a tool")
    target = payload.get("tool_input")
    if isinstance(target, Mapping):
        for key in ("file_path", "command", "path", "url", "pattern"):
            if key in target:
                return f"{tool}({target[key]})"
    return tool


def _questions(questions: Any) -> str:
    if not isinstance(questions, list):
        return ""
    return " / ".join(str(q.get("question", "")) for q in questions if isinstance(q, Mapping))


def read_state(path: Path) -> dict[str, Any] | None:
    """state.json's content, or None when it is missing, torn or not a known state."""
    try:
        data = readback.read_json(path)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("state") not in STATES:
        return None
    if not all(check(data.get(name)) for name, check in _SHOWN.items()):
        return None  # a field readers show has another type: not a file ptysup wrote
    return data


def _number_or_null(value: Any) -> bool:
    return value is None or is_number(value)


# state.json's fields that `runs` and `serve` show or compare, and the types ptysup writes.
_SHOWN: Mapping[str, Callable[[Any], bool]] = {
    "since": _number_or_null,
    "until": _number_or_null,
    "pid": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    "detail": lambda v: v is None or isinstance(v, str),
}


def derive(saved: Mapping[str, Any] | None, holder: int | None, outcome: str | None) -> str:
    """A run's state for readers.

    `saved`: state.json (read_state); `holder`: the pid holding the run's lock (None: the
    lock is free); `outcome`: run_end's in the events, None when the last part has none.
    A live run is what its file says (`working` before its process wrote the file); a
    dead one is done or failed by its run_end's outcome, and `crashed` without a run_end
    (whatever its file says: it may be an earlier part's).
    """
    state = saved.get("state") if saved is not None else None
    if holder is not None:
        mine = saved is not None and (holder < 0 or saved.get("pid") == holder)
        return str(state) if mine and (state in LIVE or state in ENDED) else WORKING
    if outcome is not None:
        return state_for_outcome(outcome)
    return CRASHED
