"""Concurrent writers (SPEC §2.2, §12): no lost update, no mixed entry.

(a) threads doing read-then-versioned-save on one entry, in-process and over HTTP;
(b) the same from two OS processes sharing one data dir;
(c) unversioned saves of different contents never leave a mix of two writes;
(d) requests of different callers handled at the same time never run with each other's event or key;
(e) appends to one conversation from many clients at once: every message once, seqs without gap or repeat.

Every test over HTTP runs against a server of one process and against one of two worker processes
(``agentmem serve --workers 2``), where the clients' connections land on both.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import sys
import threading
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from agentmem.bootstrap import Container, build_container, ensure_default_account, set_container
from agentmem.domain.errors import VersionConflictError
from agentmem.domain.models import Principal
from agentmem.local.server import make_server
from agentmem.services.entries import SaveRequest
from agentmem.settings import Settings
from functional_support import Server, auth, create_account

THREADS = 8
ATTEMPTS = 200
PROCESS_THREADS = THREADS
PROCESS_ATTEMPTS = ATTEMPTS
MEMORY = "counters"


@dataclass
class Tally:
    """What one writer saw: landed saves, 409s with their current_version, and anything else."""

    successes: int = 0
    conflicts: int = 0
    unexpected: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        self.successes += other.successes
        self.conflicts += other.conflicts
        self.unexpected += other.unexpected


def _run_threads(count: int, work: Any) -> Tally:
    tallies = [Tally() for _ in range(count)]
    start = threading.Barrier(count)

    def run(i: int) -> None:
        start.wait()
        try:
            work(i, tallies[i])
        except Exception as exc:  # a crash in a writer is a failure, not a hang
            tallies[i].unexpected.append(f"writer {i} crashed: {exc!r}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a writer hung"
    total = Tally()
    for tally in tallies:
        total.add(tally)
    return total


@pytest.fixture(params=["one process", "two workers"])
def served(request: pytest.FixtureRequest) -> Server:
    """The server a test over HTTP talks to: the session's server of one process, or the one of two workers."""
    server: Server = request.getfixturevalue("server" if request.param == "one process" else "workers_server")
    return server


# --- in-process: the services on a container ------------------------------------------------------


def _account(container: Container, name: str) -> tuple[Principal, str]:
    _, secret = container.keys.create_account(name)
    return container.keys.authenticate(f"Bearer {secret}"), secret


def _versioned_saves_in_process(container: Container, principal: Principal, name: str, writer: str,
                                attempts: int, tally: Tally) -> None:
    for i in range(attempts):
        seen = container.entries.read(principal, MEMORY, name).version
        try:
            container.entries.save(principal, MEMORY, name, SaveRequest(content=f"{writer} #{i}", version=seen))
            tally.successes += 1
        except VersionConflictError as conflict:
            if isinstance(conflict.current_version, int) and conflict.current_version > seen:
                tally.conflicts += 1
            else:
                tally.unexpected.append(f"409 with current_version {conflict.current_version!r} after reading {seen}")


def _assert_no_lost_update(container: Container, principal: Principal, name: str, total: Tally) -> None:
    entry = container.entries.read(principal, MEMORY, name)
    # version 1 was the create; every landed save added exactly one
    assert entry.version == 1 + total.successes, (entry.version, total)
    history = container.entries.history(principal, MEMORY, name)
    assert sorted(h.version for h in history) == list(range(1, entry.version + 1))


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return build_container(Settings(data_dir=tmp_path / "data"))


def test_versioned_saves_from_threads_in_process_lose_nothing(container: Container) -> None:
    # Given an entry at version 1
    principal, _ = _account(container, "threads")
    container.memories.create(principal, MEMORY)
    container.entries.save(principal, MEMORY, "hits", SaveRequest(content="start", description="counter", version=0))
    # When 8 threads each make 200 read-then-save-with-that-version attempts
    total = _run_threads(THREADS, lambda i, tally: _versioned_saves_in_process(
        container, principal, "hits", f"thread {i}", ATTEMPTS, tally))
    # Then every attempt either landed or was a 409 carrying a newer current_version
    assert total.unexpected == [], total.unexpected[:5]
    assert total.successes + total.conflicts == THREADS * ATTEMPTS
    assert total.successes > 0
    # And the final version counts exactly the landed saves, with no gap in the history
    _assert_no_lost_update(container, principal, "hits", total)


# --- over HTTP against the server -------------------------------------------------------------------


