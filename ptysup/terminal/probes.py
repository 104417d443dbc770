"""Finding a few escape sequences in a flood of terminal output, fast.

The relay's thread looks for a handful of sequences (mode changes, clears) in every byte
the agent prints. A regex, or a search for each whole prefix, stops at every ESC or
`ESC [`, and ANSI-heavy output has one every few bytes. Instead each prefix is found by a
byte that is rare in terminal output and that the prefix ends with: one memchr per byte,
and a closer look only where it is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

# (rare byte, the prefixes that end with it)
Probes = Sequence[tuple[bytes, Sequence[bytes]]]

_MANY = 64  # more of one probe byte than this in a chunk: search for the prefixes instead


def _find_all(data: bytes, prefix: bytes, start: int = 0) -> Iterator[int]:
    """Every position of `prefix` in `data`, from `start`."""
    i = data.find(prefix, start)
    while i >= 0:
        yield i
        i = data.find(prefix, i + 1)


def starts(data: bytes, probes: Probes) -> list[int]:
    """Where one of the probes' prefixes starts in `data`, in order."""
    found: list[int] = []
    for byte, prefixes in probes:
        i = data.find(byte)
        seen = 0
        while i >= 0:
            seen += 1
            if seen > _MANY:  # text full of this byte (a row of `=`): the slower way is faster
                for prefix in prefixes:
                    found.extend(_find_all(data, prefix, max(0, i - len(prefix) + 1)))
                break
            for prefix in prefixes:
                at = i - len(prefix) + 1
                if at >= 0 and data.startswith(prefix, at):
                    found.append(at)
            i = data.find(byte, i + 1)
    found.sort()
    return found
