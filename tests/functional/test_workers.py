"""``agentmem serve --workers N`` (local/workers.py): N processes on one port and one data dir.

(a) connections are spread over every worker;
(b) what one worker saves, changes or deletes, another reads and finds (by words and by meaning) as it is;
(c) a summary pass asked for through several workers at once runs once;
(d) the rate limits hold for the server, not per worker;
(e) a worker killed is replaced, and the server keeps answering;
(f) SIGTERM stops every worker and the server exits 0, with every acknowledged save and every count kept.

The concurrency checks (no lost update, no mixed entry, no duplicated message) run against the same server of
two workers in test_concurrency.py. Which worker answers a connection is read from /proc (workers_support.py).
"""

from __future__ import annotations

import http.client
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentmem.bootstrap import build_container
from agentmem.settings import Settings
from functional_support import running_server
from workers_support import (
    Answer,
    Connection,
    Workers,
    connections_by_worker,
    serving_pid,
    wait_for_workers,
    worker_pids,
)

SEMANTIC_WARM_UP_S = 30.0  # a worker's first search by meaning loads the embedder (until then: keyword, "timeout")
INDEXED_S = 10.0  # a change made through one worker is found by meaning through the other within this


def one_each(workers: Workers) -> tuple[Connection, Connection]:
    found = connections_by_worker(workers.server.base_url, workers.server.key, workers.process.pid)
    first, second = (held[0] for held in found.values())
    return first, second


@contextmanager
def two_workers(tmp_path: Path, **env: str) -> Iterator[tuple[Connection, Connection]]:
    """A server of two workers started with these settings, and a connection (with the dev key) to each."""
    data_dir = tmp_path / "data"
    with running_server(data_dir, workers=2, **env) as (base_url, proc, _log):
        wait_for_workers(proc.pid, 2)
        key = (data_dir / "dev-key").read_text().strip()
        first, second = (held[0] for held in connections_by_worker(base_url, key, proc.pid).values())
        yield first, second


def search(conn: Connection, memory: str, q: str, mode: str) -> Answer:
    """A search through this connection's worker; by meaning, once its embedder answers in time."""
    deadline = time.monotonic() + SEMANTIC_WARM_UP_S
    while True:
        found = conn.request("GET", f"/v1/memories/{memory}/search?q={q.replace(' ', '+')}&mode={mode}")
        assert found.status == 200, found.body
        if mode != "semantic" or found.body.get("fallback") != "timeout" or time.monotonic() > deadline:
            return found


def names(answer: Answer) -> list[str]:
    return [item["name"] for item in answer.body["items"]]


def by_meaning(conn: Connection, memory: str, q: str, expected: list[str]) -> Answer:
    """A semantic search through this connection's worker, asked again until it finds ``expected`` (for at most
    INDEXED_S): the other worker's indexer applies a change in a batch, and a search waits a quarter of a second
    for a batch in flight, which a machine busy with other tests can take longer to write."""
    deadline = time.monotonic() + INDEXED_S
    while True:
        found = search(conn, memory, q, "semantic")
        if names(found) == expected or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def test_connections_are_spread_over_every_worker(workers: Workers) -> None:
    # Given the server's two workers
    pids = worker_pids(workers.process.pid)
    assert len(pids) == 2
    # When 24 clients connect and each asks something
    conns = [Connection(workers.server.base_url, workers.server.key) for _ in range(24)]
    try:
        answered: list[int | None] = []
        for conn in conns:
            assert conn.request("GET", "/v1/memories").status == 200
            answered.append(serving_pid(pids, conn.port, conn.client_port))
    finally:
        for conn in conns:
            conn.close()
    # Then every connection was answered by a worker, and by more than one worker
    assert None not in answered
    assert set(answered) == pids, answered


