"""Large partitions of the embedded semantic index kept on disk (adapters/embedded/vector_graphs.py): a process that
starts loads a saved graph instead of building it, brings it up to date with what was written and removed since,
answers as a graph built from the database would, never keeps on disk what was erased, never uses a graph it
cannot trust, and does not hold up the queries of other partitions while one loads."""

from __future__ import annotations

import stat
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from agentmem.adapters.embedded import vector_index
from agentmem.adapters.embedded.vector_graphs import GraphFiles
from agentmem.adapters.embedded.vector_index import IndexWorker, SqliteVectorIndex, message_partition
from agentmem.bootstrap import Container, build_container
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.models import Principal
from agentmem.services.agents import AgentSettings
from agentmem.settings import Settings

TOPICS = ["invoice", "parcel", "password", "wedding", "holiday", "printer", "salary", "dentist", "garden", "train"]
QUERIES = ["the dentist of team 3", "a parcel that never came", "salary of team 5", "holiday in the garden",
           "printer password"]
SETTINGS: dict[str, Any] = {"embedder": "hashing", "embedding_dimension": 64}


@pytest.fixture(autouse=True)
def small_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_index, "ANN_THRESHOLD", 100)  # a partition of a few hundred vectors is a graph


def start(data_dir: Path) -> tuple[Container, SqliteVectorIndex]:
    """A process on ``data_dir``: its own container, connections and partitions."""
    container = build_container(Settings(data_dir=data_dir, **SETTINGS))
    index = container.search_index
    assert isinstance(index, SqliteVectorIndex)
    return container, index


def first_process(data_dir: Path, conversations: int = 6) -> tuple[Container, Principal, SqliteVectorIndex]:
    container, index = start(data_dir)
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, "support", AgentSettings())
    for c in range(conversations):
        write(container, account, f"c{c}", c)
    index.catch_up()
    return container, account, index


def write(container: Container, account: Principal, conversation: str, seed: int, count: int = 40) -> None:
    drafts = [MessageDraft("user", f"Message {seed}-{n} is about the {TOPICS[(seed * 7 + n) % 10]} of team {n % 7}.")
              for n in range(count)]
    container.conversations.append(account, "support", conversation, drafts, user="ana")


def scope(account: Principal) -> dict[str, Any]:
    return {"kind": "message", "account": account.account_id, "agent": "support", "user": "ana"}


def answers(container: Container, index: SqliteVectorIndex, account: Principal) -> list[list[tuple[str, float]]]:
    """Each query's nearest messages, with their scores."""
    out = []
    for text in QUERIES:
        vector = container.embedder.embed_one(text)  # type: ignore[union-attr]
        hits = index.query(None, vector, {**scope(account), "embedder": index.embedder.name}, 10)
        out.append([(h.doc_id, round(h.score, 4)) for h in hits])
    return out


def loaded(index: SqliteVectorIndex, account: Principal) -> vector_index._Partition:
    return index._partitions[message_partition(account.account_id, "support", "ana")]


def files(data_dir: Path) -> list[Path]:
    directory = data_dir / "agentmem.db.graphs"
    return sorted(directory.iterdir()) if directory.is_dir() else []


def agrees_with_exact(found: list[list[tuple[str, float]]], container: Container, index: SqliteVectorIndex,
                      account: Principal) -> bool:
    """Whether each query's nearest messages are, but for a graph's few misses, the exact nearest of the vectors
    the database holds (a graph built again may miss others: its build is not deterministic)."""
    rows = index.db.connection().execute("SELECT source, vector FROM vectors WHERE partition = ?",
                                         (message_partition(account.account_id, "support", "ana"),)).fetchall()
    sources = [f"message:{row[0]}" for row in rows]
    matrix = np.stack([np.frombuffer(row[1], dtype=np.float32) for row in rows])
    for text, hits in zip(QUERIES, found, strict=True):
        scores = matrix @ np.asarray(container.embedder.embed_one(text), dtype=np.float32)  # type: ignore[union-attr]
        exact = {sources[i] for i in np.argsort(-scores)[:10]}
        if len(exact & {doc for doc, _ in hits}) < 8:
            return False
    return True


