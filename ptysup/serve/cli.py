"""`ptysup serve [DIR]`: the runs of DIR (default: here) as a local web page until Ctrl-C.

The first line on stdout is the page's URL with its token, for people and for scripts
(`ptysup serve --port 0 | head -1`).
"""

from __future__ import annotations

import ipaddress
import math
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

from ptysup.argspec import ArgSpec
from ptysup.exitcodes import ExitCode
from ptysup.serve import assets
from ptysup.serve.api import RunsIndex
from ptysup.serve.routes import Router
from ptysup.serve.security import new_token, url_host
from ptysup.serve.server import IDLE_TIMEOUT_S, MAX_CONNECTIONS, Server
from ptysup.store.rundir import RUNS_DIR, RunNotFound, run_dirs

USAGE = (
    "usage: ptysup serve [DIR] [--host HOST] [--port PORT] [--max-connections N] "
    "[--idle-timeout SECONDS]   (DIR's runs as a web page; default here, 127.0.0.1, a free port)"
)
DEFAULT_HOST = "127.0.0.1"
ARGS = ArgSpec(
    options={
        "--host": "text",
        "--port": "text",
        "--max-connections": "text",
        "--idle-timeout": "text",
    },
    args=("dir",),
)


class UsageError(Exception):
    """Bad arguments; the message is one line."""


@dataclass(frozen=True)
class Options:
    """What `ptysup serve` was asked for."""

    directory: Path = Path(".")
    host: str = DEFAULT_HOST
    port: int = 0
    max_connections: int = MAX_CONNECTIONS
    idle_timeout: float = IDLE_TIMEOUT_S


def parse(args: Sequence[str]) -> Options | None:
    """The options, or None for --help; UsageError on bad ones."""
    directory: Path | None = None
    values: dict[str, str] = {}
    it = iter(args)
    for arg in it:
        name, eq, inline = arg.partition("=")
        if arg in ("-h", "--help"):
            return None
        if name in ARGS.options:
            values[name] = inline if eq else next(it, "")
            if not values[name]:
                raise UsageError(f"{name} needs a value")
        elif arg.startswith("-") or directory is not None:
            raise UsageError(f"serve: unknown argument {arg!r}; {USAGE}")
        else:
            directory = Path(arg)
    directory = directory or Path(".")
    try:
        if not directory.is_dir():
            what = "not a directory" if directory.exists() else "no such directory"
            raise UsageError(f"serve: {what}: {directory}")
        run_dirs(directory / RUNS_DIR)  # what every request reads: unreadable, no page
    except OSError as exc:  # DIR itself cannot be looked into
        raise UsageError(f"serve: cannot read {directory}: {exc.strerror or exc}") from None
    except RunNotFound as exc:
        raise UsageError(f"serve: {exc}") from None
    return Options(
        directory,
        values.get("--host", DEFAULT_HOST).strip("[]"),
        _whole("--port", values.get("--port"), 0, (0, 65535)),
        _whole("--max-connections", values.get("--max-connections"), MAX_CONNECTIONS, (1, 10_000)),
        _seconds("--idle-timeout", values.get("--idle-timeout")),
    )


def _whole(option: str, value: str | None, default: int, bounds: tuple[int, int]) -> int:
    """`value` as a whole number within `bounds`; `default` for None."""
    low, high = bounds
    if value is None:
        return default
    if not value.isdigit() or not low <= int(value) <= high:
        raise UsageError(f"{option} needs a number from {low} to {high}, not {value!r}")
    return int(value)


def _seconds(option: str, value: str | None) -> float:
    """`value` as a positive, finite number of seconds; the default for None."""
    if value is None:
        return IDLE_TIMEOUT_S
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"{option} needs a positive number of seconds, not {value!r}")
    return seconds


def main(args: Sequence[str], out: TextIO = sys.stdout) -> int:
    """Entry point of `ptysup serve`."""
    try:
        options = parse(args)
    except UsageError as exc:
        print(f"ptysup: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    if options is None:
        print(USAGE, file=out)
        return 0
    try:
        files = assets.load()
    except assets.AssetError as exc:
        print(f"ptysup: serve: {exc}", file=sys.stderr)
        return int(ExitCode.INTERNAL)
    index = RunsIndex(options.directory / RUNS_DIR)
    token = new_token()
    try:
        server = Server(
            (options.host, options.port),
            token,
            lambda wait, clock: Router(index, files, wait, clock),
            max_connections=options.max_connections,
            idle_timeout=options.idle_timeout,
        )
    except OSError as exc:
        where = f"{url_host(options.host)}:{options.port}"
        print(f"ptysup: serve: cannot listen on {where}: {exc.strerror or exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    out.write(f"http://{url_host(options.host)}:{server.port}/?token={token}\n")
    out.write(f"serving the runs in {index.runs_dir}/ read-only; Ctrl-C stops\n")
    if not is_loopback(options.host):
        out.write(
            f"ptysup: warning: {options.host} may be reachable from other machines; the token is "
            "the only guard and plain HTTP does not hide it on the way\n"
        )
    out.flush()
    serve_until_signalled(server)
    return 0


def is_loopback(host: str) -> bool:
    """Whether `host` names this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve_until_signalled(server: Server) -> None:
    """Serve until SIGINT or SIGTERM, then end the streams and close the socket."""
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    thread = threading.Thread(target=server.serve_forever, name="ptysup-serve", daemon=True)
    thread.start()
    try:
        while not done.wait(1.0):  # a wait with a timeout, so signals are handled promptly
            pass
    finally:
        server.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
