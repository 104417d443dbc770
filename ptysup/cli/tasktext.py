"""The task: from TASK or --task-file (a file, or '-' for standard input), checked before
anything is created."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from ptysup.config import ConfigError
from ptysup.terminal.inject import MAX_MESSAGE, as_message
from ptysup.userfile import Unreadable, read_stream, read_text


def resolve_task(task: str | None, task_file: str | None, stdin: IO[str]) -> str:
    """The task text; ConfigError (a usage error) when missing, empty, unreadable or too big."""
    if task is not None and task_file is not None:
        raise ConfigError("give the task as TASK or --task-file, not both")
    if task_file is not None:
        task = _read(task_file, stdin)
    if task is None:
        raise ConfigError("missing TASK (or --task-file FILE, or --plan FILE)")
    try:
        task.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError("the task is not valid UTF-8 text") from None
    if not task.strip():
        raise ConfigError("the task is empty")
    size = len(as_message(task))
    if size > MAX_MESSAGE:
        raise ConfigError(
            f"the task is {size} characters; the limit is {MAX_MESSAGE} (one message typed "
            "into the agent): put the details in a file in the project and name it in the task"
        )
    return task


def _read(name: str, stdin: IO[str]) -> str:
    try:
        return read_stream(stdin) if name == "-" else read_text(Path(name))
    except Unreadable as exc:
        raise ConfigError(f"--task-file {name}: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--task-file -: cannot read standard input: {exc}") from None
