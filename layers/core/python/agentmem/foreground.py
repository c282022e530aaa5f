"""Requests first: background work in a serving process gives way to the requests it is answering.

The embedded backend runs its background work (the summary passes of conversations) in threads of the process
that answers requests. Python runs one of a process's threads at a time. A pass over a few hundred long messages
parses them for seconds, and a search, which gives the interpreter up at every row it reads from SQLite, waited
to get it back at each: under ``agentmem serve``, searching after an import took up to 1.9 s while passes ran.

So the server marks each request while it is handled (``FOREGROUND.serving``: the handler's work, not the wait
for a slow client's body, or a client could hold background work back), and a thread running background work
(``in_background``) calls ``give_way`` between small pieces of it: while a request is handled, it waits until
none is, at most ``GIVE_WAY_S`` at a time; then it goes on for a share of the time it waited before it gives way
again, so that under requests that never stop it still runs ``BACKGROUND_SHARE`` of the time: slowed, never
stopped. The domain's loops stay as they are: a pass hands them its messages as ``GivingWay``, which gives way
before each.
Outside a background thread, and in a process that serves nothing, ``give_way`` returns at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar, overload

GIVE_WAY_S = 0.5  # the longest one give_way waits for the requests being handled
BACKGROUND_SHARE = 0.2  # ... and the share of the time background work runs under requests that never stop

T = TypeVar("T")


class Foreground:
    """The requests this process is handling now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._serving = 0
        self._idle = threading.Event()
        self._idle.set()

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Around the handling of one request."""
        with self._lock:
            self._serving += 1
            self._idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._serving -= 1
                if not self._serving:
                    self._idle.set()

    def busy(self) -> bool:
        return not self._idle.is_set()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is handled (at most ``timeout`` seconds); whether none is."""
        return self._idle.wait(timeout)


FOREGROUND = Foreground()


@dataclass
class Background:
    """One piece of background work in this thread: how long it waited for requests, in all."""

    waited_s: float = 0.0
    gave_way: int = 0  # times it found a request being handled and waited
    runs_until: float = 0.0  # (the clock) it goes on without giving way until then, after a wait


_clock = time.monotonic


_current = threading.local()


@contextmanager
def in_background() -> Iterator[Background]:
    """This thread runs background work until the block ends: its ``give_way`` calls wait for requests."""
    previous = getattr(_current, "work", None)
    work = Background()
    _current.work = work
    try:
        yield work
    finally:
        _current.work = previous


def give_way(limit_s: float | None = None) -> None:
    """In background work, while this process handles a request: wait until it handles none (at most
    ``limit_s``, default ``GIVE_WAY_S``), unless it is still within the share of its last wait it may run for.
    Anywhere else, nothing."""
    work: Background | None = getattr(_current, "work", None)
    if work is None or not FOREGROUND.busy():
        return
    begun = _clock()
    if begun < work.runs_until:
        return
    FOREGROUND.wait_idle(GIVE_WAY_S if limit_s is None else limit_s)
    ended = _clock()
    work.waited_s += ended - begun
    work.gave_way += 1
    work.runs_until = ended + (ended - begun) * BACKGROUND_SHARE / (1.0 - BACKGROUND_SHARE)


class GivingWay(Sequence[T]):
    """``items`` as a sequence that gives way (``give_way``) before each item it is iterated over."""

    def __init__(self, items: Sequence[T]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        for item in self._items:
            give_way()
            yield item
