"""`ptysup serve [DIR]`: the runs of DIR (default: here) as a local web page until Ctrl-C.

The first line on stdout is the page's URL with its token, for people and for scripts
(`ptysup serve --port 0 | head -1`). With `--control` the second line is the control URL,
with a second token: the page it opens can also steer the live runs (type to the agent,
answer what it waits on, raise its budgets, stop it). A read-only link never can.
"""

from __future__ import annotations

import ipaddress
import math
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

from ptysup.argspec import ArgSpec
from ptysup.attach import steer
from ptysup.exitcodes import ExitCode
from ptysup.serve import assets
from ptysup.serve.api import RunsIndex
from ptysup.serve.control import Steer
from ptysup.serve.routes import CONTROL_PAGE, Router
from ptysup.serve.security import new_token, url_host
from ptysup.serve.server import IDLE_TIMEOUT_S, MAX_CONNECTIONS, Server
from ptysup.store import pagelink
from ptysup.store.rundir import RUNS_DIR, RunNotFound, run_dirs

USAGE = (
    "usage: ptysup serve [DIR] [--control] [--host HOST] [--port PORT] [--max-connections N] "
    "[--idle-timeout SECONDS]   (DIR's runs as a web page; default here, 127.0.0.1, a free "
    "port; --control: a second URL that can steer the live runs)"
)
DEFAULT_HOST = "127.0.0.1"
STEER = Steer(steer.send, steer.budget, steer.stop, steer.approve, steer.SteerError)
ARGS = ArgSpec(
    flags=("--control",),
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
    control: bool = False  # a second URL, whose page may steer the live runs


def parse(args: Sequence[str]) -> Options | None:
    """The options, or None for --help; UsageError on bad ones."""
    directory: Path | None = None
    values: dict[str, str] = {}
    it = iter(args)
    for arg in it:
        name, eq, inline = arg.partition("=")
        if arg in ("-h", "--help"):
            return None
        if arg in ARGS.flags:
            values[arg] = "yes"
        elif name in ARGS.options:
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
        "--control" in values,
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
    control_token = new_token() if options.control else None
    steering = STEER if options.control else None
    try:
        server = Server(
            (options.host, options.port),
            token,
            lambda wait, clock: Router(index, files, wait, clock, steering),
            max_connections=options.max_connections,
            idle_timeout=options.idle_timeout,
            control_token=control_token,
        )
    except OSError as exc:
        where = f"{url_host(options.host)}:{options.port}"
        print(f"ptysup: serve: cannot listen on {where}: {exc.strerror or exc}", file=sys.stderr)
        return int(ExitCode.USAGE)
    urls = [token] if control_token is None else [token, control_token]
    announce(out, options, server.port, urls, index.runs_dir)
    out.flush()
    withdraw = _published(options, server.port, index.runs_dir)
    try:
        serve_until_signalled(server)
    finally:
        withdraw()
    return 0


def _published(options: Options, port: int, runs_dir: Path) -> Callable[[], None]:
    """With --control, the control page's address where a waiting run finds it (its
    notification links to it); what takes it back."""
    if not options.control:
        return lambda: None
    try:
        return pagelink.publish(runs_dir, f"http://{url_host(options.host)}:{port}{CONTROL_PAGE}")
    except OSError as exc:  # the page works all the same; only the runs' link is missing
        print(f"ptysup: warning: serve: runs cannot link to the page: {exc}", file=sys.stderr)
        return lambda: None


def announce(out: TextIO, options: Options, port: int, tokens: list[str], runs: Path) -> None:
    """The URLs (the read-only one first, then the control one), what they are, and the
    warnings a non-loopback address deserves."""
    base = f"http://{url_host(options.host)}:{port}/"
    for token in tokens:
        out.write(f"{base}?token={token}\n")
    if options.control:
        out.write(
            f"serving the runs in {runs}/: the first URL reads, the second also steers "
            "the live runs (keep it to yourself); Ctrl-C stops\n"
        )
    else:
        out.write(f"serving the runs in {runs}/ read-only; Ctrl-C stops\n")
    if not is_loopback(options.host):
        out.write(
            f"ptysup: warning: {options.host} may be reachable from other machines; the token is "
            "the only guard and plain HTTP does not hide it on the way\n"
        )
        if options.control:
            out.write(
                "ptysup: warning: whoever sees the control URL on the way can type to your "
                "agents; over a network, reach 127.0.0.1 through an SSH tunnel instead\n"
            )


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
