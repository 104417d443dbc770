"""aider supervised end to end: the real pinned binary (aider-chat 0.86.2, in its own
virtualenv), ptysup's own fake model speaking OpenAI Chat Completions (aider offers no
tools: its edits are text), `claude -p` as the supervisor on the same fake model.

aider takes ~3 s to start: each test is one short run."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from ptysup.testing.fakemodel import RequestKind
from ptysup.testing.kit import agent_env
from tests.conftest import ClaudeEnvFactory, FakeModelFactory
from tests.e2e.conftest import Rig, demo_run, rigs
from tests.helpers import HOOK_TO_TURN_END_S

pytestmark = pytest.mark.e2e

AGENT = "aider"
TITLE = "Add out.txt with a greeting"  # the fake's answer to side requests: the commit message


def new_file(path: str, content: str) -> str:
    """A reply that creates PATH in aider's diff edit format (an empty SEARCH)."""
    return edit(path, "", content)


@pytest.fixture
def rig(
    fake_model: FakeModelFactory,
    claude_env: ClaudeEnvFactory,
    aider_bin: Path,
    project_dir: Path,
    tmp_path: Path,
) -> Iterator[Callable[[Mapping[str, Any]], Rig]]:
    """Rigs whose agent is the pinned aider (in a private HOME, in a git repository) and
    whose supervisor is `claude -p`, both talking to the same fake model."""
    subprocess.run(["git", "init", "-q", str(project_dir)], check=True)
    with contextlib.ExitStack() as stack:

        def env_for(url: str) -> dict[str, str]:
            claude = claude_env(url).env  # the supervisor's, with aider's on top
            made = agent_env("aider", url, binary=aider_bin, base=claude)
            return dict(stack.enter_context(made).env)

        yield from rigs(fake_model, project_dir, tmp_path, env_for, AGENT)


def test_a_turn_ends_on_aiders_notification_and_the_task_goes_in_once_and_whole(
    rig: Callable[..., Rig],
) -> None:
    r = rig({"agent": [{"reply": "Hello there."}], "supervisor": [{"reply": "[COMPLETE] said"}]})
    task = "say hello\nin two lines"
    run = r.run(task, "--idle", "30")
    assert run.code == 0, run.stdout + run.stderr
    assert r.human_texts() == [task]
    assert [(i["kind"], i["confirmed"]) for i in run.named("inject")] == [("task", True)]
    (turn,) = run.named("turn_end")
    assert turn["kind"] == "stop" and "dialog" not in turn
    # The notification is its Stop (the conformance suite times it).
    (stop,) = [e for e in run.named("hook") if e["name"] == "Stop"]
    assert stop["notification_type"] == "aider_waits"
    assert turn["ts"] - run.named("inject")[0]["ts"] < 15
    assert run.named("agent_start")[0]["profile"] == "aider"
    # A first run in an empty HOME asked nothing: no .gitignore question (nor its file),
    # no model warning, no release notes, no analytics opt-in, no update check.
    (sup,) = r.model.requests_of(RequestKind.SUPERVISOR)  # it holds the whole screen
    assert "(Y)es/(N)o" not in sup.human_text and "Aider v0.86.2" in sup.human_text
    assert "githubusercontent" not in sup.human_text  # its price list came from its cache
    assert not (r.project / ".gitignore").exists()
    assert run.events[-1]["outcome"] == "complete"


def edit(path: str, old: str, new: str) -> str:
    """A reply that edits PATH in aider's diff edit format."""
    return f"Editing it.\n\n{path}\n```\n<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n```\n"


def _commit(r: Rig, *files: str) -> None:
    """Commit FILES in the rig's project, as aider's private home's git identity."""
    for cmd in (["git", "add", *files], ["git", "commit", "-q", "-m", "start"]):
        subprocess.run(cmd, cwd=r.project, check=True, env=r.env, capture_output=True)


def test_an_edit_to_a_file_in_the_chat_is_applied_and_committed_with_the_fakes_message(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "title": TITLE,
            "files": {"greet.txt": "hello\n"},
            "agent": [{"reply": edit("greet.txt", "hello\n", "hello, world\n")}],
            "supervisor": [{"reply": "[COMPLETE] edited"}],
        }
    )
    _commit(r, "greet.txt")
    r.agent = "aider greet.txt"
    run = r.run("greet the world", "--idle", "30")
    assert run.code == 0, run.stdout + run.stderr
    assert (r.project / "greet.txt").read_text() == "hello, world\n"
    (turn,) = run.named("turn_end")
    assert turn["kind"] == "stop" and "dialog" not in turn
    # The commit message is aider's side request, answered by the fake (not an agent turn).
    (side,) = r.model.requests_of(RequestKind.TITLE)
    assert "commit message" in str(side.body["messages"][0]["content"]).lower()
    log = subprocess.run(
        ["git", "log", "-1", "--format=%s"], cwd=r.project, capture_output=True, text=True
    )
    assert log.stdout.strip() == TITLE
    assert r.human_texts() == ["greet the world"]


