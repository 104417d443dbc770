"""The run's side of steering: what `ptysup send/budget/stop` and the control page ask of a
live run, done as the person at its terminal would do it.

The attach server hands each request (ptysup.attach.steerproto) to `Steering.handle` in
a thread of its own; the answer is the one line the asking command prints, a refusal is
steerproto.Refused. Every action done is a `person_action` event (what, from where),
which the notifier hears like any other.

- send: the text is typed into the agent as the person's message (pasted, then Enter),
  through the keys a read-write viewer's go through, so the run takes it as it takes
  typing at its terminal: a decision under way is cancelled, the supervisor told the
  person spoke. A question held open for an answer from elsewhere gets it instead.
- budget: the loop's limits move (never below what is used); a `budget` event says the
  budgets now (the status row, `runs` and state.json read it).
- stop: the escape key's stop (outcome stopped, exit 8).
- approve: the approval dialog on screen is approved only if it is exactly the text the
  person was shown; ptysup itself never approves one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ptysup.agents.events import PersonCommand
from ptysup.agents.person import Person
from ptysup.agents.questions import answers_for
from ptysup.agents.session import AgentSession
from ptysup.attach.steerproto import Action, Refused, Request
from ptysup.events import EventLog
from ptysup.run.limits import Limits, Used
from ptysup.run.loop import RunLoop
from ptysup.run.waiting import DIALOG, WaitBoard
from ptysup.store.runstate import StateTracker
from ptysup.terminal.inject import Typist, as_message
from ptysup.terminal.keys import KeyCommand
from ptysup.terminal.screen import ScreenSnapshot
from ptysup.values import duration_text

DIALOG_CLOSE_S = 5.0  # the most a dismissed dialog may take to leave the screen


@dataclass(frozen=True)
class Hands:
    """How the run's steering reaches the agent and the loop."""

    person: Person
    typist: Typist  # writes as the person's keys (Person.keys, then the agent)
    leaders: tuple[str, ...]  # the agent's command leaders (/ !): sent texts never start one
    guard: str
    paste_only: bool  # the agent takes a message only as a bracketed paste
    post: Callable[[PersonCommand], None]  # to the session, as the escape key's commands
    now: Callable[[], float]  # the session clock
    used: Callable[[], Used]  # what the run has used of its budgets
    approve_key: bytes | None  # approves the agent's dialog; None: not from elsewhere
    dismiss_key: bytes  # rejects it (never approves): b"" for an agent without one


