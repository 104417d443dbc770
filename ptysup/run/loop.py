"""The run: wait until ready → type the task → at each turn end ask the supervisor → act."""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from ptysup.agents.events import (
    AgentExited,
    CostUp,
    Halted,
    Interrupted,
    PersonStopped,
    TimeUp,
    TurnEnd,
    TurnEndKind,
    time_left,
)
from ptysup.agents.person import Person
from ptysup.agents.questions import Ask, answers_for, describe
from ptysup.agents.session import Activity, InjectResult
from ptysup.agents.waits import WaitPolicy, is_fatal_error
from ptysup.config import DEFAULT_MAX_REPEATS
from ptysup.events import EventLog
from ptysup.exitcodes import Outcome, RunResult
from ptysup.run.decision import (
    Asked,
    DecisionPath,
    Evidence,
    Guard,
    Judge,
    Keeper,
    Moment,
    PromptSettings,
    SecondOpinion,
    TurnView,
    Verdict,
    VerdictKind,
)
from ptysup.run.limits import Limits, Used
from ptysup.run.repeats import Repeat, RepeatDetector, new_text
from ptysup.run.verify import Verify, VerifyResult
from ptysup.run.waiting import ESCALATION, QUESTION, WaitBoard, Waiting
from ptysup.run.winddown import Limits as WindLimits
from ptysup.run.winddown import Usage, WindDown, agent_message
from ptysup.supervisor.decide import (
    ApiErrorNotWaited,
    Decided,
    DecisionCancelled,
    SupervisorFailed,
)
from ptysup.supervisor.parse import Action, Decision
from ptysup.supervisor.prompt import DEFAULT_MAX_BYTES
from ptysup.terminal.screen import ScreenSnapshot

_T = TypeVar("_T")
CONTINUE_AFTER_WAIT = "continue"
SCREEN_LINES = 60  # lines of the agent's screen shown to the supervisor
# A hard stop (budget, the person's stop key) interrupts, clears and ends the agent within
# this many seconds, so a run ends within 5 s of its time budget.
HARD_STOP_S = 4.0
ANSWER_CHECK_S = 0.2  # how often a question held open is checked for an answer sent


class Agent(Protocol):
    """The agent as the loop drives it (AgentSession, or a fake in tests)."""

    activity: Activity
    person: Person
    cost_usd: float  # the agent's own spend so far, as it reports it
    cost_cap: float | None  # the agent's spend at which its turn ends the run (CostUp)

    def wait_ready(self) -> None: ...
    def submit(self, text: str, deadline: float | None = None) -> InjectResult: ...
    def wait_turn_end(self, deadline: float | None = None) -> TurnEnd | Ask: ...
    def wait_turn_start(self, deadline: float | None = None) -> None: ...
    def hold(self, turn: TurnEnd, deadline: float | None = None) -> TurnEnd | None: ...
    def interrupt(self, deadline: float | None = None) -> bool | None: ...
    def clear(self, deadline: float | None = None, final: bool = True) -> InjectResult | None: ...
    def shutdown(self, deadline: float | None = None) -> bool: ...
    def snapshot(self) -> ScreenSnapshot: ...
    def pause(self, seconds: float) -> None: ...
    def settle_cost(self, deadline: float | None = None) -> None: ...


Decider = Judge  # the supervisor, as the loop is given it


@dataclass(frozen=True)
class Judging:
    """What the decision path adds to the judge: the evidence in every prompt, the tamper
    guard and a second opinion before a [COMPLETE] counts (see ptysup.run.decision)."""

    evidence: Evidence | None = None
    guard: Guard | None = None
    second: SecondOpinion | None = None
    tampered: int = 0  # refusals for tampering in earlier parts of a resumed run
    keep: Keeper | None = None  # where each judged turn end is kept (judge-bench's cases)


@dataclass(frozen=True)
class StepText:
    """A step to start: the text to type, after a /clear if the step asks for one."""

    text: str
    clear: bool = False


class Steps(Protocol):
    """A plan's steps as the loop consults them (`ptysup.run.plandriver.PlanDriver`)."""

    def opening(self, iterations: int) -> StepText | None:
        """The current step to start; None when it is already under way (a resumed run)."""
        ...

    def pending(self) -> bool:
        """Whether a step waits to begin (without beginning it)."""
        ...

    def gate(self) -> Verify | None:
        """The current step's own verification."""
        ...

    def advance(self, iterations: int) -> bool:
        """The current step is done and verified: whether another step follows."""
        ...

    def exhausted(self, iterations: int) -> str | None:
        """Why the current step may not have another decision, if it may not."""
        ...

    def notes(self) -> tuple[str, ...]:
        """The plan as the supervisor sees it."""
        ...


@dataclass(frozen=True)
class Spent:
    """What earlier parts of a resumed run used: it stays used."""

    iterations: int = 0
    elapsed_s: float = 0.0
    cost_usd: float = 0.0
    wound_down: bool = False  # the agent was told to wind down (ptysup.run.winddown)