NEW_FILE = new_file("out.txt", "hello\n")


def test_a_confirmation_is_a_turn_end_explained_to_the_supervisor_and_never_answered_yes(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "agent": [{"reply": NEW_FILE}],
            "supervisor": [{"reply": "[ESCALATE] a person must allow the new file"}],
        }
    )
    run = r.run("write out.txt", "--idle", "30")
    assert run.code == 7, run.stdout + run.stderr
    # aider's notification came at its confirmation: a turn end with the dialog open, at
    # once (not after --turn-timeout).
    (turn,) = run.named("turn_end")
    assert (turn["kind"], turn["dialog"]) == ("stop", True)
    (stop,) = [e for e in run.named("hook") if e["name"] == "Stop"]
    assert turn["ts"] - stop["ts"] < HOOK_TO_TURN_END_S
    (sup,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert "Create new file? (Y)es/(N)o [Yes]:" in sup.human_text
    assert "A dialog is open on the agent's screen" in sup.human_text
    (escalation,) = run.named("escalation")
    assert escalation["reason"] == "a person must allow the new file"
    # Answered No on the way out (its default, a bare Enter, is Yes).
    assert [e["event"] for e in run.events].count("dialog_dismissed") == 1
    assert not (r.project / "out.txt").exists()
    assert run.events[-1]["outcome"] == "escalated"


SHELL = "Then run:\n\n```bash\necho hi > shell.txt\n```\n"


def test_confirmations_are_answered_no_when_the_supervisor_says_go_on(
    rig: Callable[..., Rig],
) -> None:
    # One reply, two confirmations in a row: the new file, then the shell command.
    instead = "Do not create files; say what you would write."
    r = rig(
        {
            "agent": [
                {"match": "say what you would write", "reply": "I would write hello."},
                {"reply": NEW_FILE + "\n" + SHELL},
            ],
            "supervisor": [
                {"times": 1, "reply": f"[CONTINUE] {instead}"},
                {"reply": "[COMPLETE] answered"},
            ],
        }
    )
    run = r.run("write out.txt", "--idle", "30")
    assert run.code == 0, run.stdout + run.stderr
    assert [(t["kind"], t.get("dialog", False)) for t in run.named("turn_end")] == [
        ("stop", True),
        ("stop", False),
    ]
    names = [e["event"] for e in run.events]
    dismissed = names.index("dialog_dismissed")
    (instruction,) = [e for e in run.named("inject") if e["kind"] == "instruction"]
    assert names.index("decision") < dismissed < run.events.index(instruction)
    asked = [e["screen"].rstrip().splitlines()[-1] for e in run.named("dialog_dismissed")]
    assert asked == [
        "Create new file? (Y)es/(N)o [Yes]:",
        "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:",
    ]
    assert instruction["text"] == instead and instruction["confirmed"]
    assert not (r.project / "out.txt").exists() and not (r.project / "shell.txt").exists()
    assert r.human_texts() == ["write out.txt", instead]


def test_abort_clears_the_chat_and_aider_exits_also_behind_a_wrapper_named_by_agent(
    rig: Callable[..., Rig], tmp_path: Path
) -> None:
    r = rig({"agent": [{"reply": "Working on it."}], "supervisor": [{"reply": "[ABORT] wrong"}]})
    wrapper = tmp_path / "my-aider.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {r.env["PATH"].split(":")[0]}/aider "$@"\n')
    wrapper.chmod(0o755)
    r.agent = str(wrapper)
    run = r.run("do the thing", "--agent", "aider")
    assert run.code == 1, run.stdout + run.stderr
    assert run.named("agent_start")[0]["profile"] == "aider"
    assert [t["kind"] for t in run.named("turn_end")] == ["stop"]
    typed = [(i["text"], i["confirmed"]) for i in run.named("inject") if i["kind"] != "task"]
    assert ("/clear", True) in typed
    # /exit ended it: it was not killed.
    assert not [w for w in run.named("warning") if "did not exit" in w["message"]]
    assert not r.leftovers()
    # aider's own record of its input: the task, then ptysup's two commands, nothing else.
    typed_in = (r.project / ".aider.input.history").read_text()
    assert [line[1:] for line in typed_in.splitlines() if line.startswith("+")] == [
        "do the thing",
        "/clear",
        "/exit",
    ]
    assert run.events[-1]["outcome"] == "abort"


def test_the_demo_runs_with_aider_as_agent(aider_bin: Path) -> None:
    with demo_run("aider", "AIDER_") as (done, kept):
        assert done.returncode == 0, done.stdout + done.stderr
        assert "agent: aider textstats.py" in done.stderr
        assert "supervisor: claude -p" in done.stdout
        assert "the sample project's tests pass" in done.stderr
        assert kept is not None
        commits = subprocess.run(
            ["git", "log", "--format=%s"], cwd=kept, capture_output=True, text=True
        )
        assert "Implement word count" in commits.stdout.splitlines()  # aider's, the fake's


def test_doctor_knows_the_pinned_aider_as_a_tested_release(rig: Callable[..., Rig]) -> None:
    r = rig({"supervisor": [{"reply": "[COMPLETE] ok"}]})
    done = r.ptysup("doctor", "--agent-cmd", AGENT)
    assert "aider 0.86.2, tested with ptysup" in done.stdout, done.stdout + done.stderr


def test_a_confirmation_before_the_model_is_asked_gets_no_second_enter(
    rig: Callable[..., Rig],
) -> None:
    # aider asks about a URL in the message before it calls the model (so before any
    # notification): Enter pressed again to "confirm the turn" would answer Yes.
    r = rig(
        {
            "agent": [{"reply": "Read it."}],
            "supervisor": [{"reply": "[ESCALATE] a person must say whether to fetch the page"}],
        }
    )
    run = r.run("summarise https://example.invalid/page", "--turn-timeout", "5")
    assert run.code == 7, run.stdout + run.stderr
    assert not [w for w in run.named("warning") if "Enter again" in w["message"]]
    ((kind, confirmed),) = [(i["kind"], i["confirmed"]) for i in run.named("inject")]
    assert (kind, confirmed) == ("task", True)
    (turn,) = run.named("turn_end")
    assert (turn["kind"], turn["dialog"]) == ("stalled", True)
    (sup,) = r.model.requests_of(RequestKind.SUPERVISOR)
    assert "Add URL to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:" in sup.human_text


def test_a_question_at_start_no_switch_skips_ends_the_start_naming_it(
    rig: Callable[..., Rig],
) -> None:
    # Outside a git repository aider asks to make one: a person's answer, not ptysup's.
    r = rig({"agent": [{"reply": "Done."}], "supervisor": [{"reply": "[COMPLETE] ok"}]})
    shutil.rmtree(r.project / ".git")
    run = r.run("say done")
    assert run.code == 4, run.stdout + run.stderr
    (error,) = run.named("error")
    assert 'aider is waiting on its confirmation "No git repo found' in error["message"]
    assert not (r.project / ".git").exists()
    assert not r.model.requests_of(RequestKind.AGENT)


def test_a_batch_commits_none_of_aiders_own_files_and_a_task_that_changed_nothing_nothing(
    rig: Callable[..., Rig],
) -> None:
    r = rig(
        {
            "title": TITLE,
            "files": {"greet.txt": "hello\n"},
            "agent": [
                {
                    "match": "greet the world",
                    "reply": edit("greet.txt", "hello\n", "hello, world\n"),
                },
                {"match": "say hello", "reply": "Hello there."},
            ],
            "supervisor": [{"reply": "[COMPLETE] done"}],
        }
    )
    _commit(r, "greet.txt")
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=r.project, capture_output=True, text=True, check=True
    ).stdout.strip()
    (r.project / "TASKS.yaml").write_text(
        "tasks:\n"
        "  - {id: greet, task: greet the world, agent-cmd: aider greet.txt}\n"
        "  - {id: nothing, task: say hello, agent-cmd: aider}\n"
    )
    done = r.ptysup("batch", "TASKS.yaml", "--jobs", "1", "--summary-json", "s.json", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    by_id = {t["id"]: t for t in json.loads((r.project / "s.json").read_text())["tasks"]}

    def changed(branch: str) -> list[str]:
        out = subprocess.run(
            ["git", "diff", "--name-only", f"{base}..{branch}"],
            cwd=r.project,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.split()

    assert changed("ptysup/greet") == ["greet.txt"]  # aider's own commit, nothing of its own
    assert changed("ptysup/nothing") == []
    assert by_id["nothing"]["commit"] is None and by_id["nothing"]["diff_stat"] == ""
    # aider's files stay in the worktrees, and none holds ptysup's hook token.
    for task_id in ("greet", "nothing"):
        tree = r.project / ".ptysup" / "worktrees" / task_id
        history = (tree / ".aider.chat.history.md").read_text()
        assert "hook_client.py" in history  # its command line, as aider logs it
        assert not re.search(r"\b[0-9a-f]{32}\b", history), history
