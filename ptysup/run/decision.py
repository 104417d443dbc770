"""The decision at a turn end, in one place: the evidence ptysup gathers, the judge (the
supervisor), then what a [COMPLETE] must pass before it counts — the checks, the tamper
guard and, after them, a second opinion. The run loop hands over what the agent did (a
`TurnView`) and acts on the `Verdict`; it knows nothing of how the verdict was reached.

Two steps, because a person may overtake a decision between them (the loop drops the
answer then, and nothing is checked):

    asked = path.ask(view, moment, notes, timeout)   # evidence → prompt → judge
    verdict = path.settle(asked, deadline)           # checks → tamper guard → second opinion

The seams, each a small protocol with a do-nothing default:
- `Evidence.gather()`: the section of the prompt ptysup writes itself (the run so far,
  what changed in the files, the checks); `ptysup.run.evidence.RunEvidence` in a run.
- `Guard.check(commands, deadline)`: the tamper guard (`ptysup.run.tamper.TamperGuard`).
- `SecondOpinion.review(asked, deadline)`: asked only once the judge said [COMPLETE] and
  every check passed; its answer decides (see `settle`): `ptysup.run.second.SecondJudge`
  with `--second-opinion`.

A replay of recorded turn ends (a judge's benchmark) builds a `DecisionPath` with its own
judge — any supervisor command behind `ptysup.supervisor.decide.Supervisor` — and calls
the same two steps per case: the start of the case's project from
`ptysup.run.startstate.prepare` (the checks' baseline, the first snapshot, the protected
files), its recorded events replayed into a `Journal` (`ptysup.run.evidence`), then
`RunEvidence` and `TamperGuard` over that project, or an `Evidence` that returns the text
a run recorded (`Asked.evidence`). `Verdict.kind` maps to the outcome: DONE complete,
CONTINUE and REFUSED continue, ESCALATE escalate, ABORT abort.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ptysup.events import EventLog
from ptysup.run.tamper import Finding
from ptysup.run.tamper import Verdict as Tamper
from ptysup.run.verify import Verify, VerifyResult
from ptysup.supervisor.decide import Decided
from ptysup.supervisor.parse import Action, Decision
from ptysup.supervisor.prompt import DEFAULT_MAX_BYTES, PromptContext, build_prompt, system_prompt

Command = tuple[str, ...]
TAMPER_LIMIT = 2  # tampering found this many times escalates the run


class Judge(Protocol):
    """The supervisor as a decision asks it (`ptysup.supervisor.decide.Supervisor`)."""

    def decide(
        self, prompt: str, iteration: int, timeout: float | None = None, system: str | None = None
    ) -> Decided: ...

    def prepare(self, system: str | None = None) -> None: ...


class Evidence(Protocol):
    """The part of every prompt ptysup writes from what it saw itself."""

    def gather(self) -> str:
        """The evidence section's text now (bounded; empty: none)."""
        ...


class Guard(Protocol):
    """What protects "done" from an agent that changes the checks' own files."""

    def check(self, commands: Sequence[Command], deadline: float | None = None) -> Finding | None:
        """None when nothing protected changed; else what the checks say without it."""
        ...


class Keeper(Protocol):
    """Where each judged turn end is kept (`ptysup.run.turns.TurnLog`)."""

    def keep(self, task: str, asked: Asked, checks: Sequence[Command]) -> None:
        """Keep the turn `asked` judged, whose [COMPLETE] had to pass `checks`."""
        ...


class SecondOpinion(Protocol):
    """Another supervisor asked before a [COMPLETE] counts (`ptysup.run.second`)."""

    name: str  # how events and escalations name it: its command line

    def review(self, asked: Asked, deadline: float | None = None) -> Decided | None:
        """Its answer to `asked.prompt`; None when it was not asked (it agrees)."""
        ...


class _NoEvidence:
    def gather(self) -> str:
        return ""


@dataclass(frozen=True)
class TurnView:
    """What the agent did in the turn being judged, as ptysup read it (redacted)."""

    turn_end: str  # how the turn ended: stop, quiet, stalled, … or a question
    tools: tuple[str, ...] = ()
    last_message: str = ""
    screen: str = ""
    question: str = ""  # the agent's question(s), described, when it asks
    dialog: bool = False  # the turn stalled on a dialog no one answered


@dataclass(frozen=True)
class Moment:
    """Where the run stands at the decision."""

    iteration: int
    max_iter: int
    elapsed_s: float


@dataclass(frozen=True)
class PromptSettings:
    """How prompts are built: the task (redacted), the bound, the template, and whether the
    unchanging part goes as the supervisor's system prompt."""

    task: str
    max_bytes: int = DEFAULT_MAX_BYTES
    template: str | None = None
    split: bool = False


