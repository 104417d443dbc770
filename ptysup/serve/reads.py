"""Reads of the runs' files in the background, each answer waiting for them a while only.

A request must be answered at once whatever a run's files hold: a read that takes longer
than `wait_s` (a big log, a file system that stalls) goes on in its thread while the
answer says it is being read, and its result is kept for the next request. A read still
going is never started again (one that never ends costs one thread, not one per request),
and a result is reused while the files it came from are unchanged (its version), so a
page that polls every two seconds rereads only the runs that changed.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Job(Generic[T]):
    """One read: its key (a run, a run's details), the version of the files it reads (None:
    never reuse its result, e.g. a live run's row, which runs on with the clock), the read,
    and what an exception it raised becomes."""

    key: Hashable
    version: Hashable | None
    read: Callable[[], T]
    failed: Callable[[Exception], T]


@dataclass(frozen=True)
class Late(Generic[T]):
    """A read not done in time: how long it has gone on (0 if it had not started), and the
    last result for its key (of older files), if there is one."""

    seconds: float
    last: T | None


@dataclass(frozen=True)
class _Done(Generic[T]):
    version: Hashable | None
    result: T
    number: int  # reads are numbered as they end: a higher one ended later


class Reads(Generic[T]):
    """Runs Jobs in a background thread and keeps their results (see the module)."""

    def __init__(
        self,
        wait_s: float,
        keep: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wait_s = wait_s
        self._keep = keep  # results kept: the least recently used go first
        self._clock = clock
        self._changed = threading.Condition()
        self._done: OrderedDict[Hashable, _Done[T]] = OrderedDict()
        self._busy: dict[Hashable, float] = {}  # key → when its read started
        self._numbers = itertools.count(1)
        self._last_number = 0  # of the last read that ended

    def results(self, jobs: Sequence[Job[T]]) -> list[T | Late[T]]:
        """Each job's result, read now or kept from before, or Late after `wait_s`."""
        with self._changed:
            since = self._last_number  # a read numbered above this one ended after now
            todo = [job for job in jobs if not self._ready(job, since)]
        if todo:
            threading.Thread(target=self._work, args=(todo, since), daemon=True).start()
            deadline = self._clock() + self._wait_s
            with self._changed:
                while not all(self._ready(job, since) for job in todo):
                    left = deadline - self._clock()
                    if left <= 0:
                        break
                    self._changed.wait(left)
        with self._changed:
            return [self._result(job, since) for job in jobs]

    def _ready(self, job: Job[T], since: int) -> bool:
        done = self._done.get(job.key)
        if done is None:
            return False
        return done.number > since or (job.version is not None and done.version == job.version)

    def _result(self, job: Job[T], since: int) -> T | Late[T]:
        done = self._done.get(job.key)
        if done is not None:
            self._done.move_to_end(job.key)
        if done is not None and self._ready(job, since):
            return done.result
        started = self._busy.get(job.key)
        seconds = self._clock() - started if started is not None else 0.0
        return Late(seconds, done.result if done is not None else None)

    def _work(self, jobs: Sequence[Job[T]], since: int) -> None:
        for job in jobs:
            with self._changed:
                if job.key in self._busy or self._ready(job, since):
                    continue  # another thread reads it (or has just read it)
                self._busy[job.key] = self._clock()
            try:
                try:
                    result = job.read()
                except Exception as exc:  # the job says what a failed read shows
                    result = job.failed(exc)
            finally:
                with self._changed:
                    del self._busy[job.key]
                    self._changed.notify_all()
            with self._changed:
                self._last_number = number = next(self._numbers)
                self._done[job.key] = _Done(job.version, result, number)
                self._done.move_to_end(job.key)
                while len(self._done) > self._keep:
                    self._done.popitem(last=False)
                self._changed.notify_all()
