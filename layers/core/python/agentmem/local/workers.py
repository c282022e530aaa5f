"""``agentmem serve --workers N``: N processes answering on one port, sharing one data dir.

The starting process, the *supervisor*, binds the port (so a port in use fails before anything else, as with
one process), sets the data dir up once (the migrations, the ``default`` account and its key), says where the
server listens, and forks the workers. It serves nothing itself: it starts a worker again when one dies,
forwards SIGTERM and Ctrl-C to all of them, waits for each to finish, and exits 0.

Each worker builds its own container after the fork (no SQLite connection crosses it) and accepts
connections on a listening socket of its own: the supervisor opens one a worker on the port with
``SO_REUSEPORT``, and the kernel spreads new connections over them evenly (a socket shared by all would hand
most to the one worker its wake-ups favour, and a worker serves its connections from one thread,
``local/connection_loop.py``). The supervisor keeps every socket open, so connections that arrive while a worker
is started again wait in its socket's queue for the new one. (On systems other than Linux, whose
``SO_REUSEPORT`` does not spread connections, the workers share the supervisor's socket.) ``SO_REUSEPORT``
would let another server of the same user listen beside them: before it binds, the supervisor takes the port's
lock (``local/port_hold.py``), which the workers inherit, and a second server on the port fails to start
naming this one.
Worker 0 also runs what a server needs once: the sweep (expiry, the trash, due summary passes) and the
semantic indexer; the worker started in its place when it dies takes them over. The other workers stay
right without them: their semantic index reads the vectors worker 0 writes (and the removals) from the
database, a search first applies what is queued, and their other caches hold only what cannot go stale
(keyed by an entry's content). What must hold for the server as a whole lives in the file the workers share
(``ServerState``): the rate limits' buckets, and the job runs, each claimed by one worker under a lease.

On SIGTERM a worker stops accepting, waits up to ``DRAIN_S`` for the requests it is answering and for the
summary passes it is running, writes its buffered usage counts, and exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from ..bootstrap import Container, build_adapters, build_container, ensure_default_account
from ..settings import Settings
from .http_guard import GuardedHTTPServer
from .port_hold import hold_port

DRAIN_S = 10.0  # a stopping worker waits this long for the requests it is answering
STOP_GRACE_S = 30.0  # after SIGTERM, a worker still running this much later is killed
POLL_S = 0.05  # how often the supervisor looks for a worker that ended
RESTARTS_KEPT = 5  # workers dying this many times ...
RESTART_WINDOW_S = 10.0  # ... within this many seconds: the server stops (they would only die again)
PARENT_CHECK_S = 1.0  # how often a worker checks that its supervisor is still there
# Linux spreads the connections to a port over the sockets listening on it with SO_REUSEPORT; other systems
# (macOS, the BSDs) hand them all to one, so there the workers share one socket
SPREADS_CONNECTIONS = sys.platform.startswith("linux")


class Supervisor:
    """Keeps ``count`` workers running (``start(index)`` forks one and returns its pid) until SIGTERM or
    SIGINT; then stops them all. ``run`` answers the exit status: 0, or 1 when workers kept dying."""

    def __init__(self, count: int, start: Callable[[int], int], *, log: Callable[[str], None] | None = None) -> None:
        self.count = count
        self._start = start
        self._log = log or (lambda line: print(line, flush=True))
        self._workers: dict[int, int] = {}  # pid -> index
        self._stopping = False
        self._deadline = 0.0
        self._deaths: deque[float] = deque(maxlen=RESTARTS_KEPT)

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        status = 0
        try:
            for first in range(self.count):
                self._spawn(first)
            while self._workers:
                pid, code = self._reap()
                if pid == 0:
                    continue
                index = self._workers.pop(pid, -1)
                if index < 0 or self._stopping:
                    continue
                self._deaths.append(time.monotonic())
                if len(self._deaths) == RESTARTS_KEPT and self._deaths[-1] - self._deaths[0] < RESTART_WINDOW_S:
                    self._log(f"worker processes keep stopping ({RESTARTS_KEPT} in {RESTART_WINDOW_S:g} s); "
                              "the server stops")
                    status = 1
                    self._stop()
                    continue
                self._log(f"worker {index} (pid {pid}) {_ended(code)}; starting another")
                self._spawn(index)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return status

    def _spawn(self, index: int) -> None:
        pid = self._start(index)
        self._workers[pid] = index
        if self._stopping:  # SIGTERM came while it was forked
            _signal(pid, signal.SIGTERM)

    def _reap(self) -> tuple[int, int]:
        """A worker that ended and its wait status, or (0, 0) after a short wait for one. Only the workers are
        waited for: other children of this process (the emulators of ``serve-emulated``) are their owners'."""
        for worker in list(self._workers):
            try:
                pid, code = os.waitpid(worker, os.WNOHANG)
            except ChildProcessError:  # waited for already
                return worker, 0
            if pid:
                return pid, code
        if self._stopping and time.monotonic() > self._deadline:
            for stuck in self._workers:
                _signal(stuck, signal.SIGKILL)
        time.sleep(POLL_S)
        return 0, 0

    def _stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        if self._stopping:
            return
        self._stopping = True
        self._deadline = time.monotonic() + STOP_GRACE_S
        for pid in self._workers:
            _signal(pid, signal.SIGTERM)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _ended(code: int) -> str:
    if os.WIFSIGNALED(code):
        return f"was killed by {signal.Signals(os.WTERMSIG(code)).name}"
    return f"exited with {os.waitstatus_to_exitcode(code)}"


