"""Claude Code's wrapper around pasted text, taken off again.

Newer Claude Code (2.1.332; not the pinned 2.1.197) moves a multi-line paste after the
typed text and wraps it in tags, both in the message the model receives and in the
UserPromptSubmit hook's `prompt`: `<typed>\\n\\n<pasted_content id="a85f">\\n<pasted
text>\\n</pasted_content id="a85f">\\n`. ptysup types every multi-line instruction as one
paste, so a prompt it typed comes back wrapped; unwrapped, it reads as 2.1.197 sent it.
"""

from __future__ import annotations

import re

# The closing tag repeats the opening tag's attributes (its id): a paste that itself holds
# a tag of another id stays whole.
_PASTE = re.compile(
    r"<pasted_content(?P<attrs>[^>\n]*)>\n(?P<body>.*?)\n?</pasted_content(?P=attrs)>",
    re.DOTALL,
)


def unwrap_pastes(text: str) -> str:
    """`text` with each pasted-content wrapper replaced by the pasted text, and the blank
    lines Claude Code put around the pastes trimmed; text without one is returned as is."""
    unwrapped, count = _PASTE.subn(lambda m: m.group("body"), text)
    return unwrapped.strip("\n") if count else text
