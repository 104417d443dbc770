"""Plans, resume and the runs listing against the real Claude Code and the fake model."""

from __future__ import annotations

import functools
import io
import json
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.fakemodel import RequestKind
from ptysup.views.replay import main as replay_main
from tests.e2e.conftest import AGENT, UNSAVED, Rig
from tests.helpers import Run, Tmux, ptysup_argv, read_events, terminal_script, wait_for

pytestmark = pytest.mark.e2e

PLAN = """\
goal: Build the two files
max-iter: 12
steps:
  - id: first
    do: Create a.txt
    verify: test -f a.txt
  - id: second
    do: Create b.txt
    verify: [test -f a.txt, test -f b.txt]
    clear: true
"""


def _writes(name: str) -> list[dict[str, Any]]:
    """An agent turn that writes NAME, then says so."""
    write = {"file_path": "{workdir}/" + name, "content": name[0] + "\n"}
    return [{"tool": "Write", "input": write}, {"text": f"Wrote {name}."}]


# Step 2's first turn writes nothing: the supervisor's early [COMPLETE] fails the step's
# gate, and only the verification message makes the agent write b.txt.
TWO_STEPS: dict[str, Any] = {
    "agent": [
        {
            "match": "Verification failed",
            "steps": _writes("b.txt"),
        },
        {
            "match": "Step 1/2",
            "steps": _writes("a.txt"),
        },
        {"match": "Step 2/2", "reply": "Looking at step 2."},
        {"reply": "Okay."},
    ],
    "supervisor": [{"reply": "[COMPLETE] the step is done"}],
}


def _run(r: Rig, *args: str, timeout: float = 180) -> Run:
    proc = r.ptysup(*args, timeout=timeout)
    return Run(proc.returncode, proc.stdout, proc.stderr, r.log)


def _plan(r: Rig, text: str = PLAN) -> str:
    (r.project / "plan.yaml").write_text(text)
    return "plan.yaml"


def test_a_two_step_plan_gates_each_step_and_clears_before_the_second(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(TWO_STEPS)
    summary = tmp_path / "summary.json"
    plan = _plan(r)
    run = _run(
        r,
        "--plan", plan, "--agent-cmd", AGENT, "--log-file", str(r.log),
        "--summary-json", str(summary),
    )  # fmt: skip
    assert run.code == 0, run.stdout + run.stderr
    starts = run.named("step_start")
    assert [(s["id"], s["index"], s["of"]) for s in starts] == [("first", 1, 2), ("second", 2, 2)]
    ends = run.named("step_end")
    assert [(e["id"], e["outcome"]) for e in ends] == [
        ("first", "complete"),
        ("second", "complete"),
    ]
    assert [e["iterations"] for e in ends] == [1, 2]
    # The step's own gate held the early [COMPLETE] of step 2 back.
    verifies = [(v["command"], v["passed"]) for v in run.named("verify")]
    assert verifies == [
        (["test", "-f", "a.txt"], True),
        (["test", "-f", "a.txt"], True),
        (["test", "-f", "b.txt"], False),
        (["test", "-f", "a.txt"], True),
        (["test", "-f", "b.txt"], True),
    ]
    # The agent got the steps in order, with the goal; /clear reached Claude Code between them.
    texts = r.human_texts()
    assert texts[0] == "Build the two files\n\nStep 1/2 (first): Create a.txt"
    # (Claude Code puts its note about the /clear command before the next prompt.)
    assert texts[1].endswith("\nBuild the two files\n\nStep 2/2 (second): Create b.txt")
    assert texts[2].startswith("Verification failed: `test -f b.txt` exited 1")
    events = run.events
    order = [
        e["event"]
        for e in events
        if (e["event"], e.get("id")) == ("step_end", "first")
        or (e["event"], e.get("name"), e.get("source")) == ("hook", "SessionStart", "clear")
        or ((e["event"], e.get("kind")) == ("inject", "step") and "Step 2/2" in e["text"])
    ]
    assert order == ["step_end", "hook", "inject"]
    assert [i["confirmed"] for i in run.named("inject") if i["text"] == "/clear"] == [True]
    # A fresh context: the step-2 request no longer holds step 1's message.
    step2 = next(q for q in r.model.requests_of(RequestKind.AGENT) if "Step 2/2" in q.human_text)
    assert "Step 1/2" not in json.dumps(step2.body["messages"])
    # The supervisor saw the plan with each step's state and the current step's gate.
    sup = [q.human_text for q in r.model.requests_of(RequestKind.SUPERVISOR)]
    assert "- step 1/2 first: current" in sup[0] and "- step 2/2 second: pending" in sup[0]
    assert "- step 1/2 first: done" in sup[1] and "Current step (second): Create b.txt" in sup[1]
    assert "Its last verification: `test -f b.txt` exited 1" in sup[2]
    data = json.loads(summary.read_text())
    assert [(s["id"], s["outcome"]) for s in data["steps"]] == [
        ("first", "complete"),
        ("second", "complete"),
    ]


def test_a_steps_max_iter_used_up_exits_3_naming_the_step(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"reply": "Hmm."}], "supervisor": [{"reply": "[CONTINUE] keep going"}]})
    plan = _plan(r, "steps:\n  - id: stuck\n    do: Try it\n    max_iter: 2\n  - do: never\n")
    run = _run(r, "--plan", plan, "--agent-cmd", AGENT, "--log-file", str(r.log))
    assert run.code == 3, run.stdout + run.stderr
    end = run.events[-1]
    assert end["outcome"] == "budget" and "step 'stuck' used its 2 iteration(s)" in end["reason"]
    assert len(run.named("decision")) == 2
    assert [(e["id"], e["outcome"]) for e in run.named("step_end")] == [("stuck", "budget")]