@dataclass(frozen=True)
class Asked:
    """One decision asked: what the judge was given, and its answer."""

    view: TurnView
    moment: Moment
    prompt: str
    system: str | None
    evidence: str
    decided: Decided
    notes: tuple[str, ...] = ()  # the prompt's notes (the loop's, then the path's own)
    # The prompt with the instructions and task in it, for a second opinion that takes
    # no system prompt (`prompt` itself when `system` is None).
    whole: str = ""


class VerdictKind(str, enum.Enum):
    """What the run does next."""

    DONE = "done"  # [COMPLETE], and every check passed: the run (or the step) is done
    CONTINUE = "continue"  # type `text` into the agent
    REFUSED = "refused"  # [COMPLETE] refused: type `text` (why) into the agent
    ABORT = "abort"
    ESCALATE = "escalate"  # a person must go on: `text` says why


# The verdict of each answer but [COMPLETE], which must earn it.
_KINDS = {
    Action.CONTINUE: VerdictKind.CONTINUE,
    Action.ABORT: VerdictKind.ABORT,
    Action.ESCALATE: VerdictKind.ESCALATE,
}


@dataclass(frozen=True)
class Verdict:
    """The decision as the run acts on it."""

    kind: VerdictKind
    text: str
    by: str = "supervisor"  # who decided: supervisor, verify, tamper, second_opinion
    failed: VerifyResult | None = None  # REFUSED: the failing check behind it
    second: Decided | None = None  # the second opinion's answer, when one was asked
    cost_usd: float = 0.0  # spent deciding beyond the judge's own answer


