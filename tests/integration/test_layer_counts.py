"""The embedded store counts each layer's entries in ``layer_entry_counts`` (migration 13, kept by triggers):
the layer limit and the context's memory index read that count, less the expired entries, instead of walking
every entry. Whatever writes the entries — saves, deletes, checkpoints, purges, erasure, expiry — the count
stays the one a walk of the rows gives."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agentmem.adapters.embedded import entries as embedded
from agentmem.adapters.embedded.database import Database
from agentmem.adapters.embedded.jobs import ThreadJobRunner
from agentmem.adapters.embedded.migrations import MIGRATIONS
from agentmem.bootstrap import build_container
from agentmem.domain.clock import iso
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.models import Layer
from agentmem.services.agents import AgentSettings
from agentmem.services.entries import SaveRequest
from agentmem.settings import Settings

COUNTS = next(n for n, m in enumerate(MIGRATIONS, start=1) if isinstance(m, str) and "layer_entry_counts" in m)


def _walked(conn: sqlite3.Connection, now: str) -> dict[tuple[str, str, str], int]:
    rows = conn.execute(
        "SELECT account_id, memory, layer_user, count(*) FROM entries WHERE conversation IS NULL "
        "AND (expires_at IS NULL OR expires_at > ?) GROUP BY account_id, memory, layer_user", (now,)
    ).fetchall()
    return {(r[0], r[1], r[2]): r[3] for r in rows}


def _counted(conn: sqlite3.Connection, now: str) -> dict[tuple[str, str, str], int]:
    layers = conn.execute("SELECT account_id, memory, layer_user FROM layer_entry_counts").fetchall()
    found = {(r[0], r[1], r[2]): embedded._live_count(conn, (r[0], r[1], r[2]), now) for r in layers}
    return {k: v for k, v in found.items() if v}


def test_the_layer_counts_follow_every_write(tmp_path: Path) -> None:
    moment = [datetime(2026, 12, 1, 9, 0, tzinfo=UTC)]
    container = build_container(Settings(data_dir=tmp_path, embedder="none"), clock=lambda: moment[0])
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.memories.create(account, "handbook")
    container.agents.put(account, "support", AgentSettings())
    entries = container.entries
    store = container.stores.entries
    assert isinstance(store, embedded.SqliteEntryStore)
    conn = store.db.connection()

    def check() -> None:
        now = iso(container.memories.clock())
        assert _counted(conn, now) == _walked(conn, now)

    for n in range(12):  # the account's layer and two users' layers
        entries.save(account, "handbook", f"rule-{n}", SaveRequest(content=f"Rule {n}.", description="A rule"))
        entries.save(account, "handbook", f"mine-{n}", SaveRequest(content=f"Mine {n}.", description="Mine"),
                     user="ana" if n % 2 else "bob")
    check()
    for n in range(0, 12, 3):  # updates leave the counts alone, deletes lower them
        entries.save(account, "handbook", f"rule-{n}", SaveRequest(content=f"Rule {n}, again."))
        entries.delete(account, "handbook", f"rule-{n + 1}")
    check()
    soon = iso(container.memories.clock() + timedelta(minutes=1))
    entries.save(account, "handbook", "brief", SaveRequest(content="Soon gone.", description="Brief", expires_at=soon))
    check()
    moment[0] += timedelta(minutes=2)  # expired, not swept yet: not counted
    check()
    assert store.purge_expired(iso(container.memories.clock())) >= 1
    check()
    # a conversation's checkpoint lives in the agent's memory and is never counted
    said = [MessageDraft("user" if n % 2 == 0 else "assistant", f"Line {n}: Ana's flat in Lisbon, the {n}th note.")
            for n in range(40)]
    container.conversations.append(account, "support", "c1", said, user="ana")
    run_id = container.conversations.compact(account, "support", "c1", user="ana")
    jobs = container.jobs()
    assert isinstance(jobs, ThreadJobRunner)
    assert jobs.wait(run_id, timeout=30).state == "succeeded"
    assert container.conversations.checkpoint(account, "support", "c1", user="ana")[0].content
    check()
    container.stores.entries.purge_layer(Layer(account.account_id, "handbook", "bob"))
    check()
    container.erasure.erase_user(account, "ana")
    check()


def test_an_older_database_gets_its_counts_when_it_opens(tmp_path: Path) -> None:
    container = build_container(Settings(data_dir=tmp_path, embedder="none"))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.memories.create(account, "handbook")
    for n in range(7):
        container.entries.save(account, "handbook", f"rule-{n}", SaveRequest(content="A rule.", description="Rule"))
    path = tmp_path / "agentmem.db"
    old = sqlite3.connect(path)  # the database as the migration before the counts left it
    old.executescript(
        "DROP TRIGGER entries_counted_on_insert; DROP TRIGGER entries_counted_on_delete; "
        f"DROP TRIGGER entries_counted_on_update; DROP TABLE layer_entry_counts; PRAGMA user_version = {COUNTS - 1};"
    )
    old.close()
    conn = Database(path).connection()
    now = iso(container.memories.clock())
    assert _counted(conn, now) == _walked(conn, now) == {(account.account_id, "handbook", ""): 7}