# What a resumed part's agent did with the earlier parts' conversation, as the supervisor
# is told it (the agent's registry row says which it does; a conversation it never saved
# is not there to reopen).
REOPENED = "reopened its earlier conversation"
AFRESH = "started afresh: it remembers nothing of the earlier parts"


@dataclass(frozen=True)
class LoopConfig:
    """The run's task and budgets."""

    task: str
    max_iter: int = 50
    max_prompt_bytes: int = DEFAULT_MAX_BYTES
    max_time: float | None = None  # seconds
    max_cost: float | None = None  # USD, the agent's and the supervisor's spend together
    prompt_template: str | None = None
    questions: str = "supervisor"  # who answers the agent's questions: supervisor | person
    person_present: bool = False  # a person at a terminal takes over on [ESCALATE]
    split_prompt: bool = False  # instructions and task as the supervisor's system prompt
    spent: Spent = Spent()
    resumed: bool = False  # the run was interrupted: ask the supervisor before typing
    resumed_as: str = REOPENED  # what the agent did with the earlier conversation
    say: str | None = None  # a person's answer, typed first when resuming
    # A decision an earlier part logged and never carried out (killed before run_end):
    # the resumed run carries it out instead of asking again.
    decided: Decision | None = None
    max_repeats: int = DEFAULT_MAX_REPEATS  # identical rounds that escalate; 0: off
    head_start_s: float = 0.0  # the run's time before the loop (the checks' baseline)
    # The fraction of a budget at which the agent is told to wind down (--wind-down);
    # None: never. Off here so the loop's own tests type exactly what they decide.
    wind_down: float | None = None
    # Without a terminal, how long an escalation waits for an answer sent from elsewhere
    # (`ptysup send`, the control page) before the run ends (exit 7); None: it ends at once.
    escalate_wait: float | None = None
    answer_with: str = ""  # how to answer from elsewhere: the `ptysup send` line
    # The run's control page while `ptysup serve --control` serves it (store/pagelink.py).
    page_link: Callable[[], str | None] = field(default=lambda: None)


def resumed_note(resumed_as: str = REOPENED) -> str:
    """What the supervisor of a resumed run is told first."""
    return (
        "This run was interrupted (ptysup stopped) and has just been resumed: the agent was "
        f"started again and {resumed_as}. Decide what comes next."
    )


RESUMED_NOTE = resumed_note()


# The decision behind each kind of injection, for the spinning detector.
_DECIDED_BY = {
    "instruction": Action.CONTINUE.value,
    "verify": Action.COMPLETE.value,
    "tamper": Action.COMPLETE.value,
}


@dataclass(frozen=True)
class _Typed:
    """What the agent's current turn was given, for the spinning detector."""

    text: str = ""
    decision: str | None = None  # the decision's action that typed it
    verify: tuple[str, ...] = ()  # the --verify failure it reports
    screen: str = ""  # the screen before it was typed: what is new at the turn end
    prompts: int = 0  # the person's messages by then: another one is a new start


class _Unanswered(Exception):
    """An --escalate-wait ran out with nobody's answer."""


class _Stop(Exception):
    """Ends the run with a result (budget, API error)."""

    def __init__(self, outcome: Outcome, reason: str) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason


def _spent(decided: Decided) -> dict[str, object]:
    """What one supervisor's answer took and cost, as its event says."""
    answer = decided.answer
    return {
        "duration_s": round(answer.duration_s, 3),
        "attempts": decided.attempts,
        "tokens": dict(answer.tokens),
        "cost_usd": None if answer.cost_usd is None else round(answer.cost_usd, 6),
    }


def _gates(steps: Steps | None, verifier: Verify | None) -> list[Verify]:
    """What a [COMPLETE] must pass now: the current step's verify, then --verify."""
    return [g for g in (steps.gate() if steps else None, verifier) if g is not None]