class Steering:
    """Carries out steering requests on one run."""

    def __init__(
        self, run_id: str, hands: Hands, limits: Limits, board: WaitBoard, log: EventLog
    ) -> None:
        self._run_id = run_id
        self._hands = hands
        self._limits = limits
        self._board = board
        self._log = log

    def handle(self, request: Request) -> str:
        """Do what `request` asks; the line to answer (Refused: why not)."""
        act = {
            Action.SEND: self._send,
            Action.BUDGET: self._budget,
            Action.STOP: self._stop,
            Action.APPROVE: self._approve,
        }[request.action]
        return act(request)

    def _acted(self, request: Request, **fields: object) -> None:
        self._log.emit(
            "person_action", action=request.action.value, source=request.source, **fields
        )

    def _send(self, request: Request) -> str:
        ask = self._board.take_question()
        if ask is not None:
            answers = answers_for(ask.questions, request.text)
            self._acted(request, text=request.text)
            delivered = ask.answer(answers)
            self._log.emit("answer", by="person", answers=answers, delivered=delivered)
            if not delivered:
                raise Refused(f"run {self._run_id}: the agent no longer waits on its question")
            return f"run {self._run_id}: answered the agent's question: {request.text}"
        hands = self._hands
        message = as_message(request.text, hands.leaders, hands.guard)
        self._acted(request, text=request.text)
        self._close_dialog()
        if not hands.typist.paste(message, plain=not hands.paste_only):
            raise Refused(f"run {self._run_id}: the agent takes no paste now; send it again")
        hands.typist.enter()
        return f"run {self._run_id}: typed your message into the agent"

    def _close_dialog(self) -> None:
        """A dialog on screen is rejected before a sent message is typed: its Enter would
        answer the dialog (Claude Code's picks "Yes"), which nobody elsewhere saw. As
        ptysup does before its own instruction (the dismiss key never approves)."""
        waiting = self._board.now
        if waiting is None or waiting.kind != DIALOG:
            return
        if not self._hands.dismiss_key:
            raise Refused(f"run {self._run_id}: the agent shows a dialog; nothing was typed")
        self._hands.typist.key(self._hands.dismiss_key)
        self._log.emit("dialog_dismissed", screen=waiting.text[-500:])
        if not self._board.dialog_closed(DIALOG_CLOSE_S):
            raise Refused(
                f"run {self._run_id}: the agent's dialog did not close; nothing was typed"
            )

    def _budget(self, request: Request) -> str:
        used = self._hands.used()
        now = self._limits.change(request.changes, used)
        changed = {c.budget.value: c.to_text() for c in request.changes}
        self._acted(request, changes=changed)
        self._log.emit("budget", **now, source=request.source)
        return f"run {self._run_id}: budgets now {describe(now, used)}"

    def _stop(self, request: Request) -> str:
        self._acted(request)
        done = self._hands.person.command(KeyCommand.STOP)
        if done is not None:
            self._log.emit("person_command", command=done.value)
            self._hands.post(PersonCommand(done, self._hands.now()))
        return f"run {self._run_id}: stopping (the agent is ended; exit 8)"

    def _approve(self, request: Request) -> str:
        waiting = self._board.now
        if waiting is None or waiting.kind != DIALOG:
            raise Refused(f"run {self._run_id}: no dialog is open; nothing was approved")
        if waiting.text != request.text:
            raise Refused(f"run {self._run_id}: the dialog changed; nothing was approved")
        key = self._hands.approve_key
        if key is None:
            raise Refused(f"run {self._run_id}: this agent's dialogs are approved at its terminal")
        self._acted(request, dialog=request.text)
        self._hands.typist.key(key)
        return f"run {self._run_id}: approved the dialog"


def describe(budgets: dict[str, float | int | None], used: Used) -> str:
    """'12 iterations (4 used), 1h30m (20m used), $5.00 ($1.20 used)'; no limit: 'none'."""
    max_time, max_cost = budgets["max_time"], budgets["max_cost"]
    return ", ".join(
        (
            f"{budgets['max_iter']} iterations ({used.iterations} used)",
            "no time limit"
            if max_time is None
            else f"{duration_text(max_time)} ({duration_text(used.elapsed_s)} used)",
            "no cost limit" if max_cost is None else f"${max_cost:.2f} (${used.cost_usd:.2f} used)",
        )
    )


def steering_for(
    run_id: str,
    session: AgentSession,
    write: Callable[[bytes], None],
    bracketed: Callable[[], bool],
    loop: RunLoop,
    log: EventLog,
    state: StateTracker | None,
) -> Steering:
    """The run's steering, typing through `write` as the person's keys; state.json keeps
    the budgets and what the run waits on as they change."""
    person, profile = session.person, session.profile

    def keys(data: bytes) -> None:  # as a read-write viewer's: the person's typing
        person.keys(data)
        write(data)

    hands = Hands(
        person=person,
        typist=Typist(keys, bracketed=bracketed),
        leaders=profile.command_leaders,
        guard=profile.command_guard,
        paste_only=profile.paste_only,
        post=session.post,
        now=session.now,
        used=loop.used,
        approve_key=profile.approve_key,
        dismiss_key=profile.dismiss_key,
    )
    if state is not None:
        state.budgets(loop.limits.to_json())
        loop.limits.on_change.append(state.budgets)
        loop.board.on_change.append(
            lambda waiting: state.waiting(None if waiting is None else waiting.to_json())
        )
    return Steering(run_id, hands, loop.limits, loop.board, log)


def answer_line(run_id: str) -> str:
    """How a person elsewhere answers this run's escalation: the exact command."""
    return f'ptysup send {run_id} "your answer"'


def dialog_text(snap: ScreenSnapshot) -> str:
    """A dialog as drawn: the screen's lines, right-trimmed, without blank lines around
    (what the control page shows and `approve` must name exactly)."""
    return "\n".join(line.rstrip() for line in snap.lines).strip("\n")
