"""A plan loaded with the run options it may set at its top level, each checked as the
command line checks it (ptysup.cli.optioncheck)."""

from __future__ import annotations

from pathlib import Path

from ptysup.cli.optioncheck import OptionCheck
from ptysup.cli.options import checks as option_checks
from ptysup.config import ConfigError
from ptysup.plan.schema import Plan, PlanError, load_plan

# Options that make no sense inside a plan (the plan is the task; it cannot name itself).
_NOT_IN_PLAN = ("task", "plan", "config", "version")


def load(path: Path) -> Plan:
    """The plan at `path`; ConfigError (`FILE:LINE: problem`) if it cannot be used."""
    try:
        return load_plan(path, checks())
    except PlanError as exc:
        raise ConfigError(str(exc)) from None


def checks() -> dict[str, OptionCheck]:
    """Each allowed option's parameter name → a check of its value."""
    return option_checks(_NOT_IN_PLAN)