class RunLoop:
    """The decision loop, driving an Agent with a Decider; knows no terminal details."""

    def __init__(
        self,
        config: LoopConfig,
        agent: Agent,
        supervisor: Decider,
        log: EventLog,
        clock: Callable[[], float] = time.monotonic,
        verifier: Verify | None = None,
        waits: WaitPolicy | None = None,
        wall_clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.timezone.utc),
        redact: Callable[[str], str] = lambda text: text,
        steps: Steps | None = None,
        fingerprint: Callable[[], str | None] = lambda: None,
        judging: Judging = Judging(),
        board: WaitBoard | None = None,
    ) -> None:
        self._cfg = config
        self._redact = redact
        self._agent = agent
        self._log = log
        self._clock = clock
        self._waits = waits or WaitPolicy(enabled=False)
        self._now = wall_clock
        self._steps = steps
        # A resumed run's clock starts where the earlier parts left it; a new run's where
        # it began, before the checks' baseline.
        self._start = clock() - config.spent.elapsed_s - config.head_start_s
        # The budgets as they stand now: a person may move them while the run goes.
        self.limits = Limits(config.max_iter, config.max_time, config.max_cost)
        # What the run waits on a person for, seen from elsewhere (the screen adds dialogs).
        self.board = board or WaitBoard()
        self._asking: Ask | None = None  # a question whose hook waits for a reply
        self._escalated_picker = False  # a question escalated to the person at the terminal
        self._once: tuple[str, ...] = ()  # notes for the next prompt only
        self._path = DecisionPath(
            supervisor,
            log,
            PromptSettings(
                redact(config.task),
                config.max_prompt_bytes,
                config.prompt_template,
                config.split_prompt,
            ),
            evidence=judging.evidence,
            gates=functools.partial(_gates, steps, verifier),
            guard=judging.guard,
            second=judging.second,
            redact=redact,
            tampered=judging.tampered,
            keep=judging.keep,
        )
        self.iterations = config.spent.iterations
        self._earlier_cost = config.spent.cost_usd  # what earlier parts of the run spent
        self._repeats = RepeatDetector(config.max_repeats, fingerprint)
        self._typed = _Typed()  # what the current turn was given
        self._repeat_note: tuple[str, ...] = ()  # said in every prompt of this turn end
        self.cost_usd = 0.0  # the supervisor's summed total_cost_usd (this part)
        self._resumed_note = resumed_note(config.resumed_as)
        self._wind = WindDown(config.wind_down, told=config.spent.wound_down)

    def run(self) -> RunResult:
        """Run to an outcome; never raises for the agent's or supervisor's failures."""
        try:
            outcome, reason = self._outcome()
        except Interrupted as exc:  # also while ending the agent after another outcome
            return self.result(Outcome.SIGNAL, str(exc), exc.signum)
        return self.result(outcome, reason)

    def _outcome(self) -> tuple[Outcome, str]:
        try:
            outcome, reason = self._run()
        except AgentExited as exc:
            outcome, reason = Outcome.AGENT_EXITED, f"agent exited: {exc}"
        except PersonStopped:
            self._log.emit("warning", message="stopped by the person (escape key)")
            self._interrupt(self._clock() + HARD_STOP_S)
            self._end_agent(self._clock() + HARD_STOP_S)
            outcome, reason = Outcome.STOPPED, "stopped by the person"
        except Halted as exc:
            self._interrupt(self._clock() + HARD_STOP_S)
            self._end_agent(self._clock() + HARD_STOP_S)
            outcome, reason = Outcome.LOG_ERROR, str(exc)
        except SupervisorFailed as exc:
            self._end_agent()
            outcome, reason = Outcome.SUPERVISOR_FAILED, str(exc)
        except ApiErrorNotWaited as exc:
            self._end_agent()
            outcome, reason = Outcome.API_ERROR, str(exc)
        except TimeUp:
            outcome, reason = self._budget_stop(Outcome.TIME, "time budget used up")
        except CostUp:
            outcome, reason = self._budget_stop(Outcome.COST, self._cost_reason())
        except _Stop as stop:
            outcome, reason = stop.outcome, stop.reason
        return outcome, reason

    def result(self, outcome: Outcome, reason: str, signum: int | None = None) -> RunResult:
        """A RunResult with this run's iterations and costs."""
        return RunResult(
            outcome,
            self.iterations,
            reason,
            signum,
            self.cost,
            agent_cost_usd=round(self._agent.cost_usd, 6),
            supervisor_cost_usd=round(self.cost_usd, 6),
        )

    @property
    def max_iter(self) -> int:
        """The iteration budget (as it stands now)."""
        return self.limits.max_iter

    @property
    def _deadline(self) -> float | None:
        """When the time budget, as it stands now, runs out (the loop's clock)."""
        max_time = self.limits.max_time
        return None if max_time is None else self._start + max_time

    def used(self) -> Used:
        """What the run has used of its budgets so far."""
        return Used(self.iterations, self._elapsed(), self.cost)

    @property
    def cost(self) -> float:
        """The run's cost so far (USD): the agent's and the supervisor's, rounded for the log."""
        return round(self._earlier_cost + self.cost_usd + self._agent.cost_usd, 6)

    def _run(self) -> tuple[Outcome, str]:
        try:
            self._agent.wait_ready()
        except TimeoutError as exc:
            reason = f"agent never became ready: {exc}"
            self._log.emit("error", message=reason)
            return Outcome.AGENT_EXITED, reason
        # How long the agent took to start: this part's time, not the whole run's.
        started = round(self._elapsed() - self._cfg.spent.elapsed_s - self._cfg.head_start_s, 3)
        self._log.emit("agent_ready", elapsed_s=started)
        pending = self._open()
        self._path.prepare()  # the judge boots while the agent works
        if self._cfg.decided is not None:
            ended = self._carry_out(self._cfg.decided)
            if ended is not None:
                return ended
        while True:
            self._cap_agent_cost()
            turn = pending or self._moving(self._agent.wait_turn_end)
            pending = None
            if isinstance(turn, Ask):
                ended = self._on_question(turn)
                if ended is not None:
                    return ended
                continue
            self._log.emit(
                "turn_end",
                kind=turn.kind.value,
                detail=self._redact(turn.detail)[-500:],  # a cut key would not be seen
                **({"dialog": True} if turn.dialog else {}),
            )
            if turn.kind is TurnEndKind.API_ERROR:
                if not self._spinning(turn):
                    self._wait_out_api_error(turn.detail)
                continue  # an API error costs no iteration
            escalated, self._escalated_picker = self._escalated_picker, False
            if escalated and turn.kind is TurnEndKind.SCREEN:
                # The person dismissed the escalated question's picker (Esc ends the turn
                # without a Stop): the agent now waits for them, and so does the run.
                self._moving(self._agent.wait_turn_start)
                continue
            if self.limits.max_cost is not None:
                # The turn's spend is reported a moment after its end: no decision is paid
                # for on a figure that misses it.
                self._agent.settle_cost(self._deadline)
            self._check_budgets()  # after a person's turn (escalation) the budget may be gone
            if self._steps is not None and self._steps.pending():
                # A step completed while answering a question, or a resumed run's answer
                # ran first: the next step starts now.
                following = self._steps.opening(self.iterations)
                if following is not None:
                    self._start_step(following)
                continue
            if self._spinning(turn):
                continue  # the person's turn started: decide at its end
            asked = self._decide_held(turn)
            if asked is None:
                continue  # the person started a turn: decide at its end
            verdict = self._settle(asked)
            ended = None if verdict is None else self._act(verdict)
            if ended is not None:
                return ended

    def _settle(self, asked: Asked) -> Verdict | None:
        """The decision path's verdict on `asked`; what it spent beyond the judge counts.
        None when the agent's exit overtook the second opinion: it was ended (the loop's
        next wait ends the run)."""
        i = asked.moment.iteration
        try:
            verdict = self._path.settle(asked, self._deadline)
        except DecisionCancelled as exc:
            self._log.emit("decision_cancelled", iteration=i, reason=f"overtaken by {exc}")
            return None
        self.cost_usd += verdict.cost_usd
        if verdict.second is not None:
            self._said_second(i, asked, verdict)
        return verdict

    def _said_second(self, iteration: int, asked: Asked, verdict: Verdict) -> None:
        """The `second_opinion` event: both opinions, and what the run does with them."""
        assert verdict.second is not None
        d = verdict.second.decision
        judge = asked.decided.decision
        self._log.emit(
            "second_opinion",
            iteration=iteration,
            command=self._path.second_name,
            action=d.action.value,
            content=d.content,
            judge_action=judge.action.value,
            judge_content=judge.content,
            verdict=verdict.kind.value,
            **_spent(verdict.second),
            supervisor_cost_usd=round(self.cost_usd, 6),
            total_cost_usd=self.cost,
        )

    def _act(self, verdict: Verdict) -> tuple[Outcome, str] | None:
        """Do what a turn end's verdict says; the run's outcome when it ends the run."""
        kind = verdict.kind
        if kind is VerdictKind.ESCALATE:
            ends = self._escalate(
                verdict.text, "turn_end" if verdict.by == "supervisor" else verdict.by
            )
            self._await_person(verdict.text, ends)
            return None
        if kind is VerdictKind.DONE:
            if self._steps is None or not self._steps.advance(self.iterations):
                self._end_agent()
                return Outcome.COMPLETE, verdict.text
            self._check_budgets()
            following = self._steps.opening(self.iterations)
            if following is not None:
                self._start_step(following)
            return None
        if kind is VerdictKind.ABORT:
            self._clear_and_end()
            return Outcome.ABORT, verdict.text
        self._check_budgets()
        injected = "instruction" if kind is VerdictKind.CONTINUE else verdict.by
        self._instruct(verdict.text, kind=injected, failed=verdict.failed)
        return None

    def _spinning(self, turn: TurnEnd) -> bool:
        """Whether this turn is one identical round too many: the run escalates (without
        a person it ends, exit 7; with one, their turn has started when this returns)."""
        repeat = self._observe(turn)
        if repeat is None or not self._repeats.exhausted(repeat):
            return False
        ends = self._escalate(repeat.reason(), "repeat")
        self._repeats.reset()  # what the person does next is a new start
        self._await_person(repeat.reason(), ends)
        return True

    def _observe(self, turn: TurnEnd) -> Repeat | None:
        """This turn as a round of the spinning detector; a repeat is logged, and said in
        the prompts of this turn end's decision."""
        typed, person = self._typed, self._agent.person
        api_error = turn.kind is TurnEndKind.API_ERROR
        # The person's own message since: a round no supervisor's instruction repeats.
        instruction = typed.text if person.prompts == typed.prompts else f"\0{person.prompts}"
        activity = self._agent.activity
        answer = turn.detail if api_error else activity.last_message or turn.detail
        if not answer and not api_error:
            answer = new_text(typed.screen, self._agent.snapshot().text())
        tools = () if api_error else tuple(activity.tools)
        # Redacted whole before anything is cut from it for a note, an event or a reason.
        r = self._redact
        repeat = self._repeats.observe(
            r(instruction),
            r("\n".join((answer, *tools))),
            typed.decision,
            tuple(r(v) for v in typed.verify),
            api_error,
        )
        self._repeat_note = ()
        if repeat is None:
            return None
        self._log.emit("repeat", **repeat.fields(), max_repeats=self._repeats.max_repeats)
        if not self._repeats.exhausted(repeat):
            self._repeat_note = (repeat.note(self._repeats.max_repeats),)
        return repeat

    def _decide_held(self, turn: TurnEnd) -> Asked | None:
        """Decide on `turn` once the person lets go of the agent; None when a turn started
        first (the person submitted a message). A decision the person overtook (their
        message, a pause, a stop) is cancelled and counts no iteration."""
        while True:
            held = self._agent.hold(turn, self._deadline)
            if held is None:
                return None
            prompts = self._agent.person.prompts
            decided = self._counted(functools.partial(self._decide, held))
            if decided is not None:
                return decided
            if self._agent.person.prompts != prompts:
                return None
            # Paused (hold waits for the resume) or stopped (hold raises PersonStopped).

    def _counted(self, decide: Callable[[], Asked | None]) -> Asked | None:
        """A decision as iteration `iterations + 1` (its prompt says so); it counts only
        if made: not when the person overtook it (None), nor when a signal, the time
        budget or the supervisor's failure ended it first."""
        self.iterations += 1
        decided = None
        try:
            decided = decide()
        finally:
            if decided is None:
                self.iterations -= 1
        return decided

    def _on_question(self, ask: Ask) -> tuple[Outcome, str] | None:
        """The agent asks: the supervisor answers (a decision), or a person does.

        Whatever happens meanwhile (budget, signal, failure), the question's hook gets a
        reply, so Claude Code never waits on it.
        """
        self._asking = ask
        try:
            return self._answer_question(ask)
        finally:
            self._release_question()

    def _release_question(self) -> None:
        """Answer a question still waiting (with a refusal) before the agent is typed to."""
        if self._asking is not None:
            self._refuse(self._asking, "The run ended before your question was answered.")
            self._asking = None

    def _refuse(self, ask: Ask, reason: str) -> None:
        """Answer the question with a refusal (the tool's error, for the model), logged;
        nothing when it was answered already (or left to the person)."""
        if ask.deny(reason):
            self._log.emit("answer", by="ptysup", refused=reason)

    def _answer_question(self, ask: Ask) -> tuple[Outcome, str] | None:
        # Supervision paused: the person has the agent, and its questions too.
        paused = self._agent.person.paused
        to = "person" if self._cfg.questions == "person" or paused else "supervisor"
        self._log.emit("question", questions=[q.to_json() for q in ask.questions], to=to)
        if to == "person":
            ask.leave_to_person()
            return None
        self._check_budgets()
        turn = TurnEnd(TurnEndKind.STOP, self._agent.activity.last_message)
        asked = self._counted(lambda: self._decide(turn, question=describe(ask.questions)))
        if asked is None:  # the person overtook it: the picker is theirs
            ask.leave_to_person()
            return None
        verdict = self._settle(asked)
        if verdict is None:  # the agent exited while the second opinion decided
            return None
        kind = verdict.kind
        if kind is VerdictKind.ESCALATE:
            at = "question" if verdict.by == "supervisor" else verdict.by
            if self._cfg.person_present:
                self._escalate(verdict.text, at)
                ask.leave_to_person()  # the picker waits for the person at the terminal
                self._escalated_picker = True
                return None
            if self._cfg.escalate_wait is None:
                self._refuse(
                    ask, f"Only a person can answer this; the run stops here: {verdict.text}"
                )
            # Held open: an answer sent from elsewhere goes to the question tool.
            self._await_person(verdict.text, self._escalate(verdict.text, at), ask)
            return None
        if kind is VerdictKind.ABORT:
            self._refuse(ask, f"The supervisor stopped the run: {verdict.text}")
            self._clear_and_end()
            return Outcome.ABORT, verdict.text
        if kind is VerdictKind.DONE:
            if self._steps is not None and self._steps.advance(self.iterations):
                # The step is done: the next one (pending) is typed once this turn ends.
                self._refuse(ask, "This step is done. Stop here; the next step follows.")
                return None
            self._refuse(ask, f"The supervisor ended the run as complete: {verdict.text}")
            self._let_turn_end()
            self._end_agent()
            return Outcome.COMPLETE, verdict.text
        self._check_budgets()
        self._give_answers(ask, verdict.text, by=verdict.by)
        return None

    def _give_answers(self, ask: Ask, reply: str, by: str) -> None:
        answers = answers_for(ask.questions, reply)
        delivered = ask.answer(answers)
        self._log.emit("answer", by=by, answers=answers, delivered=delivered)
        if not delivered:
            self._log.emit("warning", message="the question's hook was gone; no answer given")

    def _let_turn_end(self) -> None:
        """After a question was refused the agent goes on with its turn (the model reads the
        refusal): let the turn end on its own for a moment, then interrupt it if it has not,
        so the agent is not asked to exit while it works."""
        wait_until = self._clock() + HARD_STOP_S
        if self._deadline is not None:
            wait_until = min(wait_until, self._deadline)
        try:
            self._agent.wait_turn_end(wait_until)
        except TimeUp:
            self._interrupt(self._clock() + HARD_STOP_S)

    def _escalate(self, reason: str, at: str) -> float | None:
        """Hand the run to a person: no /clear (the agent keeps its context), no more
        decisions until the person's turn ends. Without a terminal the run waits
        --escalate-wait for an answer sent from elsewhere (when it ends, on the loop's
        clock, is returned), or without one ends at once (exit 7)."""
        wait = None if self._cfg.person_present else self._cfg.escalate_wait
        waiting = self._cfg.person_present or wait is not None
        said: dict[str, object] = {}
        if wait is not None:
            page = self._cfg.page_link()
            said = {"wait_s": wait, "answer_with": self._cfg.answer_with}
            said.update({"page": page} if page else {})
        self._log.emit(
            "escalation", iteration=self.iterations, reason=reason, at=at, waiting=waiting, **said
        )
        if not waiting:
            if at == "question":
                self._let_turn_end()
            self._end_agent()
            raise _Stop(Outcome.ESCALATED, reason)
        return None if wait is None else self._clock() + wait

    def _await_person(self, reason: str, ends: float | None, ask: Ask | None = None) -> None:
        """Wait for the person's turn (their message, or an answer to the question `ask`)
        until `ends` (None: for as long as they take): then the run ends (exit 7)."""
        until = None if ends is None else round(time.time() + ends - self._clock(), 3)
        if ask is None:
            waiting = Waiting(ESCALATION, reason, until=until)
        else:
            labels = tuple(o.label for q in ask.questions for o in q.options)
            waiting = Waiting(QUESTION, describe(ask.questions), labels, until)
        self.board.post(waiting, ask)
        try:
            if ask is None:
                self._moving(self._agent.wait_turn_start, ends)
            else:
                self._await_answer(ends)
        except _Unanswered:
            self._log.emit(
                "warning",
                message=f"nobody answered within --escalate-wait ({self._cfg.escalate_wait:g}s)",
            )
            if ask is not None:
                self._refuse(ask, f"Nobody answered; the run stops here: {reason}")
                self._let_turn_end()
            self._end_agent()
            raise _Stop(Outcome.ESCALATED, reason) from None
        finally:
            self.board.post(None)

    def _await_answer(self, ends: float | None) -> None:
        """Until the question held open is answered from elsewhere (steering takes it off
        the board): the agent waits in its question tool meanwhile, which may read as
        working, so no turn start can tell. _Unanswered once `ends` passed."""
        while self.board.holds_question():
            now = self._clock()
            if ends is not None and now >= ends:
                raise _Unanswered()
            if self._deadline is not None and now >= self._deadline:
                raise TimeUp()
            limit = min(t for t in (ends, self._deadline, now + ANSWER_CHECK_S) if t is not None)
            self._agent.pause(limit - now)  # notices a stop, a signal, the agent's exit

    def _moving(self, wait: Callable[[float | None], _T], ends: float | None = None) -> _T:
        """wait(deadline) with the time budget's deadline as it stands, and again when a
        person moved a budget it ran out of meanwhile (`ptysup budget`); _Unanswered once
        `ends` (an --escalate-wait) passed."""
        while True:
            deadline = self._deadline
            bound = deadline if ends is None or (deadline is not None and deadline < ends) else ends
            try:
                return wait(bound)
            except TimeUp:
                now = self._clock()
                if ends is not None and now >= ends:
                    raise _Unanswered() from None
                if self._deadline is not None and now >= self._deadline:
                    raise
            except CostUp:
                self._cap_agent_cost()
                if self.limits.max_cost is not None and self._agent.cost_usd >= self._agent_cap():
                    raise

    def _open(self) -> TurnEnd | None:
        """Type what starts the run: the task or the first step. A resumed run types the
        person's answer (--say), else asks the supervisor at once (the turn returned)."""
        if self._cfg.resumed and self._cfg.say:
            self._once = (
                f"{self._resumed_note}\nA person answered, typed into the agent: {self._cfg.say}",
            )
            # A step waiting to begin starts once the answer's turn has ended (pending);
            # one under way counts its decisions from here.
            if self._steps is not None and not self._steps.pending():
                self._steps.opening(self.iterations)
            self._inject(self._cfg.say, kind="say")
            return None
        step = self._steps.opening(self.iterations) if self._steps else None
        if step is not None:
            self._start_step(step)
        elif not self._cfg.resumed:
            self._inject(self._cfg.task, kind="task")
        elif self._cfg.decided is None:  # else the decision is carried out (_carry_out)
            self._once = (self._resumed_note,)
            return TurnEnd(TurnEndKind.RESUMED, self._resumed_note)
        if self._cfg.resumed:
            self._once = (self._resumed_note,)
        return None

    def _carry_out(self, d: Decision) -> tuple[Outcome, str] | None:
        """A resumed run's decision its earlier part logged but never carried out: a
        [COMPLETE] is verified and ends the run, an [ABORT] ends it, an [ESCALATE] hands it
        to a person (without one it ends), as if just decided; no supervisor is asked."""
        self._log.emit(
            "decision_resumed", iteration=self.iterations, action=d.action.value, content=d.content
        )
        return self._act(self._path.carry_out(d, self.iterations, self._deadline))

    def _start_step(self, step: StepText) -> None:
        if step.clear:
            cleared = self._agent.clear(self._deadline, final=False)
            if cleared is None:
                self._log.emit("warning", message="the agent has no clear command: not cleared")
            self._log_clear(cleared)
        self._instruct(step.text, kind="step")

    def _log_clear(self, cleared: InjectResult | None) -> None:
        """The inject event of a /clear (nothing when the agent has no clear)."""
        if cleared is not None:
            self._log.emit(
                "inject",
                kind="command",
                text=cleared.text,
                confirmed=cleared.confirmed,
                attempts=cleared.attempts,
            )

    def _decide(self, turn: TurnEnd, question: str = "") -> Asked | None:
        """The supervisor's decision on `turn` (or on the agent's `question`); None when the
        person overtook it (their message, a pause): it is cancelled and logged so."""
        i = self.iterations
        person = self._agent.person
        prompts = person.prompts
        by = ""
        moment = Moment(i, self.limits.max_iter, self._elapsed())
        notes = self._notes() + self._wind_notes()
        try:
            asked: Asked | None = self._path.ask(
                self._view(turn, question), moment, notes, self._remaining()
            )
        except DecisionCancelled as exc:
            asked, by = None, str(exc)
        if asked is not None:
            self.cost_usd += asked.decided.answer.cost_usd or 0.0  # spent, even if overtaken
        if asked is None or person.prompts != prompts or person.paused:
            why = "the person's message" if person.prompts != prompts else by or "the person"
            self._log.emit("decision_cancelled", iteration=i, reason=f"overtaken by {why}")
            return None
        d = asked.decided.decision
        self._log.emit(
            "decision",
            iteration=i,
            max_iter=self.limits.max_iter,
            action=d.action.value,
            content=d.content,
            **_spent(asked.decided),
            warm=asked.decided.answer.warm,
            supervisor_cost_usd=round(self.cost_usd, 6),
            agent_cost_usd=round(self._agent.cost_usd, 6),
            total_cost_usd=self.cost,
            elapsed_s=self._elapsed(),
        )
        return asked

    def _check_budgets(self) -> None:
        """Raise _Stop once the iteration or cost budget is used up, TimeUp once the time
        budget is (a resumed run killed in its budget's stop starts past it)."""
        if self._deadline is not None and self._clock() >= self._deadline:
            raise TimeUp
        self._check_cost()
        why = self._steps.exhausted(self.iterations) if self._steps else None
        if why is not None:
            raise _Stop(*self._budget_stop(Outcome.BUDGET, why))
        if self.iterations >= self.limits.max_iter:
            raise _Stop(
                *self._budget_stop(
                    Outcome.BUDGET, f"iteration budget of {self.limits.max_iter} used up"
                )
            )

    def _check_cost(self) -> None:
        if self.limits.max_cost is not None and self.cost >= self.limits.max_cost:
            raise _Stop(*self._budget_stop(Outcome.COST, self._cost_reason()))

    def _cost_reason(self) -> str:
        return (
            f"cost budget of ${self.limits.max_cost} used up (${self.cost:.4f}: agent "
            f"${self._agent.cost_usd:.4f}, supervisor ${self.cost_usd:.4f})"
        )

    def _cap_agent_cost(self) -> None:
        """What the agent may still spend in its turn before the cost budget ends the run."""
        self._agent.cost_cap = None if self.limits.max_cost is None else self._agent_cap()

    def _agent_cap(self) -> float:
        return (self.limits.max_cost or 0.0) - self._earlier_cost - self.cost_usd

    def _budget_stop(self, outcome: Outcome, reason: str) -> tuple[Outcome, str]:
        self._log.emit("warning", message=reason)
        self._clear_and_end(self._clock() + HARD_STOP_S)
        return outcome, reason

    def _wait_out_api_error(self, detail: str) -> None:
        """Wait (a shown reset time, else backoff), then tell the agent to go on.

        The failed prompt stays in Claude Code's conversation, so only a short 'continue'
        is typed, never the prompt again.
        """
        if is_fatal_error(detail):
            raise ApiErrorNotWaited(
                f"the agent hit an error that waiting cannot fix (authentication or "
                f"configuration): {detail}"
            )
        delay = self._waits.next_wait(detail, self._now())
        if delay is None:
            raise ApiErrorNotWaited(f"the agent hit an API error and ptysup may not wait: {detail}")
        remaining = self._remaining()
        if remaining is not None and delay >= remaining:
            raise TimeUp()
        self._log.emit(
            "wait",
            reason=detail[:300],
            seconds=round(delay, 1),
            waits_used=self._waits.used,
            max_waits=self._waits.max_waits,
        )
        self._agent.pause(delay)
        self._inject(CONTINUE_AFTER_WAIT, kind="continue")

    def _limits(self) -> WindLimits:
        """The budgets as they stand now (a person may move them: `ptysup budget`): the
        wind-down's point moves with them."""
        limits = self.limits
        return WindLimits(limits.max_iter, limits.max_time, limits.max_cost)

    def _usage(self) -> Usage:
        return Usage(self.iterations, self._elapsed(), self.cost)

    def _wind_notes(self) -> tuple[str, ...]:
        """The supervisor's note of the last stretch (or of a raised budget that lifted
        the wind-down, logged)."""
        reading = self._wind.read(self._usage(), self._limits())
        if reading.lifted:
            self._log.emit("wind_down_lifted", iteration=self.iterations, **self._limits().fields())
        return reading.notes

    def _instruct(self, text: str, kind: str, failed: VerifyResult | None = None) -> None:
        """Type what a decision says; in the last stretch the wind-down goes with it, once:
        in the same message, so the agent reads it as part of its next turn, never as a
        turn of its own that the budget would have to pay for."""
        due = self._wind.due(self._usage(), self._limits()) if self.iterations else None
        said = text if due is None else f"{text}\n\n{agent_message(due)}"
        if self._inject(said, kind, failed) and due is not None:
            self._wind.told = True
            fraction = self._wind.fraction
            self._log.emit(
                "wind_down", iteration=self.iterations, fraction=fraction, kind=kind, **due.fields()
            )

    def _inject(self, text: str, kind: str, failed: VerifyResult | None = None) -> bool:
        """Type `text`; False when the person's own message came first (nothing typed)."""
        before = self._agent.snapshot().text()
        result = self._agent.submit(text, self._deadline)
        if result.superseded:
            # The person sent their own message while ptysup waited to type: theirs goes
            # first, and the supervisor is asked again at the end of their turn.
            self._log.emit("warning", message=f"not typed, the person's message came first: {kind}")
            return False
        self._log.emit(
            "inject",
            kind=kind,
            text=result.text,
            confirmed=result.confirmed,
            attempts=result.attempts,
            landed=result.landed,
        )
        self._typed = _Typed(
            text,
            _DECIDED_BY.get(kind),
            () if failed is None else (failed.describe(),),
            before,
            self._agent.person.prompts,
        )
        if not result.confirmed:
            self._log.emit("warning", message="the agent did not start a turn on the injection")
        return True

    def _view(self, turn: TurnEnd, question: str = "") -> TurnView:
        """What the agent did this turn, as the supervisor is shown it."""
        activity = self._agent.activity
        # Secrets never reach the supervisor (nor its model provider); redacting the parts
        # before building keeps the prompt within its bound. The whole screen is redacted
        # before its last lines are taken: a key cut at the excerpt's top would be kept.
        r = self._redact
        screen = "\n".join(r(self._agent.snapshot().text()).splitlines()[-SCREEN_LINES:])
        return TurnView(
            turn_end="the agent asks a question" if question else turn.kind.value,
            tools=tuple(r(t) for t in activity.tools),
            last_message=r(activity.last_message or turn.detail),
            screen=screen,
            question=r(question),
            dialog=turn.dialog,
        )

    def _notes(self) -> tuple[str, ...]:
        """The loop's notes for the next prompt (the plan, a resume, a repeat), redacted;
        the note of a resume is said once."""
        plan = self._steps.notes() if self._steps else ()
        notes = tuple(self._redact(n) for n in (*plan, *self._once, *self._repeat_note))
        self._once = ()
        return notes

    def _clear_and_end(self, deadline: float | None = None) -> None:
        """Interrupt a turn in progress, clear the conversation once (if the agent has a
        clear), then end the agent; every step within `deadline`."""
        self._release_question()
        self._interrupt(deadline)
        self._log_clear(self._agent.clear(deadline))
        self._end_agent(deadline)

    def _interrupt(self, deadline: float | None) -> None:
        stopped = self._agent.interrupt(deadline)
        if stopped is not None:
            self._log.emit("interrupt", confirmed=stopped)

    def _end_agent(self, deadline: float | None = None) -> None:
        self._release_question()
        if not self._agent.shutdown(deadline):
            self._log.emit("warning", message="the agent did not exit when asked; it was ended")

    def _remaining(self) -> float | None:
        return time_left(self._deadline, self._clock())

    def _elapsed(self) -> float:
        return round(self._clock() - self._start, 3)
