"""Where the pinned agents are installed: a checkout's .tools, or, for ptysup installed from
its wheel (no checkout above its files), $PTYSUP_TOOLS_DIR or a folder in the cache."""

from __future__ import annotations

from pathlib import Path

from ptysup.testing.pins import tools_dir


def _checkout(top: Path) -> Path:
    (top / "ptysup").mkdir(parents=True)
    (top / "pyproject.toml").write_text("[project]\n")
    return top


def test_a_checkout_uses_its_own_tools_folder(tmp_path: Path) -> None:
    repo = _checkout(tmp_path / "clone")
    assert tools_dir({}, repo) == repo / ".tools"


def test_an_installed_ptysup_uses_the_cache_not_site_packages(tmp_path: Path) -> None:
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "ptysup").mkdir(parents=True)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert tools_dir(env, site) == tmp_path / "cache" / "ptysup" / "tools"


def test_the_variable_names_the_folder_whatever_runs(tmp_path: Path) -> None:
    repo = _checkout(tmp_path / "clone")
    env = {"PTYSUP_TOOLS_DIR": str(tmp_path / "elsewhere")}
    assert tools_dir(env, repo) == tmp_path / "elsewhere"
