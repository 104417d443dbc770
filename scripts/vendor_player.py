"""Vendor asciinema-player (the web page's terminal player) from npm, pinned.

    .venv/bin/python scripts/vendor_player.py [VERSION]   # default: the version pinned now

`npm pack` fetches the package (npm checks the registry's integrity hash), and its
minified bundle, stylesheet and licence are copied into `ptysup/serve/static/vendor/`
with a manifest of their SHA-256 hashes, which tests/unit/test_serve_assets.py checks.
Update by running this with a new version, then the browser tests.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VENDOR = REPO / "ptysup" / "serve" / "static" / "vendor"
MANIFEST = VENDOR / "manifest.json"
PACKAGE = "asciinema-player"
# Files taken from the npm tarball (under package/), stored under their base names.
FILES = (
    "dist/bundle/asciinema-player.min.js",
    "dist/bundle/asciinema-player.css",
    "LICENSE",
)


def pinned_version() -> str:
    """The version the manifest pins now."""
    return str(json.loads(MANIFEST.read_text(encoding="utf-8"))["version"])


def vendor(version: str) -> dict[str, object]:
    """Fetch `version` from npm, copy its files here and return the new manifest."""
    with tempfile.TemporaryDirectory(prefix="ptysup-vendor-") as tmp:
        out = subprocess.run(
            ["npm", "pack", "--silent", f"{PACKAGE}@{version}"],
            cwd=tmp,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        tarball = Path(tmp) / out.strip().splitlines()[-1]
        hashes: dict[str, str] = {}
        with tarfile.open(tarball) as tar:
            for name in FILES:
                member = tar.extractfile(f"package/{name}")
                if member is None:
                    raise SystemExit(f"vendor_player: {name} missing from {tarball.name}")
                data = member.read()
                target = VENDOR / Path(name).name
                target.write_bytes(data)
                hashes[target.name] = hashlib.sha256(data).hexdigest()
    manifest: dict[str, object] = {"package": PACKAGE, "version": version, "sha256": hashes}
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str]) -> int:
    """Vendor the version given, or re-fetch the pinned one."""
    version = argv[1] if len(argv) > 1 else pinned_version()
    VENDOR.mkdir(parents=True, exist_ok=True)
    manifest = vendor(version)
    print(json.dumps(manifest, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
