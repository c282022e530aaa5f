"""The job runner's runs as every worker of ``agentmem serve --workers N`` sees them (``ServerState``).

A worker claims a run before it starts it: in one transaction it finds no run of the same name in progress
(a *lease* that has not run out) and no run of the same id, and writes its own, leased to it. It renews the
lease while the run goes on (``ThreadJobRunner``) and writes the outcome when it ends. So a summary pass
triggered through two workers at once runs once, and either worker answers where it stands. A worker that
dies mid-run stops renewing: once its lease has run out, the run counts as failed (interrupted) and the
next trigger starts the pass again, as the state machine's retry would.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Sequence

from ...ports.jobs import JobRun, JobState
from .jobs import KEEP_FINISHED
from .server_state import ServerState

LEASE_S = 30.0  # a run's lease; its worker renews it every third of that
INTERRUPTED = "Interrupted: the server process running it stopped"


class SharedRuns:
    def __init__(self, state: ServerState, *, lease_s: float = LEASE_S, keep_finished: int = KEEP_FINISHED,
                 clock: Callable[[], float] = time.time) -> None:
        self.state = state
        self.lease_s = lease_s
        self._keep = keep_finished
        self._clock = clock
        self._holder = os.getpid()

    def claim(self, name: str, run_id: str) -> tuple[str, bool]:
        """(the run to answer for this start, whether this process is to run it): the run of ``name`` in
        progress somewhere, the run ``run_id`` if it has run already, or ``run_id`` claimed now."""
        now = self._clock()
        with self.state.write() as conn:
            running = conn.execute("SELECT run_id, lease_until FROM job_runs WHERE name=? AND state='running'",
                                   (name,)).fetchone()
            if running is not None:
                if running[1] > now:
                    return str(running[0]), False
                self._end(conn, str(running[0]), "failed", None, INTERRUPTED)
            if conn.execute("SELECT 1 FROM job_runs WHERE run_id=?", (run_id,)).fetchone() is not None:
                return run_id, False
            conn.execute("INSERT INTO job_runs (run_id, name, state, holder, lease_until) "
                         "VALUES (?, ?, 'running', ?, ?)", (run_id, name, self._holder, now + self.lease_s))
        return run_id, True

    def renew(self, run_ids: Sequence[str]) -> None:
        """Extend the leases of this process's runs in progress."""
        if not run_ids:
            return
        marks = ",".join("?" * len(run_ids))
        with self.state.write() as conn:
            conn.execute("UPDATE job_runs SET lease_until=? WHERE state='running' AND holder=? "
                         f"AND run_id IN ({marks})", (self._clock() + self.lease_s, self._holder, *run_ids))

    def finish(self, outcome: JobRun) -> None:
        with self.state.write() as conn:
            self._end(conn, outcome.run_id, outcome.state, outcome.output, outcome.error)

    def forget(self, run_id: str) -> None:
        """A claimed run that could not be started after all."""
        with self.state.write() as conn:
            conn.execute("DELETE FROM job_runs WHERE run_id=? AND state='running' AND holder=?", (run_id, self._holder))

    def get(self, run_id: str) -> JobRun | None:
        row = self.state.connection().execute(
            "SELECT state, output, error FROM job_runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            return None
        state: JobState = row[0]
        return JobRun(run_id=run_id, name=run_id, state=state, output=None if row[1] is None else json.loads(row[1]),
                      error=row[2])

    def _end(self, conn: sqlite3.Connection, run_id: str, state: str, output: object, error: str | None) -> None:
        last = int(conn.execute("SELECT coalesce(max(finished), 0) FROM job_runs").fetchone()[0])
        conn.execute("UPDATE job_runs SET state=?, output=?, error=?, finished=? WHERE run_id=?",
                     (state, None if output is None else json.dumps(output), error, last + 1, run_id))
        # a finished run's name is not reused, as on Step Functions: the newest are remembered
        conn.execute("DELETE FROM job_runs WHERE finished IS NOT NULL AND finished <= ?", (last + 1 - self._keep,))