def test_what_one_worker_saves_changes_or_deletes_the_other_reads_and_finds_as_it_is(workers: Workers) -> None:
    writer, reader = one_each(workers)
    memory = f"shared-{uuid.uuid4().hex[:8]}"
    assert writer.request("PUT", f"/v1/memories/{memory}").status == 201
    # Given the reading worker already searched the memory (it holds the memory's vectors in memory)
    assert search(reader, memory, "espresso", "semantic").body["items"] == []
    # When the other worker saves an entry
    saved = writer.request("PUT", f"/v1/memories/{memory}/entries/coffee", {
        "content": "The office espresso machine is descaled every Friday by Priya.", "description": "Kitchen"})
    assert saved.status == 201
    # Then the reader reads it, and finds it by its words and by its meaning
    read = reader.request("GET", f"/v1/memories/{memory}/entries/coffee")
    assert read.status == 200 and read.body["version"] == 1 and "espresso" in read.body["content"]
    assert names(search(reader, memory, "espresso", "keyword")) == ["coffee"]
    meant = by_meaning(reader, memory, "espresso machine descaled", ["coffee"])
    assert meant.body["mode"] == "semantic" and names(meant) == ["coffee"]
    # When the writer changes it, Then the reader reads and finds the new text, and not the old by its words
    changed = writer.request("PUT", f"/v1/memories/{memory}/entries/coffee", {
        "content": "Tea bags are kept in the second drawer.", "description": "Kitchen"})
    assert changed.status == 200
    assert reader.request("GET", f"/v1/memories/{memory}/entries/coffee").body["version"] == 2
    assert names(search(reader, memory, "espresso", "keyword")) == []
    tea = by_meaning(reader, memory, "tea bags drawer", ["coffee"])
    assert names(tea) == ["coffee"] and tea.body["items"][0]["content"].startswith("Tea bags")
    # When the writer deletes it, Then the reader neither reads nor finds it
    assert writer.request("DELETE", f"/v1/memories/{memory}/entries/coffee").status == 204
    assert reader.request("GET", f"/v1/memories/{memory}/entries/coffee").status == 404
    assert names(search(reader, memory, "tea", "keyword")) == []
    assert names(by_meaning(reader, memory, "tea bags drawer", [])) == []


def test_a_key_revoked_or_a_user_erased_through_one_worker_is_refused_by_every_worker_at_once(
    workers: Workers,
) -> None:
    first, second = one_each(workers)
    user = f"gone-{uuid.uuid4().hex[:8]}"
    made = first.request("POST", "/v1/keys", {})
    for_user = first.request("POST", "/v1/keys", {"user": user})
    assert made.status == for_user.status == 201
    account_key, user_key = made.body["secret"], for_user.body["secret"]
    # Given both workers have served both keys (each keeps what it found)
    for conn in (first, second, first, second):
        assert conn.request("GET", "/v1/memories", key=account_key).status == 200
        assert conn.request("GET", "/v1/memories", key=user_key).status == 200
    # When the account key is revoked through the first worker
    assert first.request("DELETE", f"/v1/keys/{made.body['id']}").status == 204
    # Then the next request with it is refused by every worker, the other key still served
    for conn in (second, first):
        refused = conn.request("GET", "/v1/memories", key=account_key)
        assert refused.status == 401 and refused.body["error"]["code"] == "unauthorized", refused.body
        assert conn.request("GET", "/v1/memories", key=user_key).status == 200
    # When the user is erased through the second worker, Then their key is refused by every worker
    assert second.request("DELETE", f"/v1/users/{user}").status == 200
    for conn in (first, second):
        assert conn.request("GET", "/v1/memories", key=user_key).status == 401


def test_a_memory_trashed_restored_or_made_again_through_one_worker_is_seen_by_the_other_at_once(
    workers: Workers,
) -> None:
    writer, reader = one_each(workers)
    user, memory = f"ana-{uuid.uuid4().hex[:8]}", f"notes-{uuid.uuid4().hex[:8]}"
    entry = f"/v1/memories/{memory}/entries/flat"
    assert writer.request("PUT", f"/v1/memories/{memory}?user={user}").status == 201
    assert writer.request("PUT", f"{entry}?user={user}", {"content": "Ana lives in Lisbon.",
                                                        "description": "Home"}).status == 201
    # Given the reading worker has read the entry (and keeps its memory's record)
    assert reader.request("GET", f"{entry}?user={user}").status == 200
    # When the writer trashes the memory, Then the reader finds it gone; restored, back
    assert writer.request("DELETE", f"/v1/memories/{memory}?user={user}").status == 200
    assert reader.request("GET", f"{entry}?user={user}").status == 404
    assert writer.request("POST", f"/v1/memories/{memory}/restore?user={user}").status == 200
    assert reader.request("GET", f"{entry}?user={user}").body["content"] == "Ana lives in Lisbon."
    # When the writer erases the user (her memory purged) and makes an account memory of that name
    assert writer.request("DELETE", f"/v1/users/{user}").status == 200
    assert writer.request("PUT", f"/v1/memories/{memory}").status == 201
    assert writer.request("PUT", entry, {"content": "The office flat.", "description": "Office"}).status == 201
    # Then the reader reads the account's memory, and nothing of hers
    assert reader.request("GET", f"/v1/memories/{memory}").body["scope"] == "account"
    assert reader.request("GET", entry).body["content"] == "The office flat."
    assert reader.request("GET", f"{entry}?user={user}").status == 404


