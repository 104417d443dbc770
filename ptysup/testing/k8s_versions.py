"""The Kubernetes releases the manifests are validated against: every one from a given
release on that kubernetes-validate (a test dependency) has schemas for, oldest first.

    python -m ptysup.testing.k8s_versions 1.29     # 1.29.0 1.30.0 ... (one line)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def known_from(oldest: str) -> list[str]:
    """Every release kubernetes-validate knows from `oldest` (e.g. "1.29") on."""
    from kubernetes_validate.utils import all_versions  # type: ignore[import-untyped]

    floor = _key(oldest)
    return sorted({v for v in all_versions() if _key(v)[:2] >= floor[:2]}, key=_key)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the releases from argv[0] on, space-separated; exit 2 without one."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not all(p.isdigit() for p in args[0].split(".")):
        print("usage: python -m ptysup.testing.k8s_versions OLDEST (e.g. 1.29)", file=sys.stderr)
        return 2
    found = known_from(args[0])
    if not found:
        print(f"ptysup: kubernetes-validate knows no release from {args[0]} on", file=sys.stderr)
        return 1
    print(" ".join(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