def test_check_accepts_a_good_plan_and_points_at_the_bad_line(rig: Callable[..., Rig]) -> None:
    r = rig({"agent": [{"reply": "x"}]})
    _plan(r)
    good = _run(r, "check", "plan.yaml")
    assert good.code == 0 and "2 step(s): first, second" in good.stdout
    _plan(r, PLAN.replace("    clear: true", "    claer: true"))
    bad = _run(r, "check", "plan.yaml")
    assert bad.code == 2
    assert bad.stderr == (
        "ptysup: plan.yaml:10: unknown key `claer` in step 2 (did you mean `clear`?)\n"
    )
    # A run loads the plan with the same loader: the same line, nothing started.
    run = _run(r, "--plan", "plan.yaml", "--agent-cmd", AGENT, "--log-file", str(r.log))
    assert run.code == 2 and "plan.yaml:10: unknown key `claer`" in run.stderr
    assert not r.log.exists() and not r.model.requests_of(RequestKind.AGENT)


def _popen(r: Rig, *args: str) -> subprocess.Popen[str]:
    return r.start(*args, "--agent-cmd", AGENT)


def _the_run(r: Rig) -> Path:
    (run_dir,) = (r.project / ".ptysup" / "runs").iterdir()
    return run_dir


def _transcribed(r: Rig, text: str) -> bool:
    """Whether Claude Code's transcript of this run's conversation holds `text`."""
    (run_json,) = (r.project / ".ptysup" / "runs").glob("*/run.json")
    session = json.loads(run_json.read_text())["session_id"]
    files = Path(r.env["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{session}.jsonl")
    return any(text in f.read_text(errors="replace") for f in files)


RESUMED = "has just been resumed"
KILLED_IN_STEP_2: dict[str, Any] = {
    "agent": [
        {"match": "Step 2/2", "times": 1, "delay": 300, "reply": "never seen"},
        {
            "match": "finish step 2",
            "steps": _writes("b.txt"),
        },
        {
            "match": "Step 1/2",
            "steps": _writes("a.txt"),
        },
    ],
    "supervisor": [
        {"match": RESUMED, "reply": "[CONTINUE] Please finish step 2 now."},
        {"reply": "[COMPLETE] done"},
    ],
}


def test_kill_9_in_step_2_then_resume_keeps_the_conversation_and_the_budget(
    rig: Callable[..., Rig],
) -> None:
    r = rig(KILLED_IN_STEP_2)
    plan = _plan(r, PLAN.replace("    clear: true\n", ""))
    proc = _popen(r, "--plan", plan)
    try:
        r.model.wait_for(lambda q: "Step 2/2" in q.human_text, timeout=120)
        # Claude Code writes a prompt to its transcript some 100 ms after sending it; a
        # prompt not yet written is not in the resumed conversation (the supervisor, told
        # of the interruption and shown the step, types it again).
        wait_for(lambda: _transcribed(r, "Step 2/2"), 30, "step 2's prompt in the transcript")
    finally:
        proc.kill()  # SIGKILL: no run_end, no step_end, nothing tidied
        proc.wait(timeout=30)
    run_dir = _the_run(r)
    log = run_dir / "events.jsonl"
    before = read_events(log)
    assert before[-1]["event"] != "run_end"
    session = json.loads((run_dir / "run.json").read_text())["session_id"]
    assert [e["session_id"] for e in before if e["event"] == "agent_start"] == [session]
    wait_for(lambda: not r.leftovers(), 30, "the killed run's Claude Code to exit")
    (row,) = json.loads(_run(r, "runs", "--json").stdout)
    assert (row["state"], row["step"], row["step_index"], row["steps_of"]) == (
        "crashed",
        "second",
        2,
        2,
    )
    assert (row["steps_done"], row["iterations"], row["max_iter"]) == (["first"], 1, 12)

    resumed = _run(r, "resume", "--agent-cmd", AGENT)
    assert resumed.code == 0, resumed.stdout + resumed.stderr
    events = read_events(log)
    assert [e["event"] for e in events].count("run_start") == 1
    assert [e["event"] for e in events if e["event"].startswith("run_")] == [
        "run_start",
        "run_resume",
        "run_end",
    ]
    resume = next(e for e in events if e["event"] == "run_resume")
    assert (resume["iterations"], resume["step"], resume["session_id"]) == (1, "second", session)
    # The same conversation: Claude Code was resumed, and its next request held every turn.
    after = events[events.index(resume) :]
    assert [e["session_id"] for e in after if e["event"] == "agent_start"] == [session]
    finish = r.model.wait_for(lambda q: "finish step 2" in q.human_text, timeout=1)
    held = json.dumps(finish.body["messages"])
    missing = [
        t for t in ("Step 1/2 (first)", "Wrote a.txt.", "Step 2/2 (second)") if t not in held
    ]
    assert not missing, (finish.kind, missing, held[-3000:])
    # The supervisor was asked first and told the run was interrupted; no step text retyped.
    assert next(t["kind"] for t in after if t["event"] == "turn_end") == "resumed"
    assert [i["kind"] for i in after if i["event"] == "inject"] == ["instruction"]
    sup = r.model.requests_of(RequestKind.SUPERVISOR)
    assert RESUMED in sup[1].human_text and "Current step (second)" in sup[1].human_text
    # Budgets span both parts: 1 decision before the kill, 2 after, one total of each.
    decisions = [e for e in events if e["event"] == "decision"]
    assert [d["iteration"] for d in decisions] == [1, 2, 3]
    end = events[-1]
    assert (end["outcome"], end["iterations"]) == ("complete", 3)
    # The run's cost: the first part's total (at least its last decision's: the agent's
    # spend reported after it counts too), plus what the agent and the supervisor spent
    # in the second part.
    assert end["supervisor_cost_usd"] == pytest.approx(sum(d["cost_usd"] for d in decisions[1:]))
    assert end["agent_cost_usd"] > 0
    first_part = resume["cost_usd"]
    assert first_part >= decisions[0]["total_cost_usd"]
    assert end["cost_usd"] == pytest.approx(
        first_part + end["agent_cost_usd"] + end["supervisor_cost_usd"]
    )
    assert end["elapsed_s"] >= before[-1]["ts"] - before[0]["ts"]
    assert [(e["id"], e["outcome"]) for e in events if e["event"] == "step_end"] == [
        ("first", "complete"),
        ("second", "complete"),
    ]
    assert (r.project / "b.txt").exists()
    # Each part kept its own recording; replay shows every decision's screen.
    assert resume["record"] == str(run_dir / "events.part2.cast")
    out = io.StringIO()
    assert replay_main([str(run_dir)], out) == 0
    shown = out.getvalue()
    assert "decision 1/12: complete" in shown and "decision 3/12: complete" in shown
    assert "Wrote a.txt." in shown.split("decision 2/12")[0]
    assert "(no recording of this screen)" not in shown


def test_a_spent_budget_is_raised_on_the_resume_command_line(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [{"reply": "Working on it."}],
            "supervisor": [
                {"match": RESUMED, "reply": "[COMPLETE] fine now"},
                {"reply": "[CONTINUE] go on"},
            ],
        }
    )
    # The events go elsewhere (--log-file): resume finds them through the run's run.json.
    first = _run(
        r, "do the thing", "--max-iter", "1", "--agent-cmd", AGENT, "--log-file", str(r.log)
    )
    assert first.code == 3
    refused = _run(r, "resume")
    assert refused.code == 2
    assert refused.stderr.startswith("ptysup: run ") and "used its 1 iteration:" in refused.stderr
    assert "--max-iter" in refused.stderr and refused.stderr.count("\n") == 1
    resumed = _run(r, "resume", "last", "--max-iter", "3", "--say", "use the second approach")
    assert resumed.code == 0, resumed.stdout + resumed.stderr
    events = read_events(r.log)
    assert not (_the_run(r) / "events.jsonl").exists()
    resume = next(e for e in events if e["event"] == "run_resume")
    assert (resume["max_iter"], resume["said"]) == (3, "use the second approach")
    # The person's answer was typed first, then the supervisor decided, told of the interruption.
    after = events[events.index(resume) :]
    assert [i["text"] for i in after if i["event"] == "inject"] == ["use the second approach"]
    assert "use the second approach" in r.human_texts()[-1]
    sup = r.model.requests_of(RequestKind.SUPERVISOR)[-1].human_text
    assert RESUMED in sup and "Iteration 2/3" in sup
    assert (events[-1]["outcome"], events[-1]["iterations"]) == ("complete", 2)
    again = _run(r, "resume")
    assert (again.code, again.stderr) == (
        2,
        f"ptysup: run {_the_run(r).name} is already complete\n",
    )