def test_a_saved_graph_is_loaded_by_the_next_process_and_answers_as_the_built_one(tmp_path: Path) -> None:
    # Given a process that built a partition's graph on its first query and saved it
    container, account, index = first_process(tmp_path)
    before = answers(container, index, account)
    assert loaded(index, account).graph is not None
    (saved,) = index.save_graphs()
    assert saved["vectors"] == 240 and saved["bytes"] > 0
    # Then its files are the owner's alone, and nothing is left to save
    assert sorted(p.suffix for p in files(tmp_path)) == [".npz", ".usearch"]
    assert stat.S_IMODE((tmp_path / "agentmem.db.graphs").stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in files(tmp_path)} == {0o600}
    assert index.save_graphs(force=True) == []
    # When another process starts and asks the same questions
    other, other_index = start(tmp_path)
    after = answers(other, other_index, account)
    # Then it loaded the saved graph (not the database's vectors), and answers as the first did
    assert loaded(other_index, account).saved_at == 0
    assert after == before
    assert agrees_with_exact(after, other, other_index, account)


def saved(data_dir: Path) -> tuple[Container, Principal, SqliteVectorIndex, list[list[tuple[str, float]]]]:
    """A process that built a partition's graph on its first query, and saved it; what it answered."""
    container, account, index = first_process(data_dir)
    expected = answers(container, index, account)
    assert len(index.save_graphs()) == 1
    return container, account, index, expected


def found_conversations(found: list[list[tuple[str, float]]], index: SqliteVectorIndex) -> set[str]:
    ids = [int(doc.split(":")[1]) for query in found for doc, _ in query]
    rows = index.db.connection().execute(
        f"SELECT c.key FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.id IN "
        f"({','.join('?' * len(ids))})", ids).fetchall()
    return {row[0] for row in rows}


def test_a_saved_graph_is_brought_up_to_date_with_what_was_written_since(tmp_path: Path) -> None:
    container, account, _, _ = saved(tmp_path)
    # When messages are written after the save
    write(container, account, "late", 11)
    # Then the next process loads the saved graph, adds the new messages to it, and answers as a built one
    other, other_index = start(tmp_path)
    after = answers(other, other_index, account)
    part = loaded(other_index, account)
    assert part.saved_at == 0 and part.changes == 40 and part.size == 280
    assert "late" in found_conversations(after, other_index)
    assert agrees_with_exact(after, other, other_index, account)


def test_an_erasure_removes_the_saved_graph_at_once_whichever_process_applies_it(tmp_path: Path) -> None:
    container, account, _, _ = saved(tmp_path)
    # When a process that does not hold the partition applies a conversation's erasure
    container.conversations.delete(account, "support", "c2", user="ana", purge=True)
    _, applier = start(tmp_path)
    applier.catch_up()
    # Then the saved graph, which holds the erased messages' vectors, is gone from the disk
    assert files(tmp_path) == []
    # And the next process builds the partition without them
    other, other_index = start(tmp_path)
    after = answers(other, other_index, account)
    assert loaded(other_index, account).saved_at is None and loaded(other_index, account).size == 200
    assert "c2" not in found_conversations(after, other_index)


def test_a_process_holding_a_partition_applies_another_s_erasure_before_it_saves_and_writes_none_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a process holding a partition, and another that erases a conversation of it
    container, account, holder = first_process(tmp_path)
    answers(container, holder, account)
    eraser_container, eraser = start(tmp_path)
    eraser_container.conversations.delete(account, "support", "c2", user="ana", purge=True)
    eraser.catch_up()
    # When the holder, which has not searched since, saves its graphs (as its indexer does when idle)
    monkeypatch.setattr(vector_index, "SAVE_DELAY_S", 0.0)
    (row,) = holder.save_graphs()
    # Then it applied the erasure first: what it wrote holds none of it
    assert row["vectors"] == 200 and loaded(holder, account).size == 200
    other, other_index = start(tmp_path)
    after = answers(other, other_index, account)
    assert loaded(other_index, account).saved_at == 0 and "c2" not in found_conversations(after, other_index)


