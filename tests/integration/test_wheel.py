"""What ships is what is tested: the wheel `pip install .` builds (the README's install, the
GitHub Action's and the container image's) holds every file of the package, and an install
of it finds them where the code looks."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.timeout(600)


def _source_files() -> set[str]:
    """Every file of the package in the checkout, as a wheel names it."""
    return {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "ptysup").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout, built as `pip install .` builds it."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(REPO)],
        check=True,
        capture_output=True,
        timeout=500,
    )
    (built,) = out.glob("ptysup-*.whl")
    return built


def test_every_file_of_the_package_is_in_the_wheel(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name for name in archive.namelist() if name.startswith("ptysup/")}
    missing = sorted(_source_files() - shipped)
    assert not missing, f"pyproject.toml's package-data leaves out: {missing}"


def test_an_installed_wheel_finds_opencodes_plugin(wheel: Path, tmp_path: Path) -> None:
    """The file is read from where the installed package is, not from the checkout."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True, system_site_packages=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    probe = (
        "import ptysup.agents.opencode.reporter as r, sys\n"
        "print(r.__file__); sys.stdout.write(r._TEMPLATE.read_text()[:20])\n"
    )
    done = subprocess.run(
        [str(python), "-I", "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    location, text = done.stdout.split("\n", 1)
    assert location.startswith(str(env_dir)), location
    assert text.strip()