def test_a_live_run_is_refused_and_runs_lists_every_state(rig: Callable[..., Rig]) -> None:
    r = rig(
        {
            "agent": [{"match": "slow", "delay": 300, "reply": "x"}, {"reply": "Done."}],
            "supervisor": [{"reply": "[COMPLETE] ok"}],
        }
    )
    done = _run(r, "quick task", "--agent-cmd", AGENT)
    assert done.code == 0
    proc = _popen(r, "slow task")
    try:
        r.model.wait_for(lambda q: "slow" in q.human_text, timeout=120)
        refused = _run(r, "resume", "last")
        assert refused.code == 2
        assert refused.stderr.endswith(f"is still running (pid {proc.pid})\n")
        listing = _run(r, "runs", "--json")
        rows = json.loads(listing.stdout)
        assert [(row["state"], row["task"]) for row in rows] == [
            ("working", "slow task"),
            ("done", "quick task"),
        ]
        assert rows[0]["pid"] == proc.pid and rows[1]["iterations"] == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    text = _run(r, "runs")
    lines = text.stdout.splitlines()
    head = ["RUN", "STATE", "OUTCOME", "ITER", "ELAPSED", "COST", "TASK"]  # no plan, one part
    assert lines[0].split() == head
    assert lines[1].split()[1:3] == ["failed", "signal:"] and lines[1].endswith("slow task")
    assert lines[2].split()[1:3] == ["done", "complete:"] and lines[2].endswith("quick task")
    assert " 1/50 " in lines[2]


