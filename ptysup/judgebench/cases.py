"""A judge-bench case: one labelled turn end, as a JSON file (documented on the docs page
"How good is the judge"). What the judge is shown comes from the run it was recorded in;
the project — its files before the agent started and at the turn end — lets the bench run
the checks, their baseline and the tamper guard again. A case without a project replays
the evidence and the checks' verdict as the run recorded them.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ptysup.run.decision import Moment, TurnView
from ptysup.run.turns import moment_from, moment_json, texts, view_from, view_json

FORMAT = 1
CORPUS = Path(__file__).resolve().parent / "corpus"  # shipped with the package
MAX_CASE_BYTES = 8 * 1024 * 1024  # a larger file is refused, not read

# The kinds of turn end, in the order the report lists them.
KINDS: Mapping[str, str] = {
    "done": "really done",
    "checks_fail": "claims done, the checks fail",
    "tests_edited": "tests edited to pass",
    "passes_before": "the check passes before any change",
    "question": "the agent asks a question",
    "should_continue": 'stopped early: "should I continue?"',
    "spinning": "the same round again",
    "impossible": "the tests contradict the spec",
    "person": "only a person can go on",
}
LABELS = ("done", "not_done", "person")
OUTCOMES = ("complete", "continue", "escalate", "abort")
RIGHT = {"done": "complete", "not_done": "continue", "person": "escalate"}  # label → outcome
# What ptysup's own checks made of the turn end: all passed, one failed, they passed only
# with the agent's changes to protected files, or there are none.
CHECKS = ("pass", "fail", "tampered", "none")


class CaseError(ValueError):
    """A case file that is not one: its path and the problem, one line."""


@dataclass(frozen=True)
class File:
    """One file of a case's project."""

    data: bytes
    executable: bool = False
    link: bool = False  # a symbolic link; `data` is its target


@dataclass(frozen=True)
class Checks:
    """What ptysup's checks made of the turn end (for a [COMPLETE] there)."""

    result: str = "none"  # one of CHECKS
    command: tuple[str, ...] = ()  # the failing check (fail, tampered)
    exit_code: int | None = None
    output_tail: str = ""
    files: tuple[str, ...] = ()  # tampered: the protected files the agent changed


@dataclass(frozen=True)
class Case:
    """A labelled turn end."""

    name: str  # the file's name without .json
    kind: str  # one of KINDS
    label: str  # one of LABELS: what the judge should make of it
    task: str
    turn: TurnView
    moment: Moment
    why: str = ""  # why it is labelled so
    verify: tuple[tuple[str, ...], ...] = ()  # what a [COMPLETE] had to pass
    protect: tuple[str, ...] = ()  # --protect's pathspecs
    notes: tuple[str, ...] = ()  # the prompt's notes (a refusal, a repeat…)
    events: tuple[Mapping[str, Any], ...] = ()  # the run so far: the judge's memory
    start: Mapping[str, File] | None = None  # the project before the agent; None: none
    end: Mapping[str, File | None] = field(default_factory=dict)  # changed since; None: gone
    evidence: str = ""  # the evidence as the run recorded it (used without a project)
    checks: Checks = field(default_factory=Checks)
    source: Mapping[str, Any] = field(default_factory=dict)  # where it was recorded

    @property
    def right(self) -> str:
        """The outcome its label asks for."""
        return RIGHT[self.label]

    def to_json(self) -> dict[str, Any]:
        """The file's content."""
        c = self.checks
        data: dict[str, Any] = {
            "format": FORMAT,
            "kind": self.kind,
            "label": self.label,
            "why": self.why,
            "source": dict(self.source),
            "task": self.task,
            "verify": [shlex.join(v) for v in self.verify],
            "protect": list(self.protect),
            "turn": view_json(self.turn),
            "moment": moment_json(self.moment),
            "notes": list(self.notes),
            "events": [dict(e) for e in self.events],
            "checks": {
                "result": c.result,
                "command": shlex.join(c.command),
                "exit_code": c.exit_code,
                "output_tail": c.output_tail,
                "files": list(c.files),
            },
            "evidence": self.evidence,
        }
        if self.start is not None:
            data["project"] = {
                "start": {p: _file_json(f) for p, f in sorted(self.start.items())},
                "end": {p: _file_json(f) for p, f in sorted(self.end.items())},
            }
        return data


def _file_json(f: File | None) -> Any:
    if f is None:
        return None
    if f.link:
        return {"link": f.data.decode("utf-8", errors="surrogateescape")}
    try:
        text = f.data.decode("utf-8")
    except UnicodeDecodeError:
        out: dict[str, Any] = {"base64": base64.b64encode(f.data).decode()}
    else:
        if not f.executable:
            return text
        out = {"text": text}
    if f.executable:
        out["executable"] = True
    return out


def _file(value: Any, where: str) -> File | None:
    if value is None:
        return None
    if isinstance(value, str):
        return File(value.encode())
    if not isinstance(value, Mapping):
        raise TypeError(f"{where}: a file is text or an object, not {type(value).__name__}")
    executable = bool(value.get("executable"))
    if "link" in value:
        return File(str(value["link"]).encode("utf-8", errors="surrogateescape"), link=True)
    if "base64" in value:
        return File(base64.b64decode(str(value["base64"]), validate=True), executable)
    if "text" in value:
        return File(str(value["text"]).encode(), executable)
    raise TypeError(f"{where}: a file object needs text, base64 or link")


