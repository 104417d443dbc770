"""The page's static files, read once at start; the vendored terminals are checked by hash.

Only the files named here are served, by exact name: a request path never becomes a file
path. The player (asciinema-player, Apache-2.0, its LICENSE beside it) and the control
page's terminal (xterm.js, MIT, in vendor/xterm/ with its LICENSE) are vendored by
scripts/vendor_player.py, which writes each folder's `manifest.json` with each file's
SHA-256; a file that does not match its hash stops the server from starting.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
MANIFEST = STATIC / "vendor" / "manifest.json"
VENDORED = ("vendor", "vendor/xterm")  # folders under static/, each with its manifest.json
CONTROL_PAGE = "/control"  # served only with the control token (routes.py)
# URL path → (file under static/, content type)
FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/app.css": ("app.css", "text/css; charset=utf-8"),
    "/static/vendor/asciinema-player.min.js": (
        "vendor/asciinema-player.min.js",
        "text/javascript; charset=utf-8",
    ),
    "/static/vendor/asciinema-player.css": (
        "vendor/asciinema-player.css",
        "text/css; charset=utf-8",
    ),
    "/static/vendor/LICENSE": ("vendor/LICENSE", "text/plain; charset=utf-8"),
    CONTROL_PAGE: ("control.html", "text/html; charset=utf-8"),
    "/static/control.js": ("control.js", "text/javascript; charset=utf-8"),
    "/static/control.css": ("control.css", "text/css; charset=utf-8"),
    "/static/vendor/xterm/xterm.js": ("vendor/xterm/xterm.js", "text/javascript; charset=utf-8"),
    "/static/vendor/xterm/xterm.css": ("vendor/xterm/xterm.css", "text/css; charset=utf-8"),
    "/static/vendor/xterm/LICENSE": ("vendor/xterm/LICENSE", "text/plain; charset=utf-8"),
}


class AssetError(Exception):
    """A static file is missing or a vendored one does not match its pinned hash."""


@dataclass(frozen=True)
class Asset:
    """One static file, in memory."""

    body: bytes
    content_type: str


def vendored_problems(static: Path = STATIC) -> list[str]:
    """Each vendored file that is missing or differs from its manifest's SHA-256."""
    return [problem for folder in VENDORED for problem in _problems(static / folder)]


def _problems(folder: Path) -> list[str]:
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    problems = []
    for name, want in manifest["sha256"].items():
        path = folder / name
        try:
            got = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror or exc}")
            continue
        if got != want:
            problems.append(f"{path}: SHA-256 {got}, the manifest pins {want}")
    return problems


def load(static: Path = STATIC) -> dict[str, Asset]:
    """Every servable file by URL path; AssetError if one is missing or was altered."""
    try:
        problems = vendored_problems(static)
    except (OSError, ValueError, KeyError) as exc:
        raise AssetError(f"cannot read a vendored terminal's manifest: {exc}") from None
    if problems:
        raise AssetError(f"a vendored terminal does not match its manifest: {problems[0]}")
    assets = {}
    for url, (name, content_type) in FILES.items():
        try:
            assets[url] = Asset((static / name).read_bytes(), content_type)
        except OSError as exc:
            raise AssetError(f"cannot read {static / name}: {exc.strerror or exc}") from None
    return assets
