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


MORE_ROUNDS = 20  # at most, after the rounds asked, until the journal holds what the test needs


def _after_kills(
    tmp_path: Path, rounds: int, rng: random.Random, *, delay: tuple[float, float], needs: str | None = None
) -> tuple[Path, Path]:
    """A writer's data dir and journal after ``rounds`` rounds, each ended by a kill (no long pauses); with
    ``needs`` (an operation: "append", "save"), more rounds until one of those was acknowledged (a loaded machine
    may give a short round no time to write)."""
    data_dir, journal = tmp_path / "data", tmp_path / "journal.jsonl"
    proc = _writer(data_dir, journal, tmp_path / "writer.log")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "setup 0"
        for n, _ in enumerate(crash_writer.kill_rounds(proc, rounds + MORE_ROUNDS, rng, delay=delay, long_share=0)):
            if n + 1 >= rounds and (needs is None or _acknowledged(journal, needs)):
                break
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    return data_dir, journal


def _acknowledged(journal: Path, op: str) -> bool:
    intents, acks = crash_writer.read_journal(journal)
    return any(i["op"] == op and i["id"] in acks and "refused" not in acks[i["id"]] for i in intents)


def test_the_check_finds_a_lost_acknowledged_write(tmp_path: Path) -> None:
    # Given a writer's data dir after a few rounds, an append among its acknowledged writes
    data_dir, journal = _after_kills(tmp_path, 3, random.Random(3), delay=(0.2, 0.3), needs="append")
    before = crash_writer.check(data_dir, journal)
    assert before.problems == [] and before.counts["acknowledged messages checked"] > 0
    # When an acknowledged message goes missing behind the service's back
    import sqlite3

    with sqlite3.connect(data_dir / "agentmem.db") as db:
        db.execute("DELETE FROM messages WHERE seq = (SELECT max(seq) FROM messages)")
    # Then the check says so
    assert any("seq" in p or "acknowledged append" in p or "last_seq" in p
               for p in crash_writer.check(data_dir, journal).problems)


def test_the_check_finds_words_or_versions_out_of_step_with_the_entries(tmp_path: Path) -> None:
    """The keyword index holds no copy of the text and the history no copy of the current version: the check
    compares the index's postings with those of the entries as stored, and the history's versions with the
    entry's, and says when they disagree."""
    import shutil
    import sqlite3

    from agentmem.adapters.embedded.entry_words import add_scope_function

    # Given a writer's data dir after two rounds long enough to save, replace and delete entries
    data_dir, journal = _after_kills(tmp_path, 2, random.Random(5), delay=(1.5, 2.0))
    assert crash_writer.check(data_dir, journal).problems == []

    def tampered(label: str, *statements: str) -> list[str]:
        copy = tmp_path / label
        shutil.copytree(data_dir, copy)
        with sqlite3.connect(copy / "agentmem.db") as db:
            add_scope_function(db)
            for statement in statements:
                assert db.execute(statement).rowcount == 1, statement
        return crash_writer.check(copy, journal).problems

    one_entry = "SELECT rowid FROM entries WHERE conversation IS NULL ORDER BY rowid LIMIT 1"
    # When an entry's words leave the keyword index behind the service's back
    problems = tampered("words", "INSERT INTO entries_fts (entries_fts, rowid, scope, name, description, content) "
                        "SELECT 'delete', rowid, entry_scope(account_id, memory, layer_user), name, description, "
                        f"content FROM entries WHERE rowid = ({one_entry})")
    # Then the check says the index does not hold the entry as stored
    assert any("keyword index" in p for p in problems), problems
    # When an entry's text changes without its words
    problems = tampered("text", f"UPDATE entries SET content = content || ' unindexed' WHERE rowid = ({one_entry})")
    # Then the check says so too (and that the text is none that was written)
    assert any("keyword index" in p for p in problems), problems
    # When the snapshot of a replaced version goes missing from the history
    problems = tampered("lost", "DELETE FROM entry_history WHERE id = (SELECT max(id) FROM entry_history "
                        "WHERE operation != 'delete' AND layer_user = '' AND name LIKE 'note-%')")
    # Then the check misses an acknowledged version
    assert any("missing from history" in p for p in problems), problems
    # When the history holds the entry's current version as well (a snapshot without the save that replaced it)
    problems = tampered("twice", "INSERT INTO entry_history (account_id, memory, layer_user, name, version, "
                        "operation, content_hash, updated_by, changed_at, description, content, keep_until) "
                        "SELECT account_id, memory, layer_user, name, version, operation, content_hash, updated_by, "
                        f"updated_at, description, content, keep_until FROM entries WHERE rowid = ({one_entry})")
    # Then the check finds the version repeated
    assert any("history versions repeat" in p for p in problems), problems
