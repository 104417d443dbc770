"""API errors and usage limits: how long to wait before typing 'continue', and how often."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

MAX_WAIT_S = 6 * 3600.0
_MARGIN_S = 30.0  # after a shown reset time, so the limit is really lifted

_IN = re.compile(
    r"(?:resets?|try again|retry)\s+in\s+(?:(\d+)\s*h(?:ours?)?)?\s*(?:(\d+)\s*m(?:in(?:utes?)?)?)?"
    r"\s*(?:(\d+)\s*s(?:ec(?:onds?)?)?)?",
    re.IGNORECASE,
)
_AT = re.compile(
    r"resets?\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?(?:\s*\(([\w/+-]+)\))?",
    re.IGNORECASE,
)


def reset_delay(message: str, now: dt.datetime) -> float | None:
    """Seconds until the reset time shown in a usage-limit message, if it shows one.

    Understands 'resets in 2h 5m', 'try again in 30 seconds', 'resets 3pm',
    'resets at 15:30', 'resets 3pm (Europe/Berlin)'. `now` must be timezone-aware.
    """
    m = _IN.search(message)
    if m and any(m.groups()):
        h, mi, s = (int(g) if g else 0 for g in m.groups())
        return float(h * 3600 + mi * 60 + s)
    m = _AT.search(message)
    if m is None:
        return None
    hour, minute, ampm, zone = int(m.group(1)), int(m.group(2) or 0), m.group(3), m.group(4)
    if ampm:
        if hour > 12:
            return None
        hour = hour % 12 + (12 if ampm.lower() == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    local = now
    if zone:
        from zoneinfo import ZoneInfo  # here: only a usage-limit message needs it

        try:
            local = now.astimezone(ZoneInfo(zone))
        except (KeyError, ValueError):  # an unknown zone (ZoneInfoNotFoundError is a KeyError)
            local = now
    target = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if target <= local:
        target += dt.timedelta(days=1)
    return (target - local).total_seconds() + _MARGIN_S


@dataclass
class WaitPolicy:
    """Bounded waits for API errors: a shown reset time, else exponential backoff."""

    enabled: bool = True
    max_waits: int = 5
    base_s: float = 60.0
    used: int = field(default=0)

    def next_wait(self, message: str, now: dt.datetime) -> float | None:
        """Seconds to wait before going on, or None when no more waits are allowed."""
        if not self.enabled or self.used >= self.max_waits:
            return None
        shown = reset_delay(message, now)
        delay = shown if shown is not None else self.base_s * 2**self.used
        self.used += 1
        return min(delay, MAX_WAIT_S)


def is_api_error(text: str) -> bool:
    """Whether a message reads as an API error, rate limit, overload or usage limit."""
    return bool(_API.search(text))


_API = re.compile(
    r"API Error|rate.?limit|overloaded|usage limit|limit reached|\b(?:429|529)\b",
    re.IGNORECASE,
)


# Authentication and configuration errors: the same call fails the same way every time.
# Observed with Claude Code 2.1.197: `claude -p --output-format json` reports HTTP 401 as
# api_error_status 401, "Failed to authenticate. API Error: 401 …", an unknown model as
# 404 "There's an issue with the selected model (…)"; the TUI's StopFailure hook says
# `authentication_failed` when no key or login is there.
FATAL_STATUSES = frozenset({401, 403, 404})
_FATAL = re.compile(
    r"authentication_failed|authentication_error|Failed to authenticate|invalid x-api-key"
    r"|Invalid API key|Not logged in|Please run /login|permission_error|not_found_error"
    r"|issue with the selected model",
    re.IGNORECASE,
)


def is_fatal_error(text: str, status: int | None = None) -> bool:
    """Whether an error is about authentication or configuration: never waited out."""
    return (status is not None and status in FATAL_STATUSES) or bool(_FATAL.search(text))
