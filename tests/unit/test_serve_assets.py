"""The vendored asciinema-player is the pinned one, checked by hash, with its licence."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from ptysup.serve import assets


def test_the_vendored_files_match_the_manifest() -> None:
    manifest = json.loads(assets.MANIFEST.read_text())
    assert manifest["package"] == "asciinema-player"
    assert manifest["version"].count(".") == 2  # an exact version, never a range
    names = set(manifest["sha256"])
    assert names == {"asciinema-player.min.js", "asciinema-player.css", "LICENSE"}
    for name, want in manifest["sha256"].items():
        data = (assets.STATIC / "vendor" / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == want, name
    assert "Apache License" in (assets.STATIC / "vendor" / "LICENSE").read_text()
    assert assets.vendored_problems() == []


def test_every_served_file_exists() -> None:
    served = assets.load()
    assert set(served) == set(assets.FILES)
    assert all(asset.body for asset in served.values())


def test_an_altered_player_stops_the_server_from_starting(tmp_path: Path) -> None:
    static = tmp_path / "static"
    shutil.copytree(assets.STATIC, static)
    player = static / "vendor" / "asciinema-player.min.js"
    player.write_bytes(player.read_bytes() + b"\n// changed")
    problems = assets.vendored_problems(static)
    assert len(problems) == 1 and "asciinema-player.min.js" in problems[0]
    with pytest.raises(assets.AssetError, match="does not match its manifest"):
        assets.load(static)
