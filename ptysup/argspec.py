"""What a subcommand's hand-written parser takes, declared next to that parser: the words
shell completion offers after `ptysup NAME` (see ptysup.cli.completion)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

# What a value or argument is: a path ("file": files and directories; "dir"), free text,
# or one of fixed choices.
Value = Literal["file", "dir", "text"] | tuple[str, ...]


@dataclass(frozen=True)
class ArgSpec:
    """A subcommand's options, positional arguments and own subcommands."""

    flags: tuple[str, ...] = ()
    options: Mapping[str, Value] = field(default_factory=dict)  # name → its value
    args: tuple[Value, ...] = ()
    run_options: bool = False  # it also takes a run's options (`ptysup TASK --...`)
    not_run_options: frozenset[str] = frozenset()  # ...all but these (e.g. "--log-file")
    subcommands: Mapping[str, ArgSpec] = field(default_factory=dict)
