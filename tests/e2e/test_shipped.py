"""What ships is what is tested: scripts/test.sh runs the end-to-end tests against ptysup
installed from its wheel (as `pip install .` installs it) in a venv of its own, not this
editable checkout, and that install is of this checkout's files as they are now."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO, SHIPPED_PYTHON, ptysup_argv

pytestmark = pytest.mark.e2e


def _shipped_package() -> Path:
    if not SHIPPED_PYTHON:
        message = "PTYSUP_UNDER_TEST names no shipped ptysup (scripts/test.sh sets it)"
        if os.environ.get("PTYSUP_REQUIRE_E2E") == "1":
            pytest.fail(message)
        pytest.skip(message)
    found = subprocess.run(
        [SHIPPED_PYTHON, "-I", "-c", "import ptysup; print(ptysup.__file__)"],
        cwd=REPO,  # the checkout's folder must not shadow the installed package
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(found.stdout.strip()).parent


def _digests(top: Path) -> dict[str, str]:
    return {
        path.relative_to(top).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in top.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_end_to_end_tests_run_ptysup_from_its_wheel_not_the_checkout() -> None:
    package = _shipped_package()
    assert package.parent.name == "site-packages", package
    assert package != REPO / "ptysup"
    assert ptysup_argv()[0] == SHIPPED_PYTHON


def test_the_shipped_ptysup_is_this_checkouts_files_as_they_are_now() -> None:
    """A change not yet installed (setup.sh's stamp missed it) would test an old ptysup."""
    shipped = _digests(_shipped_package())
    checkout = _digests(REPO / "ptysup")
    assert shipped == checkout
