"""Scenario files for the fake model: what the agent does, what the supervisor answers.

A scenario is YAML (or the same structure as a dict)::

    title: Implement word count         # reply to the TUI's title request (optional)
    files:                              # the sample project, written by seed() (optional)
      test_textstats.py: |
        ...
    agent:                              # rules for the agent's requests
      - name: partial                   # a label, recorded with each request (optional)
        match: implement feature X      # substring of the latest human text
        steps:                          # one assistant reply per tool_result round trip
          - tool: Write
            input: {file_path: "{workdir}/textstats.py", content: "..."}
          - text: I implemented feature X.
    supervisor:                         # rules for requests holding SUPERVISOR_MARKER
      - when: {command_succeeds: python3 -m unittest -q}
        reply: "[COMPLETE] all tests pass"
      - times: 1
        error: 529
      - reply: "[CONTINUE] the tests fail"

Rules are tried in order; the first whose conditions all hold wins. A rule without
conditions is the default. Conditions: `match` (substring), `regex` (re.search) on the
latest human text; `wire` (the API the request came over: `anthropic` for Claude Code,
`responses` for Codex, `gemini`, `chat` for Qwen Code and opencode), which tells a judge
from a second opinion of another vendor asked the same prompt; `when:` with
`file_exists`, `file_missing`, `file_contains` (`{path, text}` or `{path, regex}`),
`command_succeeds`, `command_fails` (a string run with `bash -c`, or an argv list, in the
workdir). `times: N` uses a rule for at most N
turns. A step is `text`, or `tool` + `input` (with an optional `text` before the call),
or `error` (an HTTP status: 429, 500, 529, ...); any step may add `delay` (seconds before
the reply). `reply`, `error`, `delay` on a rule are shorthand for a single step.
`{workdir}` in any string is replaced by the fake model's workdir.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ptysup.testing.wire import Block, TextBlock, ToolUseBlock

WORKDIR_PLACEHOLDER = "{workdir}"
DEFAULT_COMMAND_TIMEOUT = 60.0


class ScenarioError(ValueError):
    """A scenario file that does not follow the format."""


@dataclass(frozen=True)
class Step:
    """One assistant reply: content blocks, or an HTTP error; after an optional delay."""

    blocks: tuple[Block, ...] = ()
    error: int | None = None
    delay: float = 0.0


@dataclass(frozen=True)
class FileContains:
    """The file at PATH holds TEXT, or matches REGEX."""

    path: str
    text: str | None = None
    regex: str | None = None


@dataclass(frozen=True)
class Conditions:
    """Everything that must hold for a rule to apply; empty means always."""

    match: str | None = None
    regex: str | None = None
    wire: str | None = None
    file_exists: tuple[str, ...] = ()
    file_missing: tuple[str, ...] = ()
    file_contains: tuple[FileContains, ...] = ()
    command_succeeds: tuple[str | tuple[str, ...], ...] = ()
    command_fails: tuple[str | tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Rule:
    """Conditions and the steps of the turn they start."""

    name: str
    conditions: Conditions
    steps: tuple[Step, ...]
    times: int | None = None


@dataclass(frozen=True)
class Scenario:
    """A whole script: agent rules, supervisor rules, title, and the sample project."""

    agent: tuple[Rule, ...] = ()
    supervisor: tuple[Rule, ...] = ()
    title: str = "Fake session"
    files: Mapping[str, str] = field(default_factory=dict)
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT

    @classmethod
    def load(cls, path: Path | str) -> Scenario:
        """Read a scenario YAML file."""
        return cls.from_yaml(Path(path).read_text(encoding="utf-8"))

    @classmethod
    def from_yaml(cls, text: str) -> Scenario:
        """Parse scenario YAML text."""
        data = yaml.safe_load(text)
        if data is None:
            data = {}
        return cls.from_dict(_mapping(data, "scenario"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        """Build a scenario from its YAML structure."""
        _known(data, {"agent", "supervisor", "title", "files", "command_timeout"}, "scenario")
        files = _mapping(data.get("files") or {}, "files")
        return cls(
            agent=_rules(data.get("agent"), "agent"),
            supervisor=_rules(data.get("supervisor"), "supervisor"),
            title=str(data.get("title", "Fake session")),
            files={str(k): str(v) for k, v in files.items()},
            command_timeout=float(data.get("command_timeout", DEFAULT_COMMAND_TIMEOUT)),
        )

    def seed(self, workdir: Path) -> None:
        """Write the scenario's sample project files under WORKDIR."""
        for relative, content in self.files.items():
            target = workdir / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(substitute(content, workdir), encoding="utf-8")


