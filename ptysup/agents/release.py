"""What every agent's folder says of the release the tests run (its pin) and of the private,
offline home the tests and the demo run it in (its test kit): plain data and the agent's
own config writer, used by ptysup/testing (which installs and runs) and by `ptysup doctor`
(which names the releases tested). Nothing here installs or starts anything."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Release:
    """An agent's npm package (or, with `pip`, PyPI package) at the release CI tests."""

    package: str
    version: str  # the pin: CI's end-to-end tests run it
    bin_name: str  # the launcher under node_modules/.bin (a virtualenv's bin/)
    folder: str  # under .tools/
    # The pin before this one, still tested as the compatibility lane
    # (scripts/test-lane.sh previous): what most people had installed until lately.
    previous: str | None = None
    pip: bool = False  # a PyPI package, in a virtualenv of its own
    python_below: tuple[int, int] = (99, 0)  # a PyPI package's newest Python, excluded

    @property
    def tested(self) -> tuple[str, ...]:
        """The releases the end-to-end tests pass with: the pin, then the previous one."""
        return (self.version, self.previous) if self.previous else (self.version,)


@dataclass(frozen=True)
class Setup:
    """What a test home is made for: the fake model's URL, the folders the agent trusts,
    whether it asks before edits and commands (opencode runs them unasked otherwise), and
    the API key it is configured for (None: the test kit's own fake key)."""

    base_url: str
    projects: tuple[Path, ...] = ()
    approvals: bool = True
    api_key: str | None = None


@dataclass(frozen=True)
class OfflineHome:
    """How an agent is run offline in a private home for the tests and the demo."""

    label: str  # the agent's name for people: "Claude Code"
    # Outer variables with these prefixes would leak a real account or endpoint (or another
    # home of the agent's) into the child: never passed on.
    stripped: tuple[str, ...]
    # (home, setup, outer environment, binary): writes the agent's config into the home
    # and gives the environment that runs it there.
    fill: Callable[[Path, Setup, Mapping[str, str] | None, Path | None], dict[str, str]]
    home_var: str  # the variable that names the home (`env --home`'s help)
    projects: bool = False  # its config trusts folders (`env --project`)
    # The person's text as the agent sent it to the model, with the agent's own wrapping
    # taken off (Claude Code wraps a long paste): what the fake model's scenarios match.
    unwrap: Callable[[str], str] = lambda text: text


def offline_env(
    outer: Mapping[str, str] | None,
    stripped: Sequence[str],
    binary: Path | None,
    variables: Mapping[str, str],
) -> dict[str, str]:
    """OUTER (default os.environ) without its variables with a STRIPPED prefix (a real
    account or endpoint must not leak in), with VARIABLES set and BINARY's folder first
    on PATH."""
    source = os.environ if outer is None else outer
    env = {k: v for k, v in source.items() if not k.startswith(tuple(stripped))}
    env.update(variables)
    if binary is not None:
        rest = env.get("PATH", os.defpath)
        env["PATH"] = os.pathsep.join([str(binary.parent), rest])
    return env