def test_a_graph_file_from_before_an_erasure_is_brought_past_it_when_loaded_and_removed(tmp_path: Path) -> None:
    # Given a saved graph, kept aside, and then a conversation erased (which removed the saved files)
    container, account, _, _ = saved(tmp_path)
    kept = {path.name: path.read_bytes() for path in files(tmp_path)}
    container.conversations.delete(account, "support", "c2", user="ana", purge=True)
    start(tmp_path)[1].catch_up()
    assert files(tmp_path) == []
    # When the old files come back (a copy of the data dir taken before the erasure, restored)
    for name, data in kept.items():
        (tmp_path / "agentmem.db.graphs" / name).write_bytes(data)
    # Then the process that loads them applies the erasure, answers without it, and removes the stale files
    other, other_index = start(tmp_path)
    after = answers(other, other_index, account)
    assert loaded(other_index, account).size == 200 and "c2" not in found_conversations(after, other_index)
    assert agrees_with_exact(after, other, other_index, account)
    assert files(tmp_path) == []


def test_a_held_partition_that_lost_vectors_is_saved_again_after_a_delay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    container, account, index, _ = saved(tmp_path)
    container.conversations.delete(account, "support", "c2", user="ana", purge=True)
    index.catch_up()
    assert files(tmp_path) == [] and index.save_graphs() == []  # not again at once: a stream of removals waits
    monkeypatch.setattr(vector_index, "SAVE_DELAY_S", 0.0)
    assert [row["vectors"] for row in index.save_graphs()] == [200]
    other, other_index = start(tmp_path)
    after = answers(other, other_index, account)
    assert loaded(other_index, account).saved_at == 0 and "c2" not in found_conversations(after, other_index)


def test_a_graph_of_another_embedder_is_not_used(tmp_path: Path) -> None:
    _, account, index, _ = saved(tmp_path)
    name = message_partition(account.account_id, "support", "ana")
    assert index.graphs.load(name, embedder="another", dimension=64) is None
    assert files(tmp_path) == []


def test_a_graph_the_removal_log_no_longer_reaches_back_to_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a saved graph of ana's journal, and a removal log that keeps the newest removal only
    container, account, index, _ = saved(tmp_path)
    monkeypatch.setattr(vector_index, "KEEP_REMOVALS", 1)
    # When bob's conversation of three messages is written and erased (removals of another partition)
    drafts = [MessageDraft("user", f"Bob's note {n}.") for n in range(3)]
    container.conversations.append(account, "support", "b1", drafts, user="bob")
    index.catch_up()
    container.conversations.delete(account, "support", "b1", user="bob", purge=True)
    index.catch_up()
    assert files(tmp_path) != []
    # Then the next process cannot tell what ana's saved graph missed: it builds the partition, and sets it aside
    other, other_index = start(tmp_path)
    assert agrees_with_exact(answers(other, other_index, account), other, other_index, account)
    assert loaded(other_index, account).saved_at is None and files(tmp_path) == []


def test_a_saved_graph_that_cannot_be_read_is_set_aside_and_the_partition_built(tmp_path: Path) -> None:
    _, account, _, _ = saved(tmp_path)
    (graph,) = [p for p in files(tmp_path) if p.suffix == ".usearch"]
    graph.write_bytes(b"not a graph")
    other, other_index = start(tmp_path)
    assert agrees_with_exact(answers(other, other_index, account), other, other_index, account)
    assert loaded(other_index, account).saved_at is None and files(tmp_path) == []


def test_the_indexer_loads_the_saved_graphs_as_it_starts_and_saves_them_as_it_stops(tmp_path: Path) -> None:
    container, account, index = first_process(tmp_path)
    answers(container, index, account)
    # When the indexer of a process stops, Then it saves the graph it holds
    worker = IndexWorker(index, idle_s=0.01)
    worker.start()
    write(container, account, "late", 11)
    for _ in range(1000):  # the indexer adds them
        if loaded(index, account).size == 280:
            break
        threading.Event().wait(0.01)
    worker.stop()
    assert loaded(index, account).saved_at == loaded(index, account).changes
    # And the indexer of the next process loads it before any query asks
    _, other_index = start(tmp_path)
    other = IndexWorker(other_index, idle_s=0.01)
    other.start()
    try:
        for _ in range(500):
            if message_partition(account.account_id, "support", "ana") in other_index._partitions:
                break
            threading.Event().wait(0.01)
        assert loaded(other_index, account).saved_at == 0 and loaded(other_index, account).size == 280
        # and it holds it as of where the whole index is: nothing is added to it again afterwards
        other_index._refresh()
        assert loaded(other_index, account).changes == 0
    finally:
        other.stop()