def serve_workers(settings: Settings, host: str, port: int, workers: int, *, create_resources: bool = False) -> None:
    """Bind, set the data dir up, then keep ``workers`` processes serving until SIGTERM or Ctrl-C."""
    from .server import ApiRequestHandler, _announce_key, _quiet_powertools, announce

    # before binding: a second server would listen beside this one's workers (port_hold.py); port 0, once bound
    hold = hold_port(port, host, settings.data_dir) if port else None
    listeners: list[socket.socket] = []
    try:
        Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
        _quiet_powertools()
        # bind first: a port in use leaves the data dir as it was (the same bind as one process's)
        binding = GuardedHTTPServer((host, port), ApiRequestHandler, 1, reuse_port=True)
        listener = binding.socket
        listeners.append(listener)
        if hold is None:
            hold = hold_port(int(listener.getsockname()[1]), host, settings.data_dir)
        listeners += [_listener_beside(listener) if SPREADS_CONNECTIONS else listener for _ in range(workers - 1)]
        container = build_container(settings, create_resources=create_resources)
        if create_resources:
            container.adapters = build_adapters(settings, create_resources=True)
        secret = ensure_default_account(container)
        _close_database(container)  # before the fork: each worker opens its own
        _announce_key(settings, secret)
        announce(settings, host, int(listener.getsockname()[1]))
        print(f"  {workers} worker processes; the first also runs the sweep and the semantic indexer", flush=True)
        from ..api import app as _loaded  # noqa: F401  (imported once here, shared by the workers' memory)

        parent = os.getpid()
        status = Supervisor(workers, lambda i: _fork(i, lambda: _work(i, settings, listeners, parent))).run()
    finally:
        for each in listeners:
            each.close()
        if hold is not None:
            hold.release()
    print("agentmem stopped.", flush=True)
    if status:
        raise SystemExit(status)


def _close_database(container: Container) -> None:
    db = getattr(container.stores.entries, "db", None)
    if db is not None:
        db.close()


def _fork(index: int, work: Callable[[], None]) -> int:
    """Fork a worker running ``work``; its pid. The signals wait meanwhile: the child must never run the
    supervisor's handler (it would stop its siblings)."""
    sys.stdout.flush()
    sys.stderr.flush()
    stopping = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stopping)
    pid = os.fork()
    if pid:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stopping)
        return pid
    status = 1
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # until the worker's server handles it
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the supervisor, which stops the workers
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stopping)
        work()
        status = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _listener_beside(first: socket.socket) -> socket.socket:
    """Another socket listening on ``first``'s address (``SO_REUSEPORT``): the kernel spreads new connections
    over all of them."""
    host, port = first.getsockname()[:2]
    return socket.create_server((host, port), family=first.family, backlog=GuardedHTTPServer.request_queue_size,
                                reuse_port=True)


def _work(index: int, settings: Settings, listeners: list[socket.socket], parent: int) -> None:
    """One worker: its own container on the shared data dir, serving its own listening socket until SIGTERM."""
    from ..adapters.embedded.server_state import ServerState
    from .server import make_server, serve_until_stopped

    listener = listeners[index]
    for other in listeners:
        if other is not listener:
            other.close()  # (the supervisor keeps them: a worker started in another's place serves its socket)
    container = build_container(settings)
    server = make_server(container, listener=listener, shared=ServerState(settings.data_dir))
    _watch_parent(parent, server.shutdown)
    try:
        serve_until_stopped(container, server, background=index == 0, drain_s=DRAIN_S,
                            flush_every_s=container.usage.flush_every_s)
    finally:
        _finish_jobs(container)


def _watch_parent(parent: int, stop: Callable[[], None]) -> None:
    """Stop this worker if its supervisor goes away without stopping it (killed with SIGKILL)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        stop()

    threading.Thread(target=watch, name="agentmem-supervisor-watch", daemon=True).start()


def _finish_jobs(container: Container) -> None:
    """Let the summary passes this worker is running finish (its job runner, if it made one)."""
    runner = container._jobs  # not container.jobs(): that would make one
    close = getattr(runner, "close", None)
    if close is not None:
        close(wait=True)
