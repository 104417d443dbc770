"""Questions and escalation: reading AskUserQuestion, matching a reply to its options, and
the loop answering (or handing over) with a fake agent and a fake supervisor."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ptysup.agents.events import HookEvent, TurnEnd, TurnEndKind
from ptysup.agents.questions import Ask, Question, answers_for, ask_from, describe
from ptysup.exitcodes import Outcome
from tests.unit.test_loop import FakeAgent, _run

SINGLE = {
    "question": "Which storage?",
    "header": "Storage",
    "multiSelect": False,
    "options": [
        {"label": "SQLite", "description": "a file"},
        {"label": "Redis", "description": "a server"},
    ],
}
MULTI = {
    "question": "Which features?",
    "header": "Features",
    "multiSelect": True,
    "options": [{"label": "Logging"}, {"label": "Metrics"}, {"label": "Tracing"}],
}


class FakeReply:
    def __init__(self) -> None:
        self.sent: list[str] = []

    def send(self, text: str) -> bool:
        if self.sent:
            return False
        self.sent.append(text)
        return True

    def output(self) -> Any:
        return json.loads(self.sent[0])["hookSpecificOutput"] if self.sent[0] else None


def asking(*questions: Any) -> tuple[Ask, FakeReply]:
    reply = FakeReply()
    tool_input = {"questions": list(questions)}
    payload = {"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion"}
    ask = ask_from(HookEvent("PreToolUse", {**payload, "tool_input": tool_input}, 0.0, reply))
    assert ask is not None
    return ask, reply


def test_only_a_waiting_askuserquestion_hook_is_a_question() -> None:
    payload = {"tool_name": "AskUserQuestion", "tool_input": {"questions": [SINGLE]}}
    assert ask_from(HookEvent("PreToolUse", payload, 0.0)) is None  # nobody waits for it
    bash = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert ask_from(HookEvent("PreToolUse", bash, 0.0, FakeReply())) is None
    ask, _ = asking(SINGLE, {"no": "question text"}, "junk")
    assert [q.text for q in ask.questions] == ["Which storage?"]
    assert ask.questions[0].options[1].description == "a server"


@pytest.mark.parametrize(
    ("reply", "single", "multi"),
    [
        ("sqlite", "SQLite", "sqlite"),
        ("  REDIS ", "Redis", "REDIS"),
        ("logging, metrics", "logging, metrics", "Logging, Metrics"),
        ("Tracing,Logging", "Tracing,Logging", "Tracing, Logging"),
        ("logging, and more", "logging, and more", "logging, and more"),
        ("whatever is simplest", "whatever is simplest", "whatever is simplest"),
    ],
)
def test_a_reply_selects_labels_case_insensitively_else_is_free_text(
    reply: str, single: str, multi: str
) -> None:
    ask, _ = asking(SINGLE)
    assert answers_for(ask.questions, reply) == {"Which storage?": single}
    ask, _ = asking(MULTI)
    assert answers_for(ask.questions, reply) == {"Which features?": multi}


def test_one_line_per_question_answers_each_in_turn() -> None:
    ask, _ = asking(SINGLE, MULTI)
    assert answers_for(ask.questions, "redis\nmetrics,tracing") == {
        "Which storage?": "Redis",
        "Which features?": "Metrics, Tracing",
    }
    assert answers_for(ask.questions, "one answer") == {
        "Which storage?": "one answer",
        "Which features?": "one answer",
    }


def test_describe_shows_header_options_descriptions_and_kind() -> None:
    text = describe((Question("Which storage?", "Storage"),))
    assert text.startswith("Question 1 [Storage]: Which storage?")
    ask, _ = asking(SINGLE, MULTI)
    text = describe(ask.questions)
    assert "- SQLite: a file" in text and "choose one" in text
    assert "Question 2 [Features]: Which features?" in text and "several may be chosen" in text


def test_answers_go_back_as_the_hook_output_claude_code_reads() -> None:
    ask, reply = asking(SINGLE)
    assert ask.answer({"Which storage?": "SQLite"})
    out = reply.output()
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "allow"
    assert out["updatedInput"] == {"questions": [SINGLE], "answers": {"Which storage?": "SQLite"}}
    assert not ask.deny("later")  # the first reply counts


def test_the_loop_asks_the_supervisor_and_answers_with_its_choice() -> None:
    agent = FakeAgent()
    ask, reply = asking(SINGLE)
    agent.turn_ends = [ask]
    result, agent, sup, rec = _run(["[CONTINUE] redis", "[COMPLETE] done"], agent=agent)
    assert result.outcome is Outcome.COMPLETE and result.iterations == 2
    assert reply.output()["updatedInput"]["answers"] == {"Which storage?": "Redis"}
    assert "Question 1 [Storage]: Which storage?" in sup.prompts[0]
    assert "The agent is asking a question" in sup.prompts[0]
    assert "Question 1" not in sup.prompts[1]
    assert agent.typed == ["the task"]  # the answer went through the hook, nothing typed
    names = rec.names()
    assert names.index("question") < names.index("decision") < names.index("answer")
    answer = next(e.fields for e in rec.events if e.event == "answer")
    assert (answer["by"], answer["delivered"]) == ("supervisor", True)


def test_a_question_counts_against_the_budget_and_is_refused_when_it_runs_out() -> None:
    agent = FakeAgent()
    ask, reply = asking(SINGLE)
    agent.turn_ends = [TurnEnd(TurnEndKind.STOP, "one"), ask]
    result, agent, sup, _ = _run(["[CONTINUE] go on", "[CONTINUE] sqlite"], 2, agent=agent)
    assert result.outcome is Outcome.BUDGET and len(sup.prompts) == 2
    assert reply.output()["permissionDecision"] == "deny"  # before /clear was typed
    assert agent.typed[-1] == "/clear"


def test_questions_left_to_a_person_reply_nothing_and_cost_no_decision() -> None:
    agent = FakeAgent()
    ask, reply = asking(SINGLE)
    agent.turn_ends = [ask]
    result, _, sup, rec = _run(["[COMPLETE] done"], agent=agent, questions="person")
    assert reply.sent == [""]
    assert len(sup.prompts) == 1 and result.iterations == 1
    question = next(e.fields for e in rec.events if e.event == "question")
    assert question["to"] == "person"


def test_escalate_without_a_person_ends_at_once_with_exit_7_and_no_clear() -> None:
    result, agent, sup, rec = _run(["[ESCALATE] needs the API key", "[CONTINUE] never"])
    assert (result.outcome, result.exit_code) == (Outcome.ESCALATED, 7)
    assert result.reason == "needs the API key"
    assert len(sup.prompts) == 1
    assert "/clear" not in agent.typed and agent.shut_down
    escalation = next(e.fields for e in rec.events if e.event == "escalation")
    assert escalation == {
        "iteration": 1,
        "reason": "needs the API key",
        "at": "turn_end",
        "waiting": False,
    }


def test_escalating_a_question_without_a_person_refuses_it_before_ending() -> None:
    agent = FakeAgent()
    ask, reply = asking(SINGLE)
    agent.turn_ends = [ask]
    result, agent, _, _ = _run(["[ESCALATE] a person must pick"], agent=agent)
    assert result.outcome is Outcome.ESCALATED
    assert reply.output()["permissionDecision"] == "deny"
    assert reply.output()["permissionDecisionReason"].endswith("a person must pick")
    assert "/clear" not in agent.typed


@pytest.mark.parametrize(
    ("answer", "refusal"),
    [
        (
            "[ABORT] deleting is not allowed",
            "The supervisor stopped the run: deleting is not allowed",
        ),
        ("[COMPLETE] all done", "The supervisor ended the run as complete: all done"),
        ("[ESCALATE] a person must pick", "Only a person can answer this; the run stops here: "),
    ],
)
def test_every_refusal_of_a_question_is_logged_as_ptysups_answer(answer: str, refusal: str) -> None:
    agent = FakeAgent()
    ask, reply = asking(SINGLE)
    agent.turn_ends = [ask]
    _, _, _, rec = _run([answer], agent=agent)
    answers = [e.fields for e in rec.events if e.event == "answer"]
    assert len(answers) == 1 and answers[0]["by"] == "ptysup"
    assert answers[0]["refused"].startswith(refusal)
    assert reply.output()["permissionDecision"] == "deny"


def test_escalate_with_a_person_waits_for_their_turn_then_supervises_again() -> None:
    agent = FakeAgent()
    ask, reply = asking(SINGLE)
    agent.turn_ends = [TurnEnd(TurnEndKind.STOP, "1"), ask, TurnEnd(TurnEndKind.STOP, "2")]
    result, agent, sup, _ = _run(
        ["[ESCALATE] which key?", "[ESCALATE] you pick", "[COMPLETE] ok"],
        agent=agent,
        person_present=True,
    )
    assert result.outcome is Outcome.COMPLETE and len(sup.prompts) == 3
    assert agent.person_turns == 1  # after the turn-end escalation only
    assert reply.sent == [""]  # the picker was left to the person
    assert agent.typed == ["the task"]  # the person typed; ptysup did not


def test_an_escalation_on_the_last_iteration_ends_with_the_budget_after_the_persons_turn() -> None:
    result, agent, sup, _ = _run(["[ESCALATE] help", "[COMPLETE]"], 1, person_present=True)
    assert result.outcome is Outcome.BUDGET and len(sup.prompts) == 1
    assert agent.person_turns == 1