def test_while_one_partition_loads_the_queries_of_another_are_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a saved graph of one user's journal, and another user's journal
    container, account, index = first_process(tmp_path)
    answers(container, index, account)
    index.save_graphs()
    container.conversations.append(account, "support", "b1", [MessageDraft("user", "Bob's parcel never came.")],
                                   user="bob")
    index.catch_up()
    other, other_index = start(tmp_path)
    release, loading = threading.Event(), threading.Event()
    real_load = GraphFiles.load

    def slow_load(self: GraphFiles, partition: str, **kwargs: Any) -> Any:
        if partition == message_partition(account.account_id, "support", "ana"):
            loading.set()
            assert release.wait(30)
        return real_load(self, partition, **kwargs)

    monkeypatch.setattr(GraphFiles, "load", slow_load)
    # When a query of ana's journal is loading its graph
    found: list[Any] = []
    first = threading.Thread(target=lambda: found.append(answers(other, other_index, account)))
    first.start()
    try:
        assert loading.wait(30)
        # Then a query of bob's journal is answered meanwhile
        vector = other.embedder.embed_one("parcel")  # type: ignore[union-attr]
        hits = other_index.query(None, vector, {**scope(account), "user": "bob", "embedder": other_index.embedder.name},
                                 5)
        assert [h.fields["conversation"] for h in hits] == ["b1"]
    finally:
        release.set()
        first.join(30)
    assert found and agrees_with_exact(found[0], other, other_index, account)


def test_beside_the_indexer_a_partition_past_the_threshold_is_answered_by_its_matrix_while_its_graph_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a process holding a journal of 80 vectors (a matrix), and then an indexer thread beside it
    container, index = start(tmp_path)
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, "support", AgentSettings())
    for c in range(2):
        write(container, account, f"c{c}", c)
    index.catch_up()
    answers(container, index, account)
    index.background = True  # (as IndexWorker.start does)
    # When it grows past the threshold, Then it is still a matrix: its graph is the indexer's to build
    for c in range(2, 5):
        write(container, account, f"c{c}", c)
    index.catch_up()
    part = loaded(index, account)
    assert part.graph is None and part.graph_pending
    # And while the indexer builds it, the partition is answered (exactly), written to and erased from
    building, release = threading.Event(), threading.Event()
    real_graph_of = vector_index._graph_of

    def slow_graph_of(*args: Any) -> Any:
        building.set()
        assert release.wait(30)
        return real_graph_of(*args)

    monkeypatch.setattr(vector_index, "_graph_of", slow_graph_of)
    monkeypatch.setattr(vector_index, "GRAPH_SWAP_MAX", 10)  # what came meanwhile is added without the lock too
    built: list[int] = []
    builder = threading.Thread(target=lambda: built.append(index.build_graphs()))
    builder.start()
    try:
        assert building.wait(30)
        during = answers(container, index, account)
        assert part.graph is None and agrees_with_exact(during, container, index, account)
        write(container, account, "late", 11)
        container.conversations.delete(account, "support", "c1", user="ana", purge=True)
        index.catch_up()
    finally:
        release.set()
        builder.join(30)
    # Then the graph took the matrix's place with what came and went meanwhile
    assert built == [1] and part.graph is not None and part.matrix is None and part.size == 200
    after = answers(container, index, account)
    assert agrees_with_exact(after, container, index, account)
    assert "late" in found_conversations(after, index) and "c1" not in found_conversations(after, index)
    assert len(part.graph) == part.nodes


