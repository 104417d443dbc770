"""Any other CLI agent: no hooks; a turn ends when its screen has been quiet a while."""

from __future__ import annotations

from ptysup.agents.profile import BaseProfile


class GenericProfile(BaseProfile):
    """An agent ptysup knows nothing about: output means working, quiet means done (every
    default of BaseProfile)."""

    name = "generic"
