"""The end of a run for people and CI: summary JSON, GitHub workflow commands and summary."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from ptysup.events import Event, earlier_cost
from ptysup.terminal.inject import clean
from ptysup.values import duration_text


class RunSummary:
    """An event sink that keeps what the final summary needs."""

    def __init__(self) -> None:
        self.decisions: list[dict[str, Any]] = []
        self.verifications: list[dict[str, Any]] = []
        self.steps: list[dict[str, Any]] = []  # a plan's steps as far as the run got
        self.fields: dict[str, Any] = {}

    def write(self, event: Event) -> None:
        if event.event == "decision":
            self.decisions.append(event.fields)
        elif event.event == "verify":
            self.verifications.append(event.fields)
        elif event.event in ("run_start", "run_end"):
            self.fields.update(event.fields)
        elif event.event == "escalation":
            self.fields["escalation"] = event.fields.get("reason")
        elif event.event == "run_resume":
            self.fields.update({k: v for k, v in event.fields.items() if k in ("max_iter", "task")})
        elif event.event in ("step_start", "step_end"):
            self._step(event)

    def _step(self, event: Event) -> None:
        f = event.fields
        if event.event == "step_start" and not any(s["id"] == f.get("id") for s in self.steps):
            self.steps.append({"id": f.get("id"), "do": f.get("do"), "outcome": None})
        for step in self.steps:
            if step["id"] == f.get("id") and event.event == "step_end":
                step.update(outcome=f.get("outcome"), iterations=f.get("iterations"))

    def close(self) -> None:
        pass

    def to_dict(self) -> dict[str, Any]:
        """The summary: outcome, exit code, iterations, time, cost, and every decision."""
        f = self.fields
        keys = (
            "run_id",
            "task",
            "outcome",
            "exit_code",
            "iterations",
            "max_iter",
            "elapsed_s",
            "cost_usd",
            "agent_cost_usd",
            "supervisor_cost_usd",
            "reason",
            "log_file",
            "record",
            "escalation",
        )
        earlier = earlier_cost(f)  # a resumed run's cost is every part's: the rest named
        return {
            **{k: f.get(k) for k in keys},
            **({"earlier_parts_cost_usd": round(earlier, 6)} if earlier is not None else {}),
            "decisions": self.decisions,
            "verifications": self.verifications,
            **({"steps": self.steps} if self.steps else {}),
        }


def write_json(path: Path, summary: dict[str, Any]) -> None:
    """Write the summary JSON (for any CI)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # as the event log
    with open(fd, "w", encoding="utf-8") as out:
        out.write(text)


def markdown(summary: dict[str, Any]) -> str:
    """The summary as GitHub-flavoured markdown for $GITHUB_STEP_SUMMARY."""
    ok = summary.get("exit_code") == 0
    earlier = earlier_cost(summary)  # a resumed run: agent and supervisor are this part's
    more = ("", "", "") if earlier is None else (" earlier parts |", "---|", f" ${earlier:.4f} |")
    lines = [
        f"### ptysup: {_cell(summary.get('outcome'))} {'✅' if ok else '❌'}",
        "",
        f"**Task:** {_cell(summary.get('task'))}",
        "",
        "| exit code | iterations | elapsed | cost | agent | supervisor |" + more[0],
        "|---|---|---|---|---|---|" + more[1],
        f"| {summary.get('exit_code')} | {summary.get('iterations')}/{summary.get('max_iter')} "
        f"| {summary.get('elapsed_s') or 0:.0f}s | ${summary.get('cost_usd') or 0:.4f} "
        f"| ${summary.get('agent_cost_usd') or 0:.4f} "
        f"| ${summary.get('supervisor_cost_usd') or 0:.4f} |" + more[2],
    ]
    if summary.get("steps"):
        lines += ["", "| step | outcome | iterations |", "|---|---|---|"]
        lines += [
            f"| {_cell(s.get('id'))} | {_cell(s.get('outcome') or 'started')} "
            f"| {s.get('iterations', '')} |"
            for s in summary["steps"]
        ]
    if summary.get("decisions"):
        lines += ["", "| # | decision | reason / instruction |", "|---|---|---|"]
        lines += [
            f"| {d.get('iteration')} | {_cell(d.get('action'))} | {_cell(d.get('content'))} |"
            for d in summary["decisions"]
        ]
    if summary.get("reason"):
        lines += ["", f"**Why it ended:** {_cell(summary.get('reason'))}"]
    if summary.get("escalation"):
        lines += ["", f"**Waiting for a person:** {_cell(summary.get('escalation'))}"]
    return "\n".join(lines) + "\n"