def _versioned_saves_over_http(server: Server, memory: str, name: str, writer: str, attempts: int,
                               tally: Tally) -> None:
    url = server.url(f"/v1/memories/{memory}/entries/{name}")
    with requests.Session() as session:
        session.headers.update(auth(server.key))
        for i in range(attempts):
            read = session.get(url, timeout=60)
            if read.status_code != 200:
                tally.unexpected.append(f"read answered {read.status_code}: {read.text[:200]}")
                continue
            seen = read.json()["version"]
            saved = session.put(url, json={"content": f"{writer} #{i}", "version": seen}, timeout=60)
            if saved.status_code == 200 and saved.json()["version"] == seen + 1:
                tally.successes += 1
            elif saved.status_code == 409 and saved.json()["error"]["code"] == "conflict" \
                    and isinstance(saved.json()["error"].get("current_version"), int) \
                    and saved.json()["error"]["current_version"] > seen:
                tally.conflicts += 1
            else:
                tally.unexpected.append(f"save answered {saved.status_code}: {saved.text[:200]}")


def test_versioned_saves_from_threads_over_http_lose_nothing(served: Server) -> None:
    # Given an entry at version 1 on the running server
    memory = f"conc-{uuid.uuid4().hex[:8]}"
    headers = auth(served.key)
    assert requests.put(served.url(f"/v1/memories/{memory}"), headers=headers, timeout=10).status_code == 201
    created = requests.put(served.url(f"/v1/memories/{memory}/entries/hits"), headers=headers, timeout=10,
                           json={"content": "start", "description": "counter", "version": 0})
    assert created.status_code == 201
    # When 8 threads each make 200 read-then-save-with-that-version attempts over HTTP
    total = _run_threads(THREADS, lambda i, tally: _versioned_saves_over_http(
        served, memory, "hits", f"client {i}", ATTEMPTS, tally))
    # Then every attempt either landed or was a 409 with a newer current_version
    assert total.unexpected == [], total.unexpected[:5]
    assert total.successes + total.conflicts == THREADS * ATTEMPTS
    assert total.successes > 0
    # And the final version counts exactly the landed saves
    final = requests.get(served.url(f"/v1/memories/{memory}/entries/hits"), headers=headers, timeout=10)
    assert final.json()["version"] == 1 + total.successes
    assert final.headers["ETag"] == f'"{1 + total.successes}"'
    history = requests.get(served.url(f"/v1/memories/{memory}/entries/hits/history"), headers=headers, timeout=10)
    assert sorted(h["version"] for h in history.json()["items"]) == list(range(1, 2 + total.successes))


# --- two OS processes on one data dir ---------------------------------------------------------------


def process_writer(data_dir: str, secret: str, writer: str, results: Any) -> None:
    """Run in a spawned process: its own container on the shared data dir."""
    own = build_container(Settings(data_dir=Path(data_dir)))
    principal = own.keys.authenticate(f"Bearer {secret}")
    total = _run_threads(PROCESS_THREADS, lambda i, tally: _versioned_saves_in_process(
        own, principal, "hits", f"{writer} thread {i}", PROCESS_ATTEMPTS, tally))
    results.put((writer, total.successes, total.conflicts, total.unexpected))


def test_versioned_saves_from_two_processes_lose_nothing(tmp_path: Path) -> None:
    # Given an entry at version 1 in a data dir
    data_dir = tmp_path / "shared"
    setup = build_container(Settings(data_dir=data_dir))
    principal, secret = _account(setup, "processes")
    setup.memories.create(principal, MEMORY)
    setup.entries.save(principal, MEMORY, "hits", SaveRequest(content="start", description="counter", version=0))
    # When two processes, each with its own container on that data dir, race versioned saves
    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    workers = [spawn.Process(target=process_writer, args=(str(data_dir), secret, f"process {n}", results))
               for n in range(2)]
    for worker in workers:
        worker.start()
    reports = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    # Then each saw only landed saves and 409s with a newer version
    total = Tally()
    for writer, successes, conflicts, unexpected in reports:
        assert unexpected == [], writer
        assert successes + conflicts == PROCESS_THREADS * PROCESS_ATTEMPTS, writer
        total.add(Tally(successes, conflicts))
    assert {writer for writer, *_ in reports} == {"process 0", "process 1"}
    # And the final version counts the landed saves of both processes: no update was lost
    _assert_no_lost_update(setup, principal, "hits", total)
    writers = Counter(h.content.split(" thread")[0] for h in setup.entries.history(principal, MEMORY, "hits")
                      if h.content != "start")
    assert sum(writers.values()) == total.successes


# --- unversioned saves never mix ---------------------------------------------------------------------


def _write(writer: int, round_: int) -> tuple[str, str]:
    """A content and a description that name the same write (content is long, so a mix would show)."""
    tag = f"writer-{writer}-round-{round_}"
    return f"{tag}\n" + (tag + " ") * 200, f"description of {tag}"