def test_a_lookup_keeps_every_value_of_a_key_in_the_order_added_across_folds() -> None:
    lookup = vector_index._Multimap(np.uint64)
    big = 2**64 - 7  # a vector's key: past what a signed number holds
    for key, value in [(big, 1), (5, 2), (big, 3), (7, 4)]:
        lookup.add(key, value)
    lookup.fold()
    lookup.add(big, 5)  # (newer: in the dict)
    lookup.add(9, 6)
    assert lookup.get(big) == [1, 3, 5] and lookup.get(5) == [2] and lookup.get(8) == []
    assert lookup.last_of(np.array([big, 5, 9, 8], dtype=np.uint64)).tolist() == [3, 2, -1, -1]  # the arrays only
    lookup.FOLD_AT = 2
    lookup.settle()
    assert lookup.more == {} and lookup.get(big) == [1, 3, 5] and lookup.get(9) == [6]
    assert lookup.last_of(np.array([big, 9], dtype=np.uint64)).tolist() == [5, 6]
    rows = vector_index._Multimap.of(np.array([4, 2, 4, 1], dtype=np.int64), np.array([0, 1, 2, 3]))
    assert rows.get(4) == [0, 2] and rows.get(1) == [3] and rows.get(3) == []


def test_a_server_worker_without_the_indexer_loads_the_saved_graphs_as_it_starts(tmp_path: Path) -> None:
    from agentmem.local.server import _beside_the_indexer

    _, account, _, _ = saved(tmp_path)
    # When a worker of `agentmem serve --workers N` that does not run the indexer starts
    other, other_index = start(tmp_path)
    follower = _beside_the_indexer(other)
    assert follower is not None and follower.follow and other_index.background
    try:
        for _ in range(600):
            if message_partition(account.account_id, "support", "ana") in other_index._partitions:
                break
            time.sleep(0.05)
        # Then it holds the saved graph before any search asks, as of where the index is (nothing added again)
        part = loaded(other_index, account)
        assert part.saved_at == 0 and part.size == 240
        other_index._refresh()
        assert part.changes == 0
    finally:
        follower.stop()
    assert not other_index.background and files(tmp_path)  # (the follower saves nothing: the indexer's files stay)


def test_beside_another_process_indexer_the_follower_brings_the_graph_up_to_date_and_builds_it(
    tmp_path: Path,
) -> None:
    """A worker beside another process's indexer: the vectors that indexer writes reach the worker's loaded
    partition, and the graph of one that grows past the threshold is built, by the worker's follower thread,
    not by a search (a search that did it waited seconds past its deadline)."""
    container, account, index = first_process(tmp_path, conversations=2)  # the indexer's process: 80 vectors
    other, other_index = start(tmp_path)
    answers(other, other_index, account)  # (the worker has searched the journal: its partition is loaded)
    follower = vector_index.IndexWorker(other_index, follow=True)
    follower.start()
    try:
        # When the indexer's process takes the journal past the threshold
        for c in range(2, 6):
            write(container, account, f"c{c}", c)
        index.catch_up()
        part = loaded(other_index, account)
        for _ in range(600):
            if part.graph is not None and part.size == 240:
                break
            time.sleep(0.05)
        # Then, without a search, the worker's partition holds every vector, and as a graph; a search adds nothing
        assert part.graph is not None and part.size == 240 and other_index.pending() == 0
        changes = part.changes
        assert all(len(found) == 10 for found in answers(other, other_index, account)) and part.changes == changes
    finally:
        follower.stop()


def test_a_loaded_partition_answers_one_conversation_before_and_after_it_is_written_to(tmp_path: Path) -> None:
    """A loaded partition keeps each conversation's rows as an array (two million rows as Python ints took 72 MB),
    and as a list again once the conversation is written to."""
    _, account, _, _ = saved(tmp_path)
    other, other_index = start(tmp_path)
    vector = other.embedder.embed_one("the dentist of team 3")  # type: ignore[union-attr]
    within = {**scope(account), "embedder": other_index.embedder.name, "conversation": ["c2"]}
    other_index.query(None, vector, {**scope(account), "embedder": other_index.embedder.name}, 1)  # (loads it)
    read: list[str] = []
    other_index.db.connection().set_trace_callback(
        lambda sql: read.append(sql) if "vector FROM vectors" in sql else None)
    try:
        hits = other_index.query(None, vector, within, 10)
    finally:
        other_index.db.connection().set_trace_callback(None)
    assert read == []  # (the conversation's vectors are the graph's own, not read again from the database)
    part = loaded(other_index, account)
    assert part.saved_at == 0 and isinstance(part.by_label["c2"], np.ndarray)
    assert len(hits) == 10 and found_conversations([[(h.doc_id, h.score) for h in hits]], other_index) == {"c2"}
    # When the conversation is written to, Then its new message is found within it, and the others' rows stay
    other.conversations.append(account, "support", "c2", [MessageDraft("user", "The dentist of team 3 moved.")],
                               user="ana")
    newest = other_index.db.connection().execute("SELECT max(id) FROM messages").fetchone()[0]
    hits = other_index.query(None, vector, within, 41)
    assert f"message:{newest}" in {h.doc_id for h in hits} and len(hits) == 41
    assert isinstance(part.by_label["c2"], list) and isinstance(part.by_label["c3"], np.ndarray)


