"""The embedded backend's job runner: runs in a thread pool of this process what Step Functions runs on AWS.

``work`` is the whole pass (on AWS, the state machine): it takes the run's payload and returns its
output. A run that raises is retried with backoff, like the state machine's Retry, then ends failed.

With ``shared`` (the workers of ``agentmem serve --workers N``), each run is claimed in the file the workers
share before it starts and its lease renewed while it goes on (job_runs.py): a run of a name in progress in
any worker is the answer to a start in every other, and ``describe`` answers for runs of every worker.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ...domain.errors import NotFoundError
from ...foreground import in_background
from ...observability import logger
from ...ports.jobs import JobRun, Jobs, run_name

if TYPE_CHECKING:
    from .job_runs import SharedRuns

Work = Callable[[Mapping[str, Any]], Mapping[str, Any]]

ATTEMPTS = 3  # SPEC §4.3: a failing pass is tried 3 times
BACKOFF_S = 1.0
BACKOFF_RATE = 2.0
KEEP_FINISHED = 10_000  # finished runs remembered (a finished run name is not reused, as on Step Functions)
POLL_S = 0.05  # waiting for a run another process runs: how often to look


class ThreadJobRunner(Jobs):
    def __init__(
        self,
        work: Work,
        *,
        max_workers: int = 2,
        attempts: int = ATTEMPTS,
        backoff_s: float = BACKOFF_S,
        backoff_rate: float = BACKOFF_RATE,
        keep_finished: int = KEEP_FINISHED,
        sleep: Callable[[float], None] = time.sleep,
        shared: SharedRuns | None = None,
    ) -> None:
        self._work = work
        self._attempts = max(1, attempts)
        self._backoff_s = backoff_s
        self._backoff_rate = backoff_rate
        self._keep_finished = keep_finished
        self._sleep = sleep
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="agentmem-job")
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, JobRun] = OrderedDict()  # run id -> state, oldest first
        self._running: dict[str, str] = {}  # job name -> the id of its run in progress
        self._finished: dict[str, threading.Event] = {}
        self._shared = shared
        self._closed = threading.Event()
        self._renewing: threading.Thread | None = None

    def start(self, name: str, payload: Mapping[str, Any], *, discriminator: str = "") -> str:
        run_id = run_name(name, discriminator)
        body: Mapping[str, Any] = json.loads(json.dumps(payload))  # JSON in, as a state machine's input
        with self._lock:
            running = self._running.get(name)
            if running is not None:
                return running
            if run_id in self._runs:
                return run_id
            if self._shared is not None:
                answer, mine = self._shared.claim(name, run_id)
                if not mine:
                    return answer
                self._renew_leases()
            self._runs[run_id] = JobRun(run_id=run_id, name=run_id, state="running")
            self._running[name] = run_id
            self._finished[run_id] = threading.Event()
        try:
            self._pool.submit(self._run, name, run_id, body)
        except RuntimeError:  # the runner is closed: forget the run, or its name would stay "running"
            with self._lock:
                del self._runs[run_id], self._running[name], self._finished[run_id]
            if self._shared is not None:
                self._shared.forget(run_id)
            raise
        logger.info("job started", extra={"job": name, "run_id": run_id})
        return run_id

    def describe(self, run_id: str) -> JobRun:
        with self._lock:
            run = self._runs.get(run_id)
        if run is None and self._shared is not None:
            run = self._shared.get(run_id)  # another worker's
        if run is None:
            raise NotFoundError(f"no job run {run_id!r}")
        return run

    def wait(self, run_id: str, timeout: float | None = None) -> JobRun:
        """Block until the run has finished (or ``timeout`` passes) and return where it stands."""
        with self._lock:
            event = self._finished.get(run_id)
        if event is not None:
            event.wait(timeout)
        elif self._shared is not None:  # another worker runs it: look until it has ended
            deadline = None if timeout is None else time.monotonic() + timeout
            while self.describe(run_id).state == "running" and (deadline is None or time.monotonic() < deadline):
                time.sleep(POLL_S)
        return self.describe(run_id)

    def close(self, *, wait: bool = True) -> None:
        """Stop taking runs; with ``wait``, let the ones in progress finish."""
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
        self._closed.set()

    def _renew_leases(self) -> None:
        """Start the thread that renews this process's leases (called holding the lock)."""
        if self._renewing is None:
            self._renewing = threading.Thread(target=self._renew_loop, name="agentmem-job-leases", daemon=True)
            self._renewing.start()

    def _renew_loop(self) -> None:
        assert self._shared is not None
        while not self._closed.wait(self._shared.lease_s / 3):
            with self._lock:
                running = list(self._running.values())
            try:
                self._shared.renew(running)
            except Exception:  # a locked moment: the lease has two more chances before it runs out
                logger.exception("job leases could not be renewed")

    def _run(self, name: str, run_id: str, payload: Mapping[str, Any]) -> None:
        delay = self._backoff_s
        outcome: JobRun | None = None
        try:
            for attempt in range(1, self._attempts + 1):
                try:
                    with in_background() as background:  # it gives way to the requests this process handles
                        output = dict(self._work(payload))
                    outcome = JobRun(run_id=run_id, name=run_id, state="succeeded", output=output)
                    if background.gave_way:
                        logger.info("job gave way to requests", extra={
                            "job": name, "run_id": run_id, "times": background.gave_way,
                            "waited_s": round(background.waited_s, 3)})
                    break
                except Exception as error:
                    logger.warning(
                        "job attempt failed",
                        extra={"job": name, "run_id": run_id, "attempt": attempt, "error": repr(error)},
                    )
                    failure = f"{type(error).__name__}: {error}"
                    outcome = JobRun(run_id=run_id, name=run_id, state="failed", error=failure)
                    if attempt < self._attempts:
                        self._sleep(delay)
                        delay *= self._backoff_rate
        finally:
            final = outcome or JobRun(run_id=run_id, name=run_id, state="failed", error="interrupted")
            self._finish(name, run_id, final)

    def _finish(self, name: str, run_id: str, outcome: JobRun) -> None:
        if self._shared is not None:
            try:
                self._shared.finish(outcome)
            except Exception:  # its lease runs out instead: the run then counts as interrupted
                logger.exception("job outcome could not be shared", extra={"job": name, "run_id": run_id})
        with self._lock:
            self._runs[run_id] = outcome
            self._runs.move_to_end(run_id)
            if self._running.get(name) == run_id:
                del self._running[name]
            event = self._finished[run_id]
            running_ids = set(self._running.values())
            while len(self._runs) > self._keep_finished:
                oldest = next(iter(self._runs))
                if oldest in running_ids:
                    break
                del self._runs[oldest]
                self._finished.pop(oldest, None)
        event.set()
        logger.info("job finished", extra={"job": name, "run_id": run_id, "state": outcome.state})
