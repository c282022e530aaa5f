"""A few threads for the requests one store call can send at once (segment reads, row deletes, a seal's reads).

botocore clients are thread-safe; the requests wait on the network, not on Python. A task that itself fans
out runs its part inline rather than queueing behind itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

THREADS = 8
_PREFIX = "agentmem-io"

_T = TypeVar("_T")
_R = TypeVar("_R")


class IoThreads:
    """Made on first use, shared by the threads of one store."""

    def __init__(self, threads: int = THREADS) -> None:
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix=_PREFIX)
            return self._pool

    def submit(self, fn: Callable[[], _R]) -> Future[_R]:
        if _in_pool():
            done: Future[_R] = Future()
            try:
                done.set_result(fn())
            except BaseException as error:
                done.set_exception(error)
            return done
        return self._executor().submit(fn)

    def map(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        """``fn`` of each item, in order: at once when there is more than one."""
        if len(items) <= 1 or _in_pool():
            return [fn(item) for item in items]
        return list(self._executor().map(fn, items))


def _in_pool() -> bool:
    return threading.current_thread().name.startswith(_PREFIX)
