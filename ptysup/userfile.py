"""Files a person hands ptysup (config, plan, TASKS.yaml, --task-file): read within bounds.
(open_regular is how ptysup's own files are opened when read back, too.)

One way in for all of them, so none can hang a run or exhaust memory: a regular file
(a FIFO or a device is refused, never read: it could block forever or never end) of at
most MAX_BYTES; YAML nested at most MAX_DEPTH deep, with at most MAX_ALIASES aliases and
at most MAX_NODES values once aliases are expanded (an alias "bomb" is a few lines that
expand to gigabytes), and no key given twice in one mapping, `max-iter` and `max_iter`
counting as one. Problems are `FILE:LINE: problem`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ptysup.values import ConfigError

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 100
MAX_ALIASES = 100
MAX_NODES = 100_000


class Unreadable(Exception):
    """A file that cannot be read; str() is the reason (`Permission denied`, …)."""


class InputError(ConfigError):
    """A file that cannot be used; str() is `FILE:LINE: problem` (`FILE: problem` without
    a line)."""

    def __init__(self, where: str, line: int, problem: str) -> None:
        super().__init__(f"{where}:{line}: {problem}" if line else f"{where}: {problem}")
        self.where, self.line, self.problem = where, line, problem


def read_text(path: Path) -> str:
    """The UTF-8 text of the regular file at `path`; Unreadable if it is not one, is
    bigger than MAX_BYTES, or cannot be read."""
    try:
        fd = open_regular(path)
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            return _decode(f.read(MAX_BYTES + 1))
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def open_regular(path: Path) -> int:
    """A read-only fd of the regular file at `path`; OSError (its strerror says what the
    file is) for a FIFO, a device, a folder: a FIFO blocks a read for ever, a device such
    as /dev/zero never ends. Also for the files ptysup reads back (ptysup.store.readback)."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"not a regular file ({kind_of(mode)})", str(path))
    return fd


def read_stream(stream: IO[str]) -> str:
    """At most MAX_BYTES of text from a stream (standard input); Unreadable past that."""
    text = stream.read(MAX_BYTES + 1)
    if len(text.encode("utf-8", "surrogateescape")) > MAX_BYTES:
        raise Unreadable(_too_big())
    return text


def _decode(data: bytes) -> str:
    if len(data) > MAX_BYTES:
        raise Unreadable(_too_big())
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("not UTF-8 text") from None


def _too_big() -> str:
    return f"bigger than the limit of {MAX_BYTES // 1024 // 1024} MiB"


def kind_of(mode: int) -> str:
    """What a file that is not a regular one is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "another kind of file"


def key_name(key: object) -> str:
    """A key as the option's parameter name (`max-iter` → `max_iter`): two spellings of
    one option are one key."""
    return str(key).replace("-", "_")


def compose_yaml(text: str, where: str) -> Any:
    """The YAML document in `text` as nodes (which keep their lines), within the bounds;
    None for an empty document; InputError (`FILE:LINE: problem`) otherwise."""
    import yaml

    _count_values(text, where)
    loader = None
    try:
        # The reader checks every character as it is made: a NUL is refused right here.
        loader = _bounded_loader()(text, where)
        root = loader.get_single_node()
    except yaml.YAMLError as exc:
        raise InputError(
            where, _error_line(exc, text), f"not valid YAML: {_problem(exc)}"
        ) from None
    finally:
        if loader is not None:
            loader.dispose()
    if root is not None:
        _Walk(where).check(root)
    return root


def _error_line(exc: Any, text: str) -> int:
    """The 1-based line a YAML error points at."""
    import yaml

    if isinstance(exc, yaml.reader.ReaderError):  # a character no YAML may hold
        return text.count("\n", 0, exc.position) + 1
    # A scanner error's context is the line that started the bad token (a key missing its
    # colon is reported at the next line otherwise); a parser's problem is exact.
    mark = getattr(exc, "problem_mark", None)
    if isinstance(exc, yaml.scanner.ScannerError) and exc.context_mark is not None:
        mark = exc.context_mark
    return mark.line + 1 if mark is not None else 1


def _problem(exc: Any) -> str:
    import yaml

    if isinstance(exc, yaml.reader.ReaderError):
        character = exc.character if isinstance(exc.character, int) else ord(exc.character)
        return f"the character #x{character:04x} is not allowed ({exc.reason})"
    return " ".join(str(getattr(exc, "problem", None) or exc).split())


def _count_values(text: str, where: str) -> None:
    """Refuse a document of more than MAX_NODES values before composing any: libyaml's
    parser (when PyYAML has it) goes through its events in a fraction of a second, where
    composing a megabyte of values took 21 s of CPU and 390 MB before the refusal. A
    document it cannot read is left to the composer, whose errors say where."""
    import yaml

    try:
        from yaml._yaml import CParser
    except ImportError:  # without libyaml the composer still counts as it goes
        return
    starts = (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)
    try:
        parser = CParser(text)
    except UnicodeError:  # a lone surrogate libyaml cannot take: the composer says where
        return
    values = 0
    try:
        event: Any = parser.get_event()
        while not isinstance(event, yaml.StreamEndEvent):
            values += isinstance(event, starts)
            if values > MAX_NODES:
                raise InputError(where, line_of(event), f"more than {MAX_NODES} values")
            event = parser.get_event()
    except (yaml.YAMLError, UnicodeError):
        return
    finally:
        parser.dispose()


def construct(node: Any) -> Any:
    """The plain value of a node that compose_yaml returned (so within the bounds)."""
    from yaml.constructor import SafeConstructor

    return SafeConstructor().construct_document(node)


def line_of(node: Any) -> int:
    """The 1-based line a node starts on."""
    return int(node.start_mark.line) + 1


def mapping_items(node: Any) -> Iterator[tuple[str, Any, Any]]:
    """(key as text, key node, value node) of a mapping node."""
    for key_node, value_node in node.value:
        yield str(key_node.value), key_node, value_node


def key_lines(root: Any) -> dict[tuple[str | int, ...], int]:
    """The line of every value by its place, e.g. ("tasks", 0, "max-iter") → 7, for
    readers that work on the plain value (compose_yaml has bounded the document)."""
    import yaml

    lines: dict[tuple[str | int, ...], int] = {}
    todo: list[tuple[tuple[str | int, ...], Any]] = [((), root)]
    while todo:
        place, node = todo.pop()
        lines[place] = line_of(node)
        if isinstance(node, yaml.MappingNode):
            todo += [((*place, key), value) for key, k, value in mapping_items(node)]
            lines.update({(*place, key): line_of(k) for key, k, _ in mapping_items(node)})
        elif isinstance(node, yaml.SequenceNode):
            todo += [((*place, i), item) for i, item in enumerate(node.value)]
    return lines


_LOADER: Any = None


def _bounded_loader() -> Any:
    """SafeLoader counting nesting and aliases while it composes (built once, on first use:
    `ptysup --help` never imports yaml)."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        def __init__(self, text: str, where: str) -> None:
            super().__init__(text)
            self.where, self.depth, self.aliases, self.values = where, 0, 0, 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event: Any = self.peek_event()  # type: ignore[no-untyped-call]
            line = int(getattr(event.start_mark, "line", 0)) + 1
            if isinstance(event, yaml.AliasEvent):
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    raise InputError(
                        self.where, line, f"more than {MAX_ALIASES} YAML aliases (*name)"
                    )
            self.depth += 1
            if self.depth > MAX_DEPTH:  # the composer recurses: refuse before Python does
                raise InputError(self.where, line, f"nested more than {MAX_DEPTH} deep")
            self.values += 1
            if self.values > MAX_NODES:  # refused as soon as it is, not once all are made
                raise InputError(self.where, line, f"more than {MAX_NODES} values")
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    # YAML 1.1 reads 2026-01-01 as a date, which no option, plan or task takes: it stays text.
    BoundedLoader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _LOADER = BoundedLoader
    return _LOADER


