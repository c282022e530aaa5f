"""A writer killed with SIGKILL at random points leaves the embedded store before or after each write, never
between (SPEC §12): every acknowledged write is there after the restart, nothing is half-written, ``seq`` has
no gap, history matches versions, SQLite's and FTS5's integrity checks pass and the vector index's queue
matches the rows. The writer and the check are ``tests/support/crash_writer.py``; ``bench/crash.py`` runs the
same with as many kills as asked."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import crash_writer  # tests/support, on sys.path through tests/conftest.py

KILLS = 60


def _writer(data_dir: Path, journal: Path, log: Path) -> subprocess.Popen[str]:
    with log.open("w") as err:
        return subprocess.Popen([sys.executable, crash_writer.__file__, str(data_dir), str(journal)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)


def test_every_acknowledged_write_survives_sigkills_and_nothing_is_half_written(tmp_path: Path) -> None:
    # Given a writer process on a fresh data dir, saving, deleting, appending (summary passes writing
    # checkpoints behind), writing workspace files and editing checkpoints without pause
    data_dir, journal = tmp_path / "data", tmp_path / "journal.jsonl"
    proc = _writer(data_dir, journal, tmp_path / "writer.log")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "setup 0"
        # When it is killed with SIGKILL, again and again, at a random moment of its writes
        killed = sum(crash_writer.kill_rounds(proc, KILLS, random.Random(12)))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    # Then the kills landed mid-way, while writes were being made
    assert killed >= 50
    # And, opened again, the data dir holds every acknowledged write, whole, and nothing torn
    report = crash_writer.check(data_dir, journal)
    assert report.problems == [], report.counts
    assert report.counts["acknowledged saves checked"] > 0
    assert report.counts["acknowledged messages checked"] > 0
    assert report.counts["acknowledged files checked"] > 0
    assert report.counts["checkpoints"] > 0, report.counts  # summary passes wrote them between the kills
    assert report.counts["acknowledged checkpoint edits checked"] > 0, report.counts
    assert report.counts["vectors"] > 0


def test_the_check_finds_a_lost_acknowledged_write(tmp_path: Path) -> None:
    # Given a writer's data dir after a few rounds
    data_dir, journal = tmp_path / "data", tmp_path / "journal.jsonl"
    proc = _writer(data_dir, journal, tmp_path / "writer.log")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "setup 0"
        list(crash_writer.kill_rounds(proc, 3, random.Random(3), delay=(0.2, 0.3), long_share=0))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    assert crash_writer.check(data_dir, journal).problems == []
    # When an acknowledged message goes missing behind the service's back
    import sqlite3

    with sqlite3.connect(data_dir / "agentmem.db") as db:
        db.execute("DELETE FROM messages WHERE seq = (SELECT max(seq) FROM messages)")
    # Then the check says so
    assert any("seq" in p or "acknowledged append" in p or "last_seq" in p
               for p in crash_writer.check(data_dir, journal).problems)