def _belongs_together(content: str, description: str) -> bool:
    tag = description.removeprefix("description of ")
    return description.startswith("description of ") and content == f"{tag}\n" + (tag + " ") * 200


def test_unversioned_saves_in_process_never_mix(container: Container) -> None:
    # Given an entry
    principal, _ = _account(container, "mixing")
    container.memories.create(principal, MEMORY)
    content, description = _write(-1, -1)
    container.entries.save(principal, MEMORY, "doc", SaveRequest(content=content, description=description))
    rounds = 60

    def work(i: int, tally: Tally) -> None:
        for r in range(rounds):
            content, description = _write(i, r)
            container.entries.save(principal, MEMORY, "doc", SaveRequest(content=content, description=description))
            tally.successes += 1

    # When 8 threads save different contents and descriptions without a version
    total = _run_threads(THREADS, work)
    # Then every save landed (last writer wins, one version each)
    assert total.unexpected == [], total.unexpected[:5]
    entry = container.entries.read(principal, MEMORY, "doc")
    assert entry.version == 1 + THREADS * rounds
    # And the stored entry, and every version in its history, is one write whole
    assert entry.content is not None and _belongs_together(entry.content, entry.description)
    assert entry.content_hash == "sha256:" + hashlib.sha256(entry.content.encode()).hexdigest()
    for item in container.entries.history(principal, MEMORY, "doc"):
        assert _belongs_together(item.content, item.description), item.version
        assert item.content_hash == "sha256:" + hashlib.sha256(item.content.encode()).hexdigest()


def test_unversioned_saves_over_http_never_mix(served: Server) -> None:
    # Given an entry on the running server
    memory = f"mix-{uuid.uuid4().hex[:8]}"
    headers = auth(served.key)
    url = served.url(f"/v1/memories/{memory}/entries/doc")
    assert requests.put(served.url(f"/v1/memories/{memory}"), headers=headers, timeout=10).status_code == 201
    content, description = _write(-1, -1)
    assert requests.put(url, headers=headers, json={"content": content, "description": description},
                        timeout=10).status_code == 201
    rounds = 25

    def work(i: int, tally: Tally) -> None:
        with requests.Session() as session:
            session.headers.update(headers)
            for r in range(rounds):
                content, description = _write(i, r)
                saved = session.put(url, json={"content": content, "description": description}, timeout=60)
                if saved.status_code == 200:
                    tally.successes += 1
                else:
                    tally.unexpected.append(f"{saved.status_code}: {saved.text[:200]}")

    # When 8 clients save different contents without a version
    total = _run_threads(THREADS, work)
    # Then all landed, and what is stored is one write whole
    assert total.unexpected == [], total.unexpected[:5]
    final = requests.get(url, headers=headers, timeout=10).json()
    assert final["version"] == 1 + THREADS * rounds
    assert _belongs_together(final["content"], final["description"])
    history = requests.get(url + "/history", headers=headers, timeout=10).json()["items"]
    assert all(_belongs_together(h["content"], h["description"]) for h in history)


# --- simultaneous requests stay apart ----------------------------------------------------------------


def _callers_stay_apart(base_url: str, key_a: str, key_b: str, memory: str, rounds: int) -> Tally:
    """Account A saves and reads its entry while account B asks for it and lists its own memory."""

    def work(i: int, tally: Tally) -> None:
        with requests.Session() as session:
            if i % 2 == 0:
                session.headers.update(auth(key_a))
                url = f"{base_url}/v1/memories/{memory}/entries/plan"
                for r in range(rounds):
                    saved = session.put(url, json={"content": f"a {i} {r}"}, timeout=60)
                    read = session.get(url, timeout=60)
                    if saved.status_code != 200 or read.status_code != 200 or "content" not in read.json():
                        tally.unexpected.append(f"A: {saved.status_code} {read.status_code} {read.text[:150]}")
                    else:
                        tally.successes += 1
            else:
                session.headers.update(auth(key_b))
                for _ in range(rounds):
                    theirs = session.get(f"{base_url}/v1/memories/{memory}/entries/plan", timeout=60)
                    mine = session.get(f"{base_url}/v1/memories/{memory}-b/entries", timeout=60)
                    if theirs.status_code != 404 or mine.status_code != 200 or mine.json()["items"] != []:
                        tally.unexpected.append(f"B: {theirs.status_code} {mine.status_code} {theirs.text[:150]}")
                    else:
                        tally.successes += 1

    return _run_threads(THREADS, work)


