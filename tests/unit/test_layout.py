"""The tree shows the architecture: a new module goes into the package that owns its
concern, so at most 12 stay loose in ptysup/ (the import layers are `lint-imports`')."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ptysup"


def test_at_most_12_modules_lie_loose_in_ptysup() -> None:
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= 12, loose


def test_every_package_says_what_it_owns_and_what_it_may_import() -> None:
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "import" in doc, f"{init.relative_to(PACKAGE.parent)} has no such docstring"