_YAML = "tag:yaml.org,2002:"
_TIMESTAMP = _YAML + "timestamp"
# What a person's file may hold: the values JSON has (and `<<` merges). Any other tag
# (!!python/…, !!set, !!binary, a custom !tag) has no meaning here and would reach an
# option's check as an object it cannot read.
_PLAIN_TAGS = frozenset(
    _YAML + t for t in ("str", "int", "float", "bool", "null", "seq", "map", "merge")
)


def _shown_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML) :] if tag.startswith(_YAML) else tag


class _Walk:
    """Checks a composed document: its size and depth with aliases expanded, an alias
    inside its own anchor, and keys given twice in one mapping."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.sizes: dict[int, int] = {}
        self.open: set[int] = set()

    def check(self, root: Any) -> None:
        if self.size(root, 1) > MAX_NODES:
            raise InputError(self.where, 0, f"more than {MAX_NODES} values once aliases expand")

    def size(self, node: Any, depth: int) -> int:
        """How many values `node` stands for, aliases expanded (counted once per node)."""
        known = self.sizes.get(id(node))
        if known is not None:
            return known
        if id(node) in self.open:
            raise InputError(self.where, line_of(node), "a YAML alias is inside its own anchor")
        if depth > MAX_DEPTH:
            raise InputError(
                self.where, line_of(node), f"nested more than {MAX_DEPTH} deep (with aliases)"
            )
        if node.tag not in _PLAIN_TAGS:
            raise InputError(
                self.where,
                line_of(node),
                f"the YAML tag {_shown_tag(node.tag)} is not supported "
                "(plain values only: text, numbers, true/false, null, lists, mappings)",
            )
        self.open.add(id(node))
        known = 1 + sum(self.size(child, depth + 1) for child in self.children(node))
        self.open.discard(id(node))
        self.sizes[id(node)] = known
        return known

    def children(self, node: Any) -> list[Any]:
        import yaml

        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        if not isinstance(node, yaml.MappingNode):
            return []
        seen: dict[str, tuple[int, str]] = {}
        out: list[Any] = []
        for key, key_node, value_node in mapping_items(node):
            if not isinstance(key_node, yaml.ScalarNode):
                kind = "a list" if isinstance(key_node, yaml.SequenceNode) else "a mapping"
                raise InputError(self.where, line_of(key_node), f"a key must be text, not {kind}")
            name = key_name(key)
            if name in seen:
                line, first = seen[name]
                spelled = f" as `{first}`" if first != key else ""
                raise InputError(
                    self.where,
                    line_of(key_node),
                    f"`{key}` is given twice: first at line {line}{spelled}",
                )
            seen[name] = (line_of(key_node), key)
            out += [key_node, value_node]
        return out
