"""Vendor the web page's terminals from npm, pinned: asciinema-player (the read-only page's
player) and xterm.js (the control page's live terminal).

    .venv/bin/python scripts/vendor_player.py [PACKAGE [VERSION]]   # default: each, as pinned

`npm pack` fetches a package (npm checks the registry's integrity hash), and the files
named below are copied into its folder under `ptysup/serve/static/vendor/` with a manifest
of their SHA-256 hashes, which ptysup/serve/assets.py checks at start and
tests/unit/test_serve_assets.py checks too. Update by running this with a new version,
then the browser tests.
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
STATIC_VENDOR = REPO / "ptysup" / "serve" / "static" / "vendor"
# package → (its folder, the files taken from the npm tarball, under package/, each stored
# under its base name)
PACKAGES = {
    "asciinema-player": (
        STATIC_VENDOR,
        ("dist/bundle/asciinema-player.min.js", "dist/bundle/asciinema-player.css", "LICENSE"),
    ),
    "@xterm/xterm": (STATIC_VENDOR / "xterm", ("lib/xterm.js", "css/xterm.css", "LICENSE")),
}


def pinned_version(package: str) -> str:
    """The version the package's manifest pins now."""
    manifest = PACKAGES[package][0] / "manifest.json"
    return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])


def vendor(package: str, version: str) -> dict[str, object]:
    """Fetch `package` at `version` from npm, copy its files here, return the new manifest."""
    folder, files = PACKAGES[package]
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ptysup-vendor-") as tmp:
        out = subprocess.run(
            ["npm", "pack", "--silent", f"{package}@{version}"],
            cwd=tmp,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        tarball = Path(tmp) / out.strip().splitlines()[-1]
        hashes: dict[str, str] = {}
        with tarfile.open(tarball) as tar:
            for name in files:
                member = tar.extractfile(f"package/{name}")
                if member is None:
                    raise SystemExit(f"vendor_player: {name} missing from {tarball.name}")
                data = member.read()
                target = folder / Path(name).name
                target.write_bytes(data)
                hashes[target.name] = hashlib.sha256(data).hexdigest()
    manifest: dict[str, object] = {"package": package, "version": version, "sha256": hashes}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main(argv: list[str]) -> int:
    """Vendor the package and version given, or re-fetch each as pinned."""
    if len(argv) > 1 and argv[1] not in PACKAGES:
        print(f"vendor_player: PACKAGE is one of {', '.join(PACKAGES)}", file=sys.stderr)
        return 2
    packages = [argv[1]] if len(argv) > 1 else list(PACKAGES)
    for package in packages:
        version = argv[2] if len(argv) > 2 else pinned_version(package)
        print(json.dumps(vendor(package, version), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
