"""Whether a message ptysup typed landed whole: in the agent's input box before Enter, and
in the prompt the agent reports (its UserPromptSubmit hook) after it.

Issue 30: Gemini CLI 0.61 took a message typed before it switched bracketed paste on as
keys, `?` opened its help and `!` its shell mode, and Enter then ran the rest as a shell
command. What shows in the box is checked before Enter is pressed, so a message that did
not land as text in the agent's own input box is never submitted.
"""

from __future__ import annotations

import re
import unicodedata

# What the box may show of a message without showing it differently: line breaks where it
# wraps, the indentation of continuation lines, a zero-width guard (Cf) that is not drawn.
_UNSHOWN = re.compile(r"\s+")


def bare(text: str) -> str:
    """TEXT without whitespace and format characters, as two renderings of it compare."""
    return "".join(c for c in _UNSHOWN.sub("", text) if unicodedata.category(c) != "Cf")


def shows(message: str, shown: str | None, placeholder: re.Pattern[str] | None = None) -> bool:
    """Whether the input box's text SHOWN is MESSAGE: the same characters, however wrapped.
    An agent that shows a large paste as a PLACEHOLDER (`[Pasted text #1 +40 lines]`)
    shows the rest of the box around it, in order."""
    if not shown:
        return False
    want = bare(message)
    parts = placeholder.split(shown) if placeholder is not None else [shown]
    if len(parts) == 1:
        return bare(shown) == want
    first, *middle, last = (bare(part) for part in parts)
    if not (want.startswith(first) and want.endswith(last)):
        return False
    at = len(first)
    for part in middle:
        found = want.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return at <= len(want) - len(last)


def same_prompt(message: str, prompt: str) -> bool:
    """Whether the prompt the agent reports is MESSAGE (agents trim it, turn tabs into
    spaces, drop zero-width characters)."""
    return bare(message) == bare(prompt)