def test_a_summary_pass_asked_for_through_both_workers_at_once_runs_once(workers: Workers) -> None:
    # Given a conversation of 30 messages (10 have left the recent window), and 4 connections to each worker
    found = connections_by_worker(workers.server.base_url, workers.server.key, workers.process.pid, each=4)
    conns = [conn for held in found.values() for conn in held]
    agent = f"jobs-{uuid.uuid4().hex[:8]}"
    # (thresholds out of reach: only the compactions asked for start a pass)
    assert conns[0].request("PUT", f"/v1/agents/{agent}", {"context": {"summary_messages": 10_000}}).status == 201
    base = f"/v1/agents/{agent}/conversations/c1"
    for n in range(3):
        messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {n}-{i} about invoice {i}."}
                    for i in range(10)]
        assert conns[n].request("POST", f"{base}/messages", {"messages": messages}).status == 201
    # When 8 clients, 4 on each worker, ask for a pass at once (it takes a second: its summariser waits)
    start = threading.Barrier(len(conns))
    answers: list[Answer] = []

    def compact(conn: Connection) -> None:
        start.wait()
        answers.append(conn.request("POST", f"{base}/compact"))

    threads = [threading.Thread(target=compact, args=(conn,)) for conn in conns]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    # Then every answer names the same run: one pass ran, whichever worker was asked
    assert [a.status for a in answers] == [202] * len(conns), [a.body for a in answers]
    assert len({a.body["job_id"] for a in answers}) == 1
    # And its checkpoint, once the pass is done (the entry is written, then the conversation's mark moves), was
    # written by that one pass
    deadline = time.monotonic() + 30
    while (checkpoint := conns[-1].request("GET", f"{base}/checkpoint")).status == 404 \
            or not checkpoint.body.get("covers_through_seq"):
        assert time.monotonic() < deadline, checkpoint.body
        time.sleep(0.1)
    written = {k: checkpoint.body.get(k) for k in ("passes_total", "version", "covers_through_seq", "passes")}
    assert checkpoint.status == 200 and written["passes_total"] == 1 and written["version"] == 1, written
    assert written["covers_through_seq"] == 10, written  # the 10 messages before the recent window's 20


def test_the_rate_limits_hold_for_the_server_not_per_worker(tmp_path: Path) -> None:
    # Given a server of two workers allowing a key 20 requests and a source 6 invalid keys (hardly refilling)
    env = {"AGENTMEM_RATE_LIMIT_KEY_BURST": "20", "AGENTMEM_RATE_LIMIT_KEY_PER_S": "0.001",
           "AGENTMEM_RATE_LIMIT_AUTH_FAILURES_BURST": "6", "AGENTMEM_RATE_LIMIT_AUTH_FAILURES_PER_S": "0.001",
           "AGENTMEM_EMBEDDER": "hashing"}
    with two_workers(tmp_path, **env) as (first, second):
        # When 30 requests with the key alternate between the workers
        statuses = [(first if n % 2 else second).request("GET", "/v1/memories").status for n in range(30)]
        # Then 20 are served in all (not 20 by each), and the rest refused by the key's bucket
        assert statuses.count(200) == 20 and statuses.count(429) == 10, statuses
        refused = first.request("GET", "/v1/memories")
        assert refused.status == 429 and refused.body["error"]["scope"] == "key"
        # When invalid keys alternate between the workers, Then the source's 6 are used up in all
        guesses = [(first if n % 2 else second).request("GET", "/v1/memories", key=f"am_guess{n}").status
                   for n in range(10)]
        assert guesses == [401] * 6 + [429] * 4, guesses
        for conn in (first, second):  # and every request from the source is refused, on either worker
            assert conn.request("GET", "/v1/memories").body["error"]["scope"] == "source"