def one_line(text: str) -> str:
    """TEXT on one line: each line break or tab is a space, but the spaces a person typed
    are kept (`print("a   b")` is not `print("a b")`)."""
    return re.sub(r"[\r\n\t\v\f]", " ", text.replace("\r\n", "\n")).strip()


def _cell(value: Any, limit: int = 300) -> str:
    """VALUE as one line of a markdown table cell: escape sequences and control bytes
    (a task's or the agent's text) dropped, so the job's page shows text and no raw bytes;
    runs of spaces stay as many (markdown would fold them into one)."""
    text = one_line(clean(str(value or "")))
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return re.sub(r"(?<= ) ", "&nbsp;", text.replace("|", "\\|"))


def append_step_summary(summary: dict[str, Any], env: Mapping[str, str]) -> None:
    """Append the markdown summary to $GITHUB_STEP_SUMMARY when running in GitHub Actions."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if not in_github_actions(env) or not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(markdown(summary))


def steps_line(summary: dict[str, Any]) -> str:
    """The plan's steps in a few words (`steps: first ✓, second ✗ budget`), or ''."""
    steps = summary.get("steps") or []
    marks = [
        f"{s['id']} ✓"
        if s.get("outcome") == "complete"
        else f"{s['id']} ✗ {s.get('outcome') or 'unfinished'}"
        for s in steps
    ]
    return f"steps: {', '.join(marks)}" if marks else ""


def _escape(text: str) -> str:
    """Workflow-command data escaping (%, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


# Events GithubSink prints in full as workflow commands; the text console leaves them out,
# so each shows once in the job's log, not twice and cut short.
GITHUB_PRINTS = frozenset({"decision", "warning", "supervisor_error", "error"})
_ENDS_GROUP = frozenset({"decision", "run_end", "error", "agent_screen", "verify"})


class GithubSink:
    """Decisions and warnings as GitHub Actions workflow commands (::notice:: etc.), and
    each turn of the agent as a collapsible ::group::."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._group_open = False
        self._turns = 0

    def write(self, event: Event) -> None:
        f = event.fields
        lines: list[str] = []
        if self._group_open and event.event in _ENDS_GROUP:
            lines.append("::endgroup::")
            self._group_open = False
        if event.event == "inject" and f.get("kind") != "command":
            if self._group_open:
                lines.append("::endgroup::")
            self._turns += 1
            text = one_line(str(f.get("text", "")))[:100]
            lines.append(f"::group::ptysup turn {self._turns} ({f.get('kind')}): {_escape(text)}")
            self._group_open = True
        line = None
        if event.event == "decision":
            title = f"ptysup decision {f.get('iteration')}/{f.get('max_iter')}: {f.get('action')}"
            line = f"::notice title={_escape(title)}::{_escape(str(f.get('content', '')))}"
        elif event.event in ("warning", "supervisor_error", "wait"):
            text = f.get("message") or f.get("error") or f.get("reason") or ""
            line = f"::warning title=ptysup {event.event}::{_escape(str(text))}"
        elif event.event == "error":
            line = f"::error title=ptysup::{_escape(str(f.get('message', '')))}"
        elif event.event == "escalation" and f.get("answer_with"):
            # --escalate-wait: the job waits, and the one who reads this can answer.
            reason = _escape(str(f.get("reason", "")))
            wait = duration_text(float(f.get("wait_s") or 0))
            how = _escape(str(f["answer_with"]))
            line = f"::warning title=ptysup waiting {wait} for a person::{reason} | answer: {how}"
        elif event.event == "escalation":
            reason = _escape(str(f.get("reason", "")))
            line = f"::error title=ptysup escalated to a person::{reason}"
        elif event.event == "run_end":
            kind = "notice" if f.get("exit_code") == 0 else "error"
            line = (
                f"::{kind} title=ptysup {f.get('outcome')}::exit {f.get('exit_code')} after "
                f"{f.get('iterations')} iteration(s): {_escape(str(f.get('reason', '')))}"
            )
        if line is not None:
            lines.append(line)
        if lines:
            try:
                self._stream.write("".join(f"{x}\n" for x in lines))
                self._stream.flush()
            except (BrokenPipeError, ValueError):
                pass

    def close(self) -> None:
        pass


def in_github_actions(env: Mapping[str, str]) -> bool:
    """Whether this runs as a GitHub Actions step."""
    return env.get("GITHUB_ACTIONS") == "true"