def test_in_a_terminal_a_resumed_run_shows_the_earlier_conversation(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig(
        {
            "agent": [
                {"match": "PINEAPPLE", "reply": "I will remember PINEAPPLE."},
                {"match": "more", "delay": 300, "reply": "never seen"},
            ],
            "supervisor": [
                {"match": RESUMED, "reply": "[COMPLETE] remembered"},
                {"reply": "[CONTINUE] more"},
            ],
        }
    )
    proc = _popen(r, "remember the word PINEAPPLE")
    try:
        r.model.wait_for(lambda q: "more" in q.human_text, timeout=120)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    wait_for(lambda: not r.leftovers(), 30, "the killed run's Claude Code to exit")
    done = tmp_path / "done"
    tmux = Tmux("ptysup-resume")
    tmux.start(terminal_script(tmp_path / "run.sh", r.project, r.env, ptysup_argv("resume"), done))
    seen: list[str] = []
    try:

        def finished() -> bool:
            seen.append(tmux.capture())
            return done.exists()

        wait_for(finished, 120, "the resumed run to finish")
        after = tmux.capture()
    finally:
        tmux.kill()
    assert done.read_text().startswith("exit=0")
    # Claude Code reopened the conversation: the person sees its earlier turns again.
    assert any("I will remember PINEAPPLE." in p and "ptysup 2/50" in p for p in seen)
    assert "ptysup: complete after 2 iteration(s) (exit 0)" in after


def test_a_run_killed_before_claude_code_saved_its_prompt_starts_afresh_on_resume(
    rig: Callable[..., Rig],
) -> None:
    # Killed in the second after its task was typed, Claude Code 2.1.197 has written its
    # transcript's metadata (title, modes) but not the prompt: `--resume <id>` ended it at
    # once ("No conversation found"), exit 4, on every resume. A new conversation starts.
    # Its first request is never answered: the run is killed first.
    never = {"times": 1, "delay": 120, "reply": "never seen"}
    r = rig({**UNSAVED, "agent": [never, *UNSAVED["agent"]]})
    projects = Path(r.env["CLAUDE_CONFIG_DIR"], "projects")

    def kinds(session: str) -> list[str]:
        (transcript,) = projects.glob(f"*/{session}.jsonl")
        return [json.loads(line).get("type") for line in transcript.read_text().splitlines()]

    def unsaved(session: str) -> bool:
        return bool(kinds(session)) and not {"user", "assistant"} & set(kinds(session))

    # Claude Code sends the prompt to the model, writes the file with its metadata, and
    # the prompt in its next write, 0.1 s later (seen with strace).
    asked = functools.partial(r.model.requests_of, RequestKind.AGENT)
    events = r.unsaved_then_resumed(
        lambda: bool(asked()) and any(projects.glob("*/*.jsonl")), unsaved
    )
    # run.json keeps the new conversation's id, and the model got the task in it, fresh.
    now = [e["session_id"] for e in events if e["event"] == "agent_start"][-1]
    assert json.loads((_the_run(r) / "run.json").read_text())["session_id"] == now
    last = asked()[-1]
    assert last.human_text == "do the thing"
    assert [m["role"] for m in last.body["messages"] if m["role"] != "system"] == ["user"]


# A decision that ends the run (or hands it on), what the run is given, its outcome and
# exit code; the run is killed the moment the decision is in the log, before run_end.
ENDING_DECISIONS = [
    pytest.param("[COMPLETE] all done", (), "complete", 0, id="complete"),
    pytest.param("[ABORT] cannot be done", (), "abort", 1, id="abort"),
    pytest.param("[ESCALATE] a person must choose", (), "escalated", 7, id="escalate"),
    pytest.param("[CONTINUE] go on", ("--max-iter", "1"), "budget", 3, id="budget"),
]


@pytest.mark.parametrize(("answer", "args", "outcome", "code"), ENDING_DECISIONS)
def test_a_run_killed_between_a_decision_and_its_end_ends_as_decided_on_resume(
    rig: Callable[..., Rig], answer: str, args: tuple[str, ...], outcome: str, code: int
) -> None:
    # Before, the resume asked the supervisor again (a second [COMPLETE]), or, its
    # budget spent, was refused (exit 2), the run never ending.
    r = rig(
        {
            "agent": [{"reply": "Did what I could."}],
            "supervisor": [
                {"match": RESUMED, "reply": "[COMPLETE] asked a second time"},
                {"reply": answer},
            ],
        }
    )
    first = r.all_killed(
        "do the thing",
        lambda: any(e["event"] == "decision" for e in read_events(r.log)),
        *args,
    )
    assert not any(e["event"] == "run_end" for e in first)
    resumed = _run(r, "resume", "last")
    assert resumed.code == code, resumed.stdout + resumed.stderr
    events = read_events(r.log)
    after = events[events.index(next(e for e in events if e["event"] == "run_resume")) :]
    assert len(r.model.requests_of(RequestKind.SUPERVISOR)) == 1  # asked once, ever
    assert not [e for e in after if e["event"] == "decision"]
    assert [e["text"] for e in after if e["event"] == "inject"] in ([], ["/clear"])  # no turn
    assert (after[-1]["event"], after[-1]["outcome"]) == ("run_end", outcome)
    carried = [e for e in after if e["event"] == "decision_resumed"]
    if outcome == "budget":
        assert not carried and after[-1]["reason"] == "iteration budget of 1 used up"
        assert "used its 1 iteration" in resumed.stderr and "it ends now" in resumed.stderr
    else:
        assert [(e["action"], e["content"]) for e in carried] == [
            (outcome.removesuffix("d"), answer.split("] ")[1])
        ]