def test_a_search_bounded_in_time_reads_the_messages_times_once_and_keeps_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal's search bounded in time asked the journal which messages are within the times, every search: a
    read of every message of the journal (0.4-0.5 s at a million, past the semantic deadline every time)."""
    from agentmem.domain.clock import TimeRange

    container, index = start(tmp_path)
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, "support", AgentSettings())
    # Given a journal past the graph threshold, one message a day through January and February 2026
    for c in range(6):
        drafts = [MessageDraft("user", f"Message {c}-{n} is about the {TOPICS[(c * 7 + n) % 10]} of team {n % 7}.",
                               created_at=f"2026-{1 + (c * 40 + n) // 31 % 2:02d}-{1 + (c * 40 + n) % 28:02d}"
                                          f"T{c:02d}:{n % 60:02d}:00.000000Z") for n in range(40)]
        container.conversations.append(account, "support", f"c{c}", drafts, user="ana")
    index.catch_up()
    vector = np.asarray(container.embedder.embed_one("the dentist of team 3"), dtype=np.float32)  # type: ignore[union-attr]
    index.query(None, list(map(float, vector)), {**scope(account), "embedder": index.embedder.name}, 5)
    part = loaded(index, account)
    assert part.graph is not None
    rows = index.db.connection().execute(
        "SELECT m.id, m.created_at, c.key FROM messages m JOIN conversations c ON c.id = m.conversation_id").fetchall()
    time_of = {int(r[0]): r[1] for r in rows}
    in_c0 = {int(r[0]) for r in rows if r[2] == "c0"}
    read: list[str] = []
    index.db.connection().set_trace_callback(lambda sql: read.append(sql) if "created_at" in sql else None)
    try:
        def between(after: str | None, before: str | None, conversations: set[str] | None = None) -> list[int]:
            found = index._nearest_between(part, vector, 300, TimeRange(after, before), conversations)
            return [int(part.sources[row]) for _, row in found]

        # When it is searched in February only, Then every message found is of February, and all of them are
        february = between("2026-02-01T00:00:00.000000Z", None)
        inside = {i for i, t in time_of.items() if t > "2026-02-01T00:00:00.000000Z"}
        assert set(february) == inside and 0 < len(inside) < len(time_of)
        # and the times were read in one pass, and not again for the next search, bounded on both sides and to
        # one conversation
        assert len(read) == 1
        window = between("2026-01-10T00:00:00.000000Z", "2026-01-20T00:00:00.000000Z", {"c0"})
        assert window and all("2026-01-10" < time_of[i] < "2026-01-20" and i in in_c0 for i in window)
        assert len(read) == 1
        # and through the graph, when more are within the times than are searched exactly
        monkeypatch.setattr(vector_index, "TIME_EXACT_MAX", 10)
        wide = between(None, "2026-01-15T00:00:00.000000Z")
        assert wide and all(time_of[i] < "2026-01-15" for i in wide) and len(read) == 1
        # which asks the graph for as many of its nearest as would hold three times what it keeps of the window
        # (at least 200), and keeps the window's nearest, as an exact search of the window's rows finds them
        asked: list[int] = []
        nearest = part.nearest
        monkeypatch.setattr(part, "nearest", lambda query, k, *more: asked.append(k) or nearest(query, k, *more))
        early = TimeRange(None, "2026-01-15T00:00:00.000000Z")
        found = [row for _, row in index._nearest_between(part, vector, 5, early, None)]
        times = index._times_of(part)
        rows = np.flatnonzero(part.alive[: len(times)] & (times >= 0)
                              & (times < vector_index._micros("2026-01-15T00:00:00.000000Z")))
        assert part.size == int(np.count_nonzero(part.alive))  # (the live rows, as the partition counts them)
        assert asked == [vector_index.time_wide(5, rows.size, part.size)] and rows.size < part.size
        exact = rows[np.argsort(-(index._vectors_of(part, rows) @ vector), kind="stable")[:5]]
        assert set(found) == set(exact.tolist())
    finally:
        index.db.connection().set_trace_callback(None)
    # When a message is written later, Then its time is read by its id on the next bounded search
    container.conversations.append(account, "support", "late", [MessageDraft(
        "user", "The dentist of team 3, late.", created_at="2026-03-05T10:00:00.000000Z")], user="ana")
    index.catch_up()
    newest = index.db.connection().execute("SELECT max(id) FROM messages").fetchone()[0]
    assert between("2026-03-01T00:00:00.000000Z", None) == [newest]


def test_the_indexer_reads_a_large_journal_s_times_once_caught_up_and_they_are_saved_with_its_graph(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first search bounded in time of a large journal read every message's time (about 2 s at a million),
    past its deadline, in every process that started: the indexer now reads them once caught up, and they are
    saved with the graph."""
    from agentmem.domain.clock import TimeRange

    container, account, index = first_process(tmp_path)
    answers(container, index, account)  # (the first query loads the partition, a graph)
    part = loaded(index, account)
    assert part.graph is not None and len(part.times) == 0
    rows = index.db.connection().execute("SELECT id, created_at FROM messages").fetchall()
    expected = {int(r[0]): vector_index._micros(r[1]) for r in rows}
    # When the indexer runs, caught up, Then it reads the times of every row, and saves the graph with them
    worker = IndexWorker(index, idle_s=0.01)
    worker.start()
    try:
        for _ in range(1000):
            if part.saved_at is not None:
                break
            threading.Event().wait(0.01)
    finally:
        worker.stop()
    assert len(part.times) == len(part.sources) == 240
    assert {int(s): int(t) for s, t in zip(part.sources, part.times, strict=True)} == expected
    assert part.saved_at == part.changes
    # When another process loads the saved graph, Then its times come with it, and its first search bounded in
    # time reads none from the journal: only the time of a message written since, by its id
    _, other_index = start(tmp_path)
    other = other_index._partition(message_partition(account.account_id, "support", "ana"))
    assert other is not None and other.saved_at == 0
    assert np.array_equal(other.times, part.times)
    container.conversations.append(account, "support", "late", [MessageDraft(
        "user", "The dentist of team 3, back then.", created_at="2020-03-05T10:00:00.000000Z")], user="ana")
    other_index.catch_up()
    newest = other_index.db.connection().execute("SELECT max(id) FROM messages").fetchone()[0]
    read: list[str] = []
    other_index.db.connection().set_trace_callback(lambda sql: read.append(sql) if "created_at" in sql else None)
    try:
        vector = np.asarray(container.embedder.embed_one("the dentist of team 3"), dtype=np.float32)  # type: ignore[union-attr]
        found = other_index._nearest_between(other, vector, 5, TimeRange(None, "2021-01-01T00:00:00.000000Z"), None)
    finally:
        other_index.db.connection().set_trace_callback(None)
    assert [int(other.sources[row]) for _, row in found] == [newest]
    assert len(read) == 1 and "WHERE id IN" in read[0]
    # And a graph saved before its times were kept is loaded still: its times are read on its first search
    arrays = {key: value for key, value in part.arrays().items() if key != "times"}
    older = vector_index._Partition.from_saved(part.name, part.dimension, arrays, part.graph)
    assert len(older.times) == 0 and older.size == part.size
    # and once they are read, it is due to be saved again, with them
    older.saved_at = older.changes
    monkeypatch.setattr(vector_index, "SAVE_MIN_ROWS", 100)
    assert not older.due(time.monotonic())
    index._times_of(older)
    assert older.due(time.monotonic()) and older.arrays()["times"].tolist() == part.times.tolist()
