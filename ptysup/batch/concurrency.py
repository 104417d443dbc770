"""How many runs a batch starts at once when it is not told: what the machine can hold.

Each run is a ptysup process plus a Claude Code (Node) process of about 300 MB, and most
of a run's time is spent waiting on the model, so one run per CPU is a safe bound and
memory is usually the tighter one:

    jobs = max(1, min(CPUs, MemAvailable // 300 MB))      never more than --jobs / jobs:
"""

from __future__ import annotations

import os
from collections.abc import Callable

MB = 1024 * 1024
PER_RUN_BYTES = 300 * MB  # one Claude Code, as observed (RSS of the node process)


def default_jobs(cpus: int, available_bytes: int | None) -> int:
    """The formula above; unknown memory counts as enough."""
    by_memory = cpus if available_bytes is None else available_bytes // PER_RUN_BYTES
    return max(1, min(cpus, by_memory))


def jobs(
    asked: int | None,
    tasks: int,
    *,
    cpus: Callable[[], int | None] = os.cpu_count,
    available: Callable[[], int | None] | None = None,
) -> int:
    """Runs at once: the machine's default, never more than `asked`, nor than `tasks`."""
    memory = (available or available_memory)()
    limit = asked if asked is not None else default_jobs(cpus() or 1, memory)
    return max(1, min(limit, tasks))


def available_memory(meminfo: str = "/proc/meminfo") -> int | None:
    """MemAvailable in bytes (Linux), else None."""
    try:
        with open(meminfo, encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