def _prepare_two_accounts(base_url: str, key_a: str, key_b: str, memory: str) -> None:
    assert requests.put(f"{base_url}/v1/memories/{memory}", headers=auth(key_a), timeout=10).status_code == 201
    assert requests.put(f"{base_url}/v1/memories/{memory}/entries/plan", headers=auth(key_a), timeout=10,
                        json={"content": "A's plan", "description": "d"}).status_code == 201
    assert requests.put(f"{base_url}/v1/memories/{memory}-b", headers=auth(key_b), timeout=10).status_code == 201


def test_simultaneous_callers_stay_apart_on_the_server(served: Server) -> None:
    # Given two accounts on the running server, A with an entry
    key_b = create_account(served.data_dir, f"apart-{uuid.uuid4().hex[:8]}")["key"]
    memory = f"apart-{uuid.uuid4().hex[:8]}"
    _prepare_two_accounts(served.base_url, served.key, key_b, memory)
    # When A's and B's requests run at the same time
    total = _callers_stay_apart(served.base_url, served.key, key_b, memory, rounds=40)
    # Then each got exactly its own answers: A its entry, B a 404 for A's and its own empty list
    assert total.unexpected == [], total.unexpected[:5]
    assert total.successes == THREADS * 40


@pytest.fixture
def fast_switching() -> Any:
    """Threads switch every microsecond, so a race in request handling shows at once."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def test_simultaneous_callers_stay_apart_when_threads_switch_often(tmp_path: Path, fast_switching: Any) -> None:
    # Given the local server in this process, on two accounts, A with an entry
    container = build_container(Settings(data_dir=tmp_path / "data"))
    key_a = ensure_default_account(container)
    assert key_a is not None
    _, key_b = container.keys.create_account("bee")
    httpd = make_server(container, port=0)
    serving = threading.Thread(target=httpd.serve_forever, daemon=True)
    serving.start()
    base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        _prepare_two_accounts(base_url, key_a, key_b, "apart")
        # When A's and B's requests run at the same time, threads switching constantly
        total = _callers_stay_apart(base_url, key_a, key_b, "apart", rounds=25)
    finally:
        httpd.shutdown()
        httpd.server_close()
        serving.join(timeout=10)
        set_container(None)
    # Then no request ran with another's event or key: no 5xx, no 400, no other tenant's answer
    assert total.unexpected == [], total.unexpected[:5]
    assert total.successes == THREADS * 25


# --- appends to one conversation at once -------------------------------------------------------------------


def _journal(served: Server, agent: str, key: str) -> list[dict[str, Any]]:
    url = served.url(f"/v1/agents/{agent}/conversations/{key}/messages")
    messages: list[dict[str, Any]] = []
    after = 0
    while True:
        page = requests.get(url, headers=auth(served.key), params={"after": after, "limit": 1000}, timeout=30).json()
        messages += page["items"]
        if page["next_cursor"] is None:
            return messages
        after = page["next_cursor"]


def test_appends_from_many_clients_store_every_message_once_numbered_without_gaps(served: Server) -> None:
    # Given an agent
    agent = f"conc-{uuid.uuid4().hex[:8]}"
    headers = auth(served.key)
    assert requests.put(served.url(f"/v1/agents/{agent}"), headers=headers, json={}, timeout=10).status_code == 201
    url = served.url(f"/v1/agents/{agent}/conversations/c1/messages")
    per_client = 10

    def append_all(expect_added: int) -> Tally:
        def work(i: int, tally: Tally) -> None:
            with requests.Session() as session:
                session.headers.update(headers)
                for n in range(per_client):
                    sent = session.post(url, timeout=60, json={"messages": [
                        {"role": "user", "content": f"client {i} message {n}", "client_id": f"{i}-{n}"}]})
                    if sent.status_code in (200, 201) and sent.json()["added"] == expect_added:
                        tally.successes += 1
                    else:
                        tally.unexpected.append(f"{sent.status_code}: {sent.text[:200]}")

        return _run_threads(THREADS, work)

    # When 8 clients append 10 messages each, one at a time, all at once
    total = append_all(expect_added=1)
    assert total.unexpected == [], total.unexpected[:5]
    # Then the journal holds each message once, numbered 1…80 with no gap or repeat, each client's in its order
    journal = _journal(served, agent, "c1")
    assert [m["seq"] for m in journal] == list(range(1, THREADS * per_client + 1))
    assert sorted(m["client_id"] for m in journal) == sorted(f"{i}-{n}" for i in range(THREADS)
                                                             for n in range(per_client))
    for i in range(THREADS):
        mine = [m["content"] for m in journal if m["client_id"].startswith(f"{i}-")]
        assert mine == [f"client {i} message {n}" for n in range(per_client)]
    # And when every append is sent again at once (a client retrying), nothing is stored twice
    again = append_all(expect_added=0)
    assert again.unexpected == [], again.unexpected[:5]
    assert _journal(served, agent, "c1") == journal
