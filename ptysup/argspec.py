"""What a subcommand's hand-written parser takes, declared next to that parser: the words
shell completion offers after `ptysup NAME` (see ptysup.cli.completion)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
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
    # Options it takes but never offers (a batch's children get `--run-id`), each taking
    # a value.
    unsaid: tuple[str, ...] = ()


def unknown_option(
    spec: ArgSpec, args: Sequence[str], name: str, run_options: Mapping[str, bool]
) -> tuple[str, str, str | None] | None:
    """(the subcommand's whole NAME, the first option in ARGS that it does not take, the
    one that was probably meant), or None. RUN_OPTIONS: each of a run's options, and
    whether it takes a value. After `--` every word is an argument; a subcommand's own
    subcommand is checked on."""
    if args and args[0] in spec.subcommands:
        sub = spec.subcommands[args[0]]
        return unknown_option(sub, args[1:], f"{name} {args[0]}", run_options)
    valued = {option: True for option in (*spec.options, *spec.unsaid)}
    if spec.run_options:
        valued |= dict(run_options)  # those it refuses (`--log-file`) its parser explains
    known = (*spec.flags, *valued, "-h", "--help")
    words = iter(args)
    for word in words:
        if word == "--":
            return None
        if not word.startswith("-") or word == "-":
            continue
        option = word.split("=", 1)[0] if word.startswith("--") else word
        if valued.get(option) and "=" not in word:
            next(words, None)  # its value, whatever it looks like
            continue
        short = [o for o in spec.options if len(o) == 2 and word.startswith(o)]
        if option in known or short:  # --opt=value, or -nVALUE
            continue
        close = difflib.get_close_matches(option, known, n=1, cutoff=0.75)
        return name, word, close[0] if close else None
    return None
