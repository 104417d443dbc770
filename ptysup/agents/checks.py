"""What `ptysup doctor` reports: one finding each. An agent's folder makes its own (its
first-run screens, where its hooks are read from) and the registry hands them on."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, whether it is fine, and if not, the fix."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