def substitute(text: str, workdir: Path) -> str:
    """Replace `{workdir}`; plain replace, so braces in code content stay as they are."""
    return text.replace(WORKDIR_PLACEHOLDER, str(workdir))


def substitute_all(value: object, workdir: Path) -> object:
    """`substitute` through nested lists and mappings."""
    if isinstance(value, str):
        return substitute(value, workdir)
    if isinstance(value, Mapping):
        return {k: substitute_all(v, workdir) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [substitute_all(v, workdir) for v in value]
    return value


def step_for(step: Step, workdir: Path) -> Step:
    """STEP with `{workdir}` filled in."""
    blocks: list[Block] = []
    for block in step.blocks:
        if isinstance(block, TextBlock):
            blocks.append(TextBlock(substitute(block.text, workdir)))
        else:
            filled = substitute_all(dict(block.input), workdir)
            assert isinstance(filled, dict)
            blocks.append(ToolUseBlock(block.name, filled))
    return Step(blocks=tuple(blocks), error=step.error, delay=step.delay)


# -- evaluating conditions on the real workdir -------------------------------------------


def conditions_hold(
    conditions: Conditions, human_text: str, workdir: Path, timeout: float, wire: str = ""
) -> bool:
    """Whether every condition holds now; cheap ones first, commands last."""
    if conditions.wire is not None and conditions.wire != wire:
        return False
    if conditions.match is not None and conditions.match not in human_text:
        return False
    if conditions.regex is not None and re.search(conditions.regex, human_text) is None:
        return False
    if not all(_path(p, workdir).exists() for p in conditions.file_exists):
        return False
    if any(_path(p, workdir).exists() for p in conditions.file_missing):
        return False
    if not all(_contains(c, workdir) for c in conditions.file_contains):
        return False
    if not all(run_succeeds(c, workdir, timeout) for c in conditions.command_succeeds):
        return False
    return not any(run_succeeds(c, workdir, timeout) for c in conditions.command_fails)


def _path(path: str, workdir: Path) -> Path:
    return workdir / substitute(path, workdir)


def _contains(condition: FileContains, workdir: Path) -> bool:
    try:
        content = _path(condition.path, workdir).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if condition.text is not None and substitute(condition.text, workdir) not in content:
        return False
    return condition.regex is None or re.search(condition.regex, content) is not None


def run_succeeds(command: str | tuple[str, ...], workdir: Path, timeout: float) -> bool:
    """Run COMMAND in WORKDIR; True if it exits 0 within TIMEOUT seconds."""
    if isinstance(command, str):
        argv = ["bash", "-c", substitute(command, workdir)]
    else:
        argv = [substitute(a, workdir) for a in command]
    try:
        result = subprocess.run(
            argv,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


# -- parsing ----------------------------------------------------------------------------


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _known(data: Mapping[str, Any], keys: set[str], where: str) -> None:
    unknown = sorted(set(data) - keys)
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}")


def _rules(value: object, where: str) -> tuple[Rule, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ScenarioError(f"{where}: expected a list of rules")
    return tuple(_rule(_mapping(r, f"{where}[{i}]"), f"{where}[{i}]") for i, r in enumerate(value))


_STEP_KEYS = {"text", "tool", "input", "error", "delay"}
_RULE_KEYS = {
    "name",
    "match",
    "regex",
    "wire",
    "when",
    "times",
    "steps",
    "reply",
    "error",
    "delay",
}


def _rule(data: Mapping[str, Any], where: str) -> Rule:
    _known(data, _RULE_KEYS, where)
    shorthand = {k: data[k] for k in ("reply", "error", "delay") if k in data}
    if "steps" in data and shorthand:
        raise ScenarioError(f"{where}: use either steps or reply/error/delay")
    if "steps" in data:
        raw_steps = data["steps"]
        if not isinstance(raw_steps, list) or not raw_steps:
            raise ScenarioError(f"{where}.steps: expected a non-empty list")
        steps = tuple(
            _step(_mapping(s, f"{where}.steps[{i}]"), f"{where}.steps[{i}]")
            for i, s in enumerate(raw_steps)
        )
    elif shorthand:
        if "reply" in shorthand:
            shorthand["text"] = shorthand.pop("reply")
        steps = (_step(shorthand, where),)
    else:
        raise ScenarioError(f"{where}: a rule needs steps, reply or error")
    times = data.get("times")
    if times is not None and (not isinstance(times, int) or times < 1):
        raise ScenarioError(f"{where}.times: expected a positive integer")
    return Rule(
        name=str(data.get("name", where)),
        conditions=_conditions(data, where),
        steps=steps,
        times=times,
    )


def _step(data: Mapping[str, Any], where: str) -> Step:
    _known(data, _STEP_KEYS, where)
    blocks: list[Block] = []
    if "text" in data:
        blocks.append(TextBlock(str(data["text"])))
    if "tool" in data:
        tool_input = _mapping(data.get("input") or {}, f"{where}.input")
        blocks.append(ToolUseBlock(str(data["tool"]), dict(tool_input)))
    elif "input" in data:
        raise ScenarioError(f"{where}: input without tool")
    error = data.get("error")
    if error is not None and (not isinstance(error, int) or not 400 <= error <= 599):
        raise ScenarioError(f"{where}.error: expected an HTTP error status")
    if error is None and not blocks:
        raise ScenarioError(f"{where}: a step needs text, tool or error")
    if error is not None and blocks:
        raise ScenarioError(f"{where}: a step is either an error or content")
    delay = data.get("delay", 0.0)
    if not isinstance(delay, (int, float)) or delay < 0:
        raise ScenarioError(f"{where}.delay: expected seconds >= 0")
    return Step(blocks=tuple(blocks), error=error, delay=float(delay))


_WHEN_KEYS = {"file_exists", "file_missing", "file_contains", "command_succeeds", "command_fails"}


def _conditions(data: Mapping[str, Any], where: str) -> Conditions:
    when = _mapping(data.get("when") or {}, f"{where}.when")
    _known(when, _WHEN_KEYS, f"{where}.when")
    return Conditions(
        match=None if data.get("match") is None else str(data["match"]),
        regex=None if data.get("regex") is None else str(data["regex"]),
        wire=None if data.get("wire") is None else str(data["wire"]),
        file_exists=tuple(str(p) for p in _list(when.get("file_exists"))),
        file_missing=tuple(str(p) for p in _list(when.get("file_missing"))),
        file_contains=tuple(
            _file_contains(_mapping(c, f"{where}.when.file_contains"), where)
            for c in _list(when.get("file_contains"))
        ),
        command_succeeds=_commands(when.get("command_succeeds"), where),
        command_fails=_commands(when.get("command_fails"), where),
    )


def _list(value: object) -> Sequence[object]:
    """A single value or a list of them."""
    if value is None:
        return ()
    return value if isinstance(value, list) else [value]


def _file_contains(data: Mapping[str, Any], where: str) -> FileContains:
    _known(data, {"path", "text", "regex"}, f"{where}.when.file_contains")
    if "path" not in data or ("text" not in data and "regex" not in data):
        raise ScenarioError(f"{where}.when.file_contains: needs path and text or regex")
    return FileContains(
        path=str(data["path"]),
        text=None if data.get("text") is None else str(data["text"]),
        regex=None if data.get("regex") is None else str(data["regex"]),
    )


def _commands(value: object, where: str) -> tuple[str | tuple[str, ...], ...]:
    """A string (run with `bash -c`), an argv list, or a list of argv lists."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return (tuple(value),)
    if isinstance(value, list) and all(isinstance(v, list) for v in value):
        return tuple(tuple(str(a) for a in v) for v in value)
    raise ScenarioError(f"{where}.when: a command is a string or an argv list")