def _files(value: Any, where: str, deletions: bool) -> dict[str, File | None]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{where} is not an object")
    out = {}
    for path, data in value.items():
        name = str(path)
        if (
            not name
            or name.startswith("/")
            or ".." in Path(name).parts
            or ".git" in name.split("/")
        ):
            raise TypeError(f"{where}: {name!r} is not a path inside the project")
        out[name] = _file(data, f"{where}.{name}")
        if out[name] is None and not deletions:
            raise TypeError(f"{where}.{name}: null (a deleted file) belongs in end only")
    return out


def _one_of(value: Any, choices: Iterable[str], name: str) -> str:
    choices = tuple(choices)
    if value not in choices:
        raise TypeError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return str(value)


def _checks(value: Any) -> Checks:
    if value is None:
        return Checks()
    if not isinstance(value, Mapping):
        raise TypeError("checks is not an object")
    code = value.get("exit_code")
    return Checks(
        _one_of(value.get("result", "none"), CHECKS, "checks.result"),
        tuple(shlex.split(str(value.get("command") or ""))),
        code if isinstance(code, int) and not isinstance(code, bool) else None,
        str(value.get("output_tail") or ""),
        texts(value.get("files")),
    )


def from_json(data: Any, name: str) -> Case:
    """A case from a file's JSON; TypeError, KeyError or ValueError with the problem."""
    if not isinstance(data, Mapping):
        raise TypeError("not a JSON object")
    if data.get("format", FORMAT) != FORMAT:
        raise TypeError(f"format {data.get('format')!r}: this ptysup reads format {FORMAT}")
    project = data.get("project")
    start: dict[str, File] | None = None
    end: dict[str, File | None] = {}
    if project is not None:
        if not isinstance(project, Mapping):
            raise TypeError("project is not an object")
        start = {p: f for p, f in _files(project.get("start"), "project.start", False).items() if f}
        end = _files(project.get("end") or {}, "project.end", True)
    events = data.get("events") or []
    if not isinstance(events, list) or not all(isinstance(e, Mapping) for e in events):
        raise TypeError("events is not a list of objects")
    return Case(
        name=name,
        kind=_one_of(data.get("kind"), KINDS, "kind"),
        label=_one_of(data.get("label"), LABELS, "label"),
        task=str(data["task"]),
        turn=view_from(data["turn"]),
        moment=moment_from(data["moment"]),
        why=str(data.get("why") or ""),
        verify=tuple(tuple(shlex.split(str(v))) for v in texts(data.get("verify"))),
        protect=texts(data.get("protect")),
        notes=texts(data.get("notes")),
        events=tuple(events),
        start=start,
        end=end,
        evidence=str(data.get("evidence") or ""),
        checks=_checks(data.get("checks")),
        source=dict(data.get("source") or {}),
    )


def load(path: Path) -> Case:
    """The case in file `path`; CaseError (one line) when it is none."""
    try:
        if path.stat().st_size > MAX_CASE_BYTES:
            raise CaseError(f"{path}: larger than {MAX_CASE_BYTES // (1024 * 1024)} MB")
        data = json.loads(path.read_text(encoding="utf-8"))
        return from_json(data, path.stem)
    except OSError as exc:
        raise CaseError(f"{path}: {exc.strerror or exc}") from None
    except (TypeError, KeyError, ValueError) as exc:
        if isinstance(exc, CaseError):
            raise
        what = f"{exc.args[0]} is missing" if isinstance(exc, KeyError) else str(exc)
        raise CaseError(f"{path}: not a judge-bench case: {what}") from None


def case_files(paths: Sequence[Path]) -> list[Path]:
    """The case files `paths` name: files as given, folders' *.json (sorted); the bundled
    corpus when none is given. CaseError for a path that is neither."""
    found: list[Path] = []
    for path in paths or [CORPUS]:
        if path.is_dir():
            found += sorted(path.glob("*.json"))
        elif path.is_file():
            found.append(path)
        else:
            raise CaseError(f"{path}: no such file or folder")
    return found


def write(case: Case, path: Path) -> None:
    """Write `case` to `path` (its folder made if need be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(case.to_json(), indent=1, ensure_ascii=False) + "\n")
    tmp.replace(path)


PROJECT = "{project}"  # stands for the project's folder in a case's texts


def with_texts(case: Case, change: Callable[[str], str]) -> Case:
    """`case` with `change` applied to every text the judge is shown (the task, the turn,
    the notes, the evidence, the run so far, the checks' output)."""
    v, c = case.turn, case.checks
    return replace(
        case,
        task=change(case.task),
        turn=TurnView(
            change(v.turn_end),
            tuple(change(t) for t in v.tools),
            change(v.last_message),
            change(v.screen),
            change(v.question),
            v.dialog,
        ),
        notes=tuple(change(n) for n in case.notes),
        evidence=change(case.evidence),
        events=tuple(_changed(e, change) for e in case.events),
        checks=replace(c, output_tail=change(c.output_tail)),
    )


def _changed(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, Mapping):
        return {k: _changed(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_changed(v, change) for v in value]
    return value


def portable(case: Case, folder: str) -> Case:
    """`case` with the run's project folder written as PROJECT, so it reads the same
    wherever it is replayed."""
    return with_texts(case, lambda text: text.replace(folder, PROJECT)) if folder else case


def placed(case: Case, folder: Path) -> Case:
    """`case` with PROJECT standing for `folder`, where it is replayed."""
    return with_texts(case, lambda text: text.replace(PROJECT, str(folder)))