class DecisionPath:
    """Evidence → prompt → judge → checks → tamper guard → second opinion."""

    def __init__(
        self,
        judge: Judge,
        log: EventLog,
        settings: PromptSettings,
        *,
        evidence: Evidence | None = None,
        gates: Callable[[], Sequence[Verify]] = lambda: (),
        guard: Guard | None = None,
        second: SecondOpinion | None = None,
        redact: Callable[[str], str] = lambda text: text,
        tampered: int = 0,
        keep: Keeper | None = None,
    ) -> None:
        self._judge = judge
        self._log = log
        self._settings = settings
        self._evidence = evidence or _NoEvidence()
        self._gates = gates
        self._guard = guard
        self._second = second
        self._redact = redact
        self._notes: tuple[str, ...] = ()  # the last refusal, for the next prompts
        self._tampered = tampered  # [COMPLETE]s refused for tampering so far (a resume's too)
        self._keep = keep
        # The unchanging part of every prompt, for a judge that takes a system prompt.
        self.system = system_prompt(settings.task) if settings.split else None

    @property
    def second_name(self) -> str | None:
        """The second opinion's name (its command line), if there is one."""
        return None if self._second is None else self._second.name

    def prepare(self) -> None:
        """Get the judge of the next decision ready ahead of time."""
        self._judge.prepare(self.system)

    def ask(
        self,
        view: TurnView,
        moment: Moment,
        notes: Sequence[str] = (),
        timeout: float | None = None,
    ) -> Asked:
        """Gather the evidence, build the prompt, ask the judge. Raises what the judge
        raises (DecisionCancelled, SupervisorFailed, …)."""
        evidence = self._redact(self._evidence.gather())
        notes = (*notes, *(self._redact(n) for n in self._notes))
        ctx = PromptContext(
            task=self._settings.task,
            iteration=moment.iteration,
            max_iter=moment.max_iter,
            elapsed_s=moment.elapsed_s,
            turn_end=view.turn_end,
            tools=view.tools,
            last_message=view.last_message,
            screen=view.screen,
            notes=notes,
            question=view.question,
            dialog=view.dialog,
            evidence=evidence,
        )
        s = self._settings
        prompt = build_prompt(ctx, s.max_bytes, s.template, s.split)
        decided = self._judge.decide(prompt, moment.iteration, timeout, system=self.system)
        whole = prompt
        if s.split and self._second is not None:
            whole = build_prompt(ctx, s.max_bytes, s.template, split=False)
        asked = Asked(view, moment, prompt, self.system, evidence, decided, notes, whole)
        if self._keep is not None:
            self._keep.keep(s.task, asked, self._commands())
        return asked

    def _commands(self) -> list[Command]:
        """The commands a [COMPLETE] must pass now, each once."""
        return list(dict.fromkeys(c for g in self._gates() if g.commands for c in g.commands))

    def settle(self, asked: Asked, deadline: float | None = None) -> Verdict:
        """What the run does with the judge's answer: a [COMPLETE] counts only when the
        checks pass, the tamper guard finds nothing against it, and a second opinion (if
        any) agrees. A stop signal raises Interrupted, the time budget TimeUp."""
        d = asked.decided.decision
        if d.action is not Action.COMPLETE:
            return Verdict(_KINDS[d.action], d.content)
        refused = self._checked(asked.moment.iteration, deadline)
        return refused if refused is not None else self._reviewed(asked, deadline)

    def carry_out(self, d: Decision, iteration: int, deadline: float | None = None) -> Verdict:
        """A decision an earlier part of a resumed run logged but never carried out, as if
        just made: a [COMPLETE] must pass the checks and the tamper guard; no supervisor
        (and no second opinion: its prompt is gone with that part) is asked again."""
        if d.action is not Action.COMPLETE:
            return Verdict(_KINDS[d.action], d.content)
        refused = self._checked(iteration, deadline)
        return refused if refused is not None else Verdict(VerdictKind.DONE, d.content)

    def _checked(self, iteration: int, deadline: float | None) -> Verdict | None:
        """A [COMPLETE]'s refusal by the checks or the tamper guard; None: it stands."""
        gates = [g for g in self._gates() if g.commands]
        failed = self._verify(gates, iteration, deadline)
        if failed is not None:
            return Verdict(VerdictKind.REFUSED, failed.instruction(), "verify", failed)
        return self._guarded(gates, iteration, deadline)

    def _verify(
        self, gates: Sequence[Verify], iteration: int, deadline: float | None
    ) -> VerifyResult | None:
        """The first failing check of `gates`, or None when all pass (or there are none);
        each run is a `verify` event, a failure a note for the next prompts."""
        for result in (r for g in gates for r in g.run(deadline)):
            self._log.emit(
                "verify",
                iteration=iteration,
                command=list(result.command),
                exit_code=result.exit_code,
                passed=result.passed,
                duration_s=result.duration_s,
                output_tail=result.output_tail[-1000:],
            )
            if not result.passed:
                self._notes = (
                    f"Last verification (after iteration {iteration}'s [COMPLETE]): "
                    f"{result.describe()}; its output ends:\n{result.output_tail[-800:]}",
                )
                return result
        self._notes = ()
        return None

    def _guarded(
        self, gates: Sequence[Verify], iteration: int, deadline: float | None
    ) -> Verdict | None:
        """The tamper guard's verdict on a [COMPLETE] whose checks passed: None lets it
        stand; a refusal, or (the second time) an escalation."""
        if self._guard is None:
            return None
        commands = list(dict.fromkeys(c for g in gates for c in g.commands))
        finding = self._guard.check(commands, deadline)
        if finding is None:
            return None
        fields = {"iteration": iteration, "files": list(finding.files)}
        if finding.verdict is not Tamper.FAILED:
            self._log.emit("tamper", **fields, verdict=finding.verdict.value, reason=finding.why)
            if finding.verdict is Tamper.UNCHECKED:
                self._log.emit(
                    "warning",
                    message="the tamper guard could not check the changed protected files "
                    f"({', '.join(finding.files) or '?'}): {finding.why}",
                )
            return None
        self._tampered += 1
        escalate = self._tampered >= TAMPER_LIMIT
        failed = finding.failed
        assert failed is not None
        self._log.emit(
            "tamper",
            **fields,
            verdict="escalated" if escalate else "refused",
            command=list(failed.command),
            exit_code=failed.exit_code,
            output_tail=failed.output_tail[-1000:],
        )
        self._notes = (
            f"ptysup refused iteration {iteration}'s [COMPLETE]: the agent changed protected "
            f"files ({', '.join(finding.files)}), and with the originals {failed.describe()}.",
        )
        if escalate:
            return Verdict(VerdictKind.ESCALATE, finding.reason(), "tamper", failed)
        return Verdict(VerdictKind.REFUSED, finding.instruction(), "tamper", failed)

    def _reviewed(self, asked: Asked, deadline: float | None) -> Verdict:
        """[COMPLETE] with every check passed: done, unless a second opinion differs.
        Its [CONTINUE] goes to the agent; its [ABORT] or [ESCALATE] escalates the run with
        both opinions; its [COMPLETE] (or no second opinion) is done."""
        done = Verdict(VerdictKind.DONE, asked.decided.decision.content)
        if self._second is None:
            return done
        second = self._second.review(asked, deadline)
        if second is None:
            return done
        cost = second.answer.cost_usd or 0.0
        d = second.decision
        if d.action is Action.COMPLETE:
            return Verdict(VerdictKind.DONE, done.text, second=second, cost_usd=cost)
        if d.action is Action.CONTINUE:
            return Verdict(VerdictKind.CONTINUE, d.content, "second_opinion", None, second, cost)
        both = (
            f"the supervisor said [COMPLETE] ({done.text}); the second opinion "
            f"({self._second.name}) said [{d.action.value.upper()}] ({d.content})"
        )
        return Verdict(VerdictKind.ESCALATE, both, "second_opinion", None, second, cost)