def test_a_key_bucket_taken_a_few_tokens_at_a_time_serves_its_burst_and_no_more_across_workers(tmp_path: Path) -> None:
    # Given a server of two workers allowing a key 256 requests, hardly refilling: each worker takes the key's
    # tokens from the file they share 4 at a time (docs/api.md, rate limits)
    env = {"AGENTMEM_RATE_LIMIT_KEY_BURST": "256", "AGENTMEM_RATE_LIMIT_KEY_PER_S": "0.001",
           "AGENTMEM_EMBEDDER": "hashing"}
    with two_workers(tmp_path, **env) as (first, second):
        # When 300 requests with the key alternate between the workers
        statuses = [(first if n % 2 else second).request("GET", "/v1/memories").status for n in range(300)]
        # Then never more than the burst is served in all; fewer only by tokens a worker held past a second
        # unused (3 at most each time), which a worker asked every few milliseconds does not
        served = statuses.count(200)
        assert 256 - 2 * 3 <= served <= 256, statuses
        assert statuses.count(429) == 300 - served
        # And once both are refused, each stays refused by the key's bucket
        for conn in (first, second):
            refused = conn.request("GET", "/v1/memories")
            assert refused.status == 429 and refused.body["error"]["scope"] == "key"


@contextmanager
def saving_all_along(base_url: str, key: str) -> Iterator[list[int]]:
    """A client saving the entry ``notes/log`` over and over, on a new connection whenever one breaks; yields the
    numbers of the saves answered 200 or 201 (at least one, before it yields). Stopped when the block ends."""
    acknowledged: list[int] = []
    stop = threading.Event()

    def save() -> None:
        n = 0
        conn: Connection | None = None
        while not stop.is_set():
            n += 1
            try:
                conn = conn or Connection(base_url, key)
                saved = conn.request("PUT", "/v1/memories/notes/entries/log",
                                     {"content": f"save {n}", "description": "every save"})
            except (OSError, http.client.HTTPException):  # its worker stopped: the save may have landed or not
                conn = None
                time.sleep(0.02)
                continue
            if saved.status in (200, 201):
                acknowledged.append(n)

    saver = threading.Thread(target=save, daemon=True)
    saver.start()
    try:
        deadline = time.monotonic() + 10
        while not acknowledged and time.monotonic() < deadline:
            time.sleep(0.01)
        assert acknowledged, "no save was answered"
        yield acknowledged
    finally:
        stop.set()
        saver.join(timeout=30)


def test_a_killed_worker_is_replaced_and_sigterm_stops_all_keeping_every_save_and_count(tmp_path: Path) -> None:
    # Given a server of two workers and a client saving all along
    data_dir = tmp_path / "data"
    with running_server(data_dir, workers=2, AGENTMEM_EMBEDDER="hashing") as (base_url, proc, log):
        before = wait_for_workers(proc.pid, 2)
        key = (data_dir / "dev-key").read_text().strip()
        assert Connection(base_url, key).request("PUT", "/v1/memories/notes").status == 201
        with saving_all_along(base_url, key) as acknowledged:
            # When one worker is killed
            victim = min(before)
            os.kill(victim, signal.SIGKILL)
            # Then clients connecting meanwhile are all answered (those the kernel gives the victim's socket by
            # its replacement: the supervisor keeps the socket)
            meanwhile = [Connection(base_url, key) for _ in range(16)]
            try:
                assert {c.request("GET", "/v1/memories/notes").status for c in meanwhile} == {200}
            finally:
                for conn in meanwhile:
                    conn.close()
            # And another takes its place, and requests are answered by both again
            after = wait_for_workers(proc.pid, 2, other_than={victim})
            assert victim not in after and len(after & before) == 1
            conns = connections_by_worker(base_url, key, proc.pid)
            assert set(conns) == after
            # When reads go through both workers, then the server is sent SIGTERM while the client still saves
            reads = 0
            for held in conns.values():
                for _ in range(7):
                    assert held[0].request("GET", "/v1/memories/notes/entries/log").status == 200
                    reads += 1
            time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
            # Then the server exits 0 with no worker left
            assert proc.wait(timeout=30) == 0, log.read_text()
        assert not any(Path(f"/proc/{pid}").exists() for pid in after)
        assert f"(pid {victim}) was killed by SIGKILL; starting another" in log.read_text()
    # And every save it acknowledged is in the history, and the reads are counted, each worker's
    container = build_container(Settings(data_dir=data_dir, embedder="hashing"))
    principal = container.keys.authenticate(f"Bearer {key}")
    stored = {h.content for h in container.entries.history(principal, "notes", "log")}
    assert {f"save {n}" for n in acknowledged} <= stored
    counts: dict[str, Any] = {c.operation: c.count for c in container.usage.counts(principal)}
    assert counts["entries.read"] == reads
