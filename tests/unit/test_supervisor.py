"""The supervisor of ``agentmem serve --workers N`` (local/workers.py), over workers that only sleep or exit."""

from __future__ import annotations

import os
import signal
import threading
import time

from agentmem.local import workers
from agentmem.local.workers import Supervisor, _fork


def sleeper() -> None:
    time.sleep(60)  # until SIGTERM (the default action: a worker's server is not running here)


def test_a_worker_that_dies_is_started_again_under_its_index_and_sigterm_stops_all() -> None:
    # Given a supervisor of 2 workers, recording which index each fork is for
    started: list[tuple[int, int]] = []
    lines: list[str] = []

    def start(index: int) -> int:
        pid = _fork(index, sleeper)
        started.append((index, pid))
        return pid

    supervisor = Supervisor(2, start, log=lines.append)
    handler_before = signal.getsignal(signal.SIGTERM)

    def kill_one_then_stop() -> None:
        deadline = time.monotonic() + 10
        while len(started) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(started[0][1], signal.SIGKILL)  # worker 0 dies
        while len(started) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)  # then the server is asked to stop

    driver = threading.Thread(target=kill_one_then_stop)
    driver.start()
    # When it runs
    status = supervisor.run()
    driver.join(timeout=10)
    # Then worker 0 was started again, as worker 0, and then every worker stopped; the exit status is 0
    assert status == 0
    assert [index for index, _ in started] == [0, 1, 0]
    assert lines == [f"worker 0 (pid {started[0][1]}) was killed by SIGKILL; starting another"]
    assert not any(os.path.exists(f"/proc/{pid}") for _, pid in started)  # (and each was waited for)
    # And this process's SIGTERM handling is as it was
    assert signal.getsignal(signal.SIGTERM) == handler_before


def test_workers_that_keep_dying_stop_the_server_with_status_1() -> None:
    # Given workers that exit as soon as they start
    lines: list[str] = []
    supervisor = Supervisor(2, lambda index: _fork(index, lambda: None), log=lines.append)
    # When it runs, Then it gives up after the 5th death within 10 s, saying so
    assert supervisor.run() == 1
    assert lines[-1] == (f"worker processes keep stopping ({workers.RESTARTS_KEPT} in "
                         f"{workers.RESTART_WINDOW_S:g} s); the server stops")
    assert len(lines) == workers.RESTARTS_KEPT  # 4 restarts, then the end
