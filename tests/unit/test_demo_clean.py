"""`scripts/demo.sh --clean` removes the sample projects demos left behind, nothing else."""

from __future__ import annotations

from pathlib import Path

from ptysup.testing.demo import PREFIX, clean


def test_clean_removes_only_demo_folders(tmp_path: Path) -> None:
    (tmp_path / f"{PREFIX}abc" / ".ptysup").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    assert clean(tmp_path) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["other"]
