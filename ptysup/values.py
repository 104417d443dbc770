"""How a written option value becomes a value: the one error a bad value raises
(ConfigError) and the readers shared by the command line, a config file and a plan.
Below everything that reads options, so a plan's schema reads them without the RunConfig."""

from __future__ import annotations

import math
import re
import shlex


class ConfigError(Exception):
    """An option's value is unusable; the message is one line for the person."""


def split_command(value: str, option: str) -> tuple[str, ...]:
    """Split a command line like a shell does (it is never run through one)."""
    try:
        return command_argv(value)
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}") from None


def command_argv(value: str) -> tuple[str, ...]:
    """A command line split like a shell does; ValueError (the problem) if it cannot be."""
    argv = tuple(shlex.split(value))  # ValueError: "No closing quotation"
    if not argv:
        raise ValueError("the command is empty")
    return argv


_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?")


def parse_duration(value: str, option: str) -> float:
    """'90m', '1h30m', '45s', '2h' or plain seconds ('120') → seconds."""
    try:
        return duration_seconds(value)
    except ValueError as exc:
        raise ConfigError(f"{option}: {exc}") from None


def duration_seconds(value: str) -> float:
    """A duration in seconds; ValueError (the problem) if `value` is none or not positive."""
    text = value.strip().lower()
    try:
        seconds = float(text)
    except ValueError:
        m = _DURATION.fullmatch(text)
        if not text or m is None or not any(m.groups()):
            raise ValueError(f"{value!r} is not a duration (e.g. 90m, 1h30m, 45s)") from None
        h, mi, s = (float(g) if g else 0.0 for g in m.groups())
        seconds = h * 3600 + mi * 60 + s
    if not math.isfinite(seconds):  # "inf" would mean no budget at all
        raise ValueError(f"must be a finite duration, not {value!r}")
    if seconds <= 0:
        raise ValueError("must be more than zero")
    return seconds


def duration_text(seconds: float) -> str:
    """5400 → '1h30m', 95 → '1m35s', 40 → '40s'."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [
        f"{hours}h" if hours else "",
        f"{minutes}m" if minutes else "",
        f"{secs}s" if secs else "",
    ]
    return "".join(parts) or "0s"
