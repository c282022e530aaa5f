"""The embedded semantic index (adapters/embedded/vector_index.py): fed from the store's change queue by every write
path, replay-safe, never mixing embedders, exact below the graph threshold and nearly so above it, and rebuilt by
``agentmem reindex``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from agentmem.adapters.embedded import vector_index
from agentmem.adapters.embedded.vector_index import SqliteVectorIndex
from agentmem.bootstrap import Container, build_container
from agentmem.cli import main
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.models import Principal
from agentmem.services.agents import AgentSettings
from agentmem.services.entries import SaveRequest
from agentmem.settings import Settings


def make(tmp_path: Path, **settings: object) -> tuple[Container, Principal, SqliteVectorIndex]:
    container = build_container(Settings(data_dir=tmp_path, **settings))  # type: ignore[arg-type]
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.memories.create(account, "company")
    index = container.search_index
    assert isinstance(index, SqliteVectorIndex)
    return container, account, index


def near(index: SqliteVectorIndex, container: Container, text: str, filters: dict[str, object], k: int = 5) -> list:
    vector = container.embedder.embed_one(text)  # type: ignore[union-attr]
    return index.query(None, vector, {**filters, "embedder": index.embedder.name}, k)  # type: ignore[arg-type]


def test_every_write_path_reaches_the_index_and_a_replay_changes_nothing(tmp_path: Path) -> None:
    container, account, index = make(tmp_path)
    entries = {"kind": "entry", "account": account.account_id, "memory": "company", "user": ""}
    # Given entries saved, changed and deleted through the service
    container.entries.save(account, "company", "cat", SaveRequest("Tom the tabby cat sleeps on the printer.", "Pet"))
    container.entries.save(account, "company", "vpn", SaveRequest("Connect to the VPN first.", "Access"))
    container.entries.save(account, "company", "vpn", SaveRequest("Bring pastries on Fridays.", "Breakfast"))
    container.entries.delete(account, "company", "cat")
    # When the index catches up (and then the whole queue is replayed)
    index.catch_up()
    first = [(h.fields["name"], round(h.score, 5)) for h in near(index, container, "pastries", entries)]
    index.reindex(memory="company")
    assert index.catch_up() > 0
    # Then the deleted entry is gone, the changed one holds its new text, and the replay changed nothing
    assert [name for name, _ in first] == ["vpn"]
    assert [(h.fields["name"], round(h.score, 5)) for h in near(index, container, "pastries", entries)] == first
    assert index.vectors() == 1 and index.pending() == 0


def test_a_purged_conversation_leaves_the_index(tmp_path: Path) -> None:
    container, account, index = make(tmp_path)
    container.agents.put(account, "support", AgentSettings())
    messages = {"kind": "message", "account": account.account_id, "agent": "support", "user": "ana"}
    container.conversations.append(account, "support", "c1", [MessageDraft("user", "My sister's wedding is in June.")],
                                   user="ana")
    container.conversations.append(account, "support", "c2", [MessageDraft("user", "The printer is jammed again.")],
                                   user="ana")
    assert {h.fields["conversation"] for h in near(index, container, "wedding", messages)} == {"c1", "c2"}
    # When c1 is purged, Then only c2's message is left; a conversation filter finds within it alone
    container.conversations.delete(account, "support", "c1", user="ana", purge=True)
    assert {h.fields["conversation"] for h in near(index, container, "wedding", messages)} == {"c2"}
    assert near(index, container, "wedding", {**messages, "conversation": "c1"}) == []


def test_above_the_threshold_a_graph_answers_the_same_nearest_neighbours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_index, "ANN_THRESHOLD", 200)
    container, account, index = make(tmp_path)
    container.agents.put(account, "support", AgentSettings())
    topics = ["invoice", "parcel", "password", "wedding", "holiday", "printer", "salary", "dentist"]
    for batch in range(10):
        drafts = [MessageDraft("user", f"Message {batch}-{n} is about the {topics[(batch * 40 + n) % 8]} of team "
                                       f"{n % 7}.") for n in range(40)]
        container.conversations.append(account, "support", f"c{batch}", drafts, user="ana")
    index.catch_up()
    messages = {"kind": "message", "account": account.account_id, "agent": "support", "user": "ana"}
    hits = near(index, container, "the dentist of team 3", messages, k=10)
    partition = index._partitions[vector_index.message_partition(account.account_id, "support", "ana")]
    # Then the partition is a graph, and its answer agrees with the exact one
    assert partition.graph is not None and partition.matrix is None and partition.size == 400
    query = np.asarray(container.embedder.embed_one("the dentist of team 3"), dtype=np.float32)  # type: ignore[union-attr]
    rows = np.arange(400)
    exact = sorted(partition.nearest(query, 10, rows, index._vectors_of(partition, rows)), reverse=True)
    assert len({h.doc_id for h in hits} & {f"message:{int(partition.sources[r])}" for _, r in exact}) >= 8
    # and new messages join the graph as they are written
    container.conversations.append(account, "support", "late", [MessageDraft("user", "A dentist appointment.")],
                                   user="ana")
    assert any(h.fields["conversation"] == "late" for h in near(index, container, "dentist appointment", messages))


@pytest.mark.parametrize("fold_at", [vector_index._Multimap.FOLD_AT, 3])  # its lookups in a dict; folded often
def test_a_graph_holds_each_distinct_vector_once_so_many_copies_of_a_line_do_not_hide_its_neighbours(
    monkeypatch: pytest.MonkeyPatch, fold_at: int,
) -> None:
    # Given a partition past the graph threshold where most rows repeat a handful of lines (a journal's
    # "thanks!"), as one HNSW node per row would link copies to copies and lose the real neighbours
    monkeypatch.setattr(vector_index, "ANN_THRESHOLD", 100)
    monkeypatch.setattr(vector_index._Multimap, "FOLD_AT", fold_at)
    rng = np.random.default_rng(5)
    distinct = rng.standard_normal((300, 32)).astype(np.float32)
    distinct /= np.linalg.norm(distinct, axis=1, keepdims=True)
    order = np.concatenate([np.arange(300), rng.integers(0, 5, 3000)])  # 300 lines, then 3,000 copies of 5
    part = vector_index._Partition("message\x1fa\x1fb\x1fc", 32)
    for begin in range(0, order.size, 500):
        chunk = order[begin : begin + 500]
        rows = list(range(begin, begin + len(chunk)))
        part.add(rows, ["c"] * len(chunk), rows, distinct[chunk])
    # Then the graph has one node per distinct vector, and finds each line's nearest as an exact scan does
    assert part.graph is not None and part.nodes == 300 and part.size == 3300
    for target in range(5, 300, 15):
        query = distinct[target]
        best = part.nearest(query, 1)
        assert best and int(order[best[0][1]]) == target and best[0][0] == pytest.approx(1.0, abs=1e-2)
    # and a repeated line answers with every live copy of it, at one score
    copies = part.nearest(distinct[2], 5000)
    same = [row for score, row in copies if int(order[row]) == 2]
    assert len(same) == int((order == 2).sum())
    # When every row of a line goes, its node leaves the graph; a row of a line whose copies remain keeps it
    part.remove([int(r) for r in np.flatnonzero(order == 2)])
    assert part.nodes == 299 and all(int(order[row]) != 2 for _, row in part.nearest(distinct[2], 50))
    part.remove([3])  # line 3 still has copies among the repeats
    assert part.nodes == 299 and any(int(order[row]) == 3 for _, row in part.nearest(distinct[3], 5))
    # and a line written again after it went comes back as a node
    part.add([9000], ["c"], [9000], distinct[2:3])
    assert part.nodes == 300 and part.nearest(distinct[2], 1)[0][1] == part.sources.tolist().index(9000)


def test_reindex_rebuilds_for_a_new_embedder_and_never_mixes_the_old_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an index written by the hashing embedder
    container, account, index = make(tmp_path, embedder="hashing", embedding_dimension=64)
    for n in range(30):
        container.entries.save(account, "company", f"note-{n}", SaveRequest(f"Note number {n} about refunds.", "A"))
    index.catch_up()
    assert index.vectors() == 30
    # When the embedder changes, Then the new one finds none of the old vectors until reindexed
    monkeypatch.setenv("AGENTMEM_EMBEDDER", "wordllama")
    monkeypatch.delenv("AGENTMEM_EMBEDDING_DIMENSION", raising=False)
    again = build_container(Settings(data_dir=tmp_path))
    fresh = again.search_index
    assert isinstance(fresh, SqliteVectorIndex) and fresh.vectors() == 0
    entries = {"kind": "entry", "account": account.account_id, "memory": "company", "user": ""}
    assert near(fresh, again, "refunds", entries) == []  # nothing of the old embedder is compared
    # When `agentmem reindex` runs
    with pytest.raises(SystemExit) as done:
        main(["reindex", "--data-dir", str(tmp_path)])
    assert done.value.code == 0
    out = capsys.readouterr()
    # Then every entry has a vector of the new embedder, the old ones are gone, and it said so
    assert fresh.vectors() == 30
    assert ("reindexed: queued 30 entries and journal messages, applied 30 queued changes with "
            "wordllama/l2_supercat:256") in out.out
    assert "the index holds 30 vectors in all" in out.out and "queued 30 entries and journal messages" in out.err
    assert len(near(fresh, again, "refunds", entries)) == 5


# --- several processes on one data dir (the workers of `agentmem serve --workers N`) --------------------------


def second_process(tmp_path: Path, **settings: object) -> tuple[Container, SqliteVectorIndex]:
    """Another process's container on the same data dir: its own connections and in-memory partitions."""
    other = build_container(Settings(data_dir=tmp_path, **settings))  # type: ignore[arg-type]
    index = other.search_index
    assert isinstance(index, SqliteVectorIndex)
    return other, index


def test_what_another_process_removes_or_changes_leaves_the_partitions_this_one_holds(tmp_path: Path) -> None:
    # Given two processes on one data dir, the second holding the memory's partition with both entries in it
    container, account, index = make(tmp_path, embedder="hashing", embedding_dimension=64)
    other, other_index = second_process(tmp_path, embedder="hashing", embedding_dimension=64)
    entries = {"kind": "entry", "account": account.account_id, "memory": "company", "user": ""}
    container.entries.save(account, "company", "cat", SaveRequest("Tom the tabby cat sleeps on the printer.", "Pet"))
    container.entries.save(account, "company", "vpn", SaveRequest("Connect to the VPN before the printer.", "Access"))
    index.catch_up()
    assert {h.fields["name"] for h in near(other_index, other, "printer", entries)} == {"cat", "vpn"}
    # When the first process deletes one and rewrites the other, and indexes both changes itself
    container.entries.delete(account, "company", "cat")
    container.entries.save(account, "company", "vpn", SaveRequest("Bring pastries on Fridays.", "Breakfast"))
    assert index.catch_up() > 0
    # Then the second process no longer finds the deleted one, and finds the other by its new text only
    assert other_index.pending() == 0  # (nothing left for it to apply itself)
    assert [h.fields["name"] for h in near(other_index, other, "tabby cat", entries)] == ["vpn"]
    hits = near(other_index, other, "pastries Fridays", entries)
    assert [h.fields["name"] for h in hits] == ["vpn"]
    assert hits[0].score == pytest.approx(near(index, container, "pastries Fridays", entries)[0].score)
    # And an entry created again comes back in both
    container.entries.save(account, "company", "cat", SaveRequest("Tom the tabby cat is back.", "Pet"))
    index.catch_up()
    assert "cat" in {h.fields["name"] for h in near(other_index, other, "tabby cat", entries)}


def test_a_process_too_far_behind_the_removal_log_loads_its_partitions_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a second process holding a partition, and a removal log that keeps only the newest 2 removals
    monkeypatch.setattr(vector_index, "KEEP_REMOVALS", 2)
    container, account, index = make(tmp_path, embedder="hashing", embedding_dimension=64)
    other, other_index = second_process(tmp_path, embedder="hashing", embedding_dimension=64)
    entries = {"kind": "entry", "account": account.account_id, "memory": "company", "user": ""}
    for n in range(6):
        container.entries.save(account, "company", f"note-{n}", SaveRequest(f"Note {n} about refunds.", "A"))
    index.catch_up()
    assert len(near(other_index, other, "refunds", entries, k=10)) == 6
    # When the first process removes 5 of them (the log forgets the first 3 of those removals)
    for n in range(5):
        container.entries.delete(account, "company", f"note-{n}")
        index.catch_up()
    # Then the second still holds exactly what the table holds
    assert [h.fields["name"] for h in near(other_index, other, "refunds", entries, k=10)] == ["note-5"]


def test_one_catch_up_at_a_time_across_processes(tmp_path: Path) -> None:
    # Given two processes on one data dir and a change queued
    container, account, index = make(tmp_path, embedder="hashing", embedding_dimension=64)
    _, other_index = second_process(tmp_path, embedder="hashing", embedding_dimension=64)
    container.entries.save(account, "company", "cat", SaveRequest("Tom the tabby cat.", "Pet"))
    # When one holds the data dir's catch-up lock, Then the other does not catch up beside it
    with index._drain_lock(True) as held:
        assert held
        assert other_index.catch_up(wait=False) == 0
        assert other_index.pending() > 0
    # And once it is free, the other catches up
    assert other_index.catch_up(wait=False) > 0 and other_index.pending() == 0


def test_a_change_queued_while_a_batch_is_applied_outlives_the_batch_even_after_the_queue_empties(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The queue numbers its rows without AUTOINCREMENT (migration 17): an id can come back once the queue is
    # empty, and a batch is deleted up to its last id, so a change queued while a batch is embedded must land
    # after it, whatever ids the queue used before.
    container, account, index = make(tmp_path, embedder="hashing", embedding_dimension=64)
    entries = {"kind": "entry", "account": account.account_id, "memory": "company", "user": ""}
    for round_ in range(2):  # the second round starts on an emptied queue, whose ids begin again
        container.entries.save(account, "company", f"cat-{round_}", SaveRequest("Tom the tabby cat.", "Pet"))
        real_embed = index._embed
        saved: list[str] = []

        def embed_and_save(texts: list[str], round_: int = round_, real_embed: Any = real_embed,
                           saved: list[str] = saved) -> Any:
            if not saved:  # Given a save landing between the batch's read and its delete
                saved.append(f"dog-{round_}")
                container.entries.save(account, "company", f"dog-{round_}", SaveRequest("Rex the dog barks.", "Pet"))
            return real_embed(texts)

        monkeypatch.setattr(index, "_embed", embed_and_save)
        # When the index catches up
        index.catch_up()
        monkeypatch.setattr(index, "_embed", real_embed)
        index.catch_up()
        # Then the change made meanwhile was not deleted with the batch: its vector is there
        names = {h.fields["name"] for h in near(index, container, "Rex the dog barks.", entries, k=10)}
        assert f"dog-{round_}" in names and index.pending() == 0


def test_beside_the_indexer_a_search_answers_hybrid_over_what_is_indexed_and_says_how_far_behind(
    tmp_path: Path,
) -> None:
    """SPEC §6.2: while the index catches up, searches answer over what is indexed and never wait out a deadline
    because of the backlog; the answer says how far behind the index is."""
    container, account, index = make(tmp_path)
    container.agents.put(account, "support", AgentSettings())
    service = container.conversations
    # Given a conversation already indexed
    service.append(account, "support", "old", [MessageDraft("user", "The wedding in Porto is on June 12th.")],
                   user="ana")
    index.catch_up()
    # and an indexer thread running (agentmem serve's) that is in the middle of a catch-up (it holds the queue)
    worker = vector_index.IndexWorker(index)
    index.background = True
    try:
        assert index._draining.acquire(timeout=5)  # (the worker's batch, as long as the test needs)
        # When a large import lands (more than a query applies itself) and the journal is searched meanwhile
        imported = [MessageDraft("user" if i % 2 == 0 else "assistant", f"Line {i} of the imported export about "
                                 f"invoices, shipments and the quarterly numbers.") for i in range(40)]
        service.append(account, "support", "import", imported, user="ana")
        service.append(account, "support", "import", imported[:20], user="ana")
        everywhere = service.search_page(account, "support", "when is the wedding", user="ana")
        in_import = service.search_page(account, "support", "quarterly invoices", user="ana", conversation="import")
        by_tool = container.tools.execute(account, "support", "journal_message_search",
                                          {"query": "quarterly invoices", "conversation": "import"}, user="ana",
                                          surface="agent").result
        index._draining.release()
        # Then it answered hybrid (the semantic side did not wait for the catch-up, so no timeout), found what
        # was indexed, and said how many of the searched messages are not indexed yet
        assert (everywhere.mode, everywhere.fallback) == ("hybrid", None)
        assert [(h.conversation, h.seq) for h in everywhere.items][:1] == [("old", 1)]
        assert everywhere.index_lag == 60 and in_import.index_lag == 60
        assert (in_import.mode, in_import.fallback) == ("hybrid", None)
        # and the agent's journal tool says the same as the service it calls
        assert (by_tool["mode"], by_tool["index_lag"]) == ("hybrid", 60) and by_tool["items"]
        # When the indexer runs and catches up, the lag is 0 and the imported messages are found by meaning too
        worker.start()
        deadline = 0
        while index.pending() and deadline < 600:
            worker._stop.wait(0.05)
            deadline += 1
        index._lags.clear()  # (the count kept for half a second)
        after = service.search_page(account, "support", "quarterly invoices", user="ana", conversation="import",
                                    mode="semantic")
        assert after.index_lag == 0 and after.mode == "semantic" and after.items
    finally:
        worker.stop()
    # and a search in keyword mode does not ask the index (no lag to tell)
    assert service.search_page(account, "support", "wedding", user="ana", mode="keyword").index_lag is None


@pytest.mark.parametrize("beside_indexer", [False, True], ids=["in-process", "beside-the-indexer"])
def test_a_search_just_after_an_append_finds_it_by_meaning_and_says_the_index_is_not_behind(
    tmp_path: Path, beside_indexer: bool,
) -> None:
    """The lag a search reports is counted once its semantic side has searched: what that side applied of the queue
    first (a few messages just appended) is indexed, and the answer must not say it is not."""
    container, account, index = make(tmp_path)
    container.agents.put(account, "support", AgentSettings())
    service = container.conversations
    index.background = beside_indexer  # (beside agentmem serve's indexer, a query applies a backlog of 16 or fewer)
    service.append(account, "support", "c1", [MessageDraft("user", "My sister gets married in Porto on June 12th."),
                                              MessageDraft("assistant", "Congratulations! Noted.")], user="ana")
    page = service.search_page(account, "support", "when is the wedding", user="ana", mode="semantic")
    assert (page.mode, page.index_lag) == ("semantic", 0)
    assert [(h.conversation, h.seq) for h in page.items][:1] == [("c1", 1)]


def test_the_lag_of_entries_counts_each_queued_entry_of_the_scope_once_and_is_kept_a_moment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An entry search's ``index_lag``: the entries of the memories and layers it names that are queued and not yet
    indexed, each once however many changes queued it; an entry deleted is not one to wait for."""
    container, account, index = make(tmp_path)
    container.memories.create(account, "notes")
    company = {"kind": "entry", "account": account.account_id, "memory": ["company"], "user": [""]}
    as_ana = {**company, "user": ["", "ana"]}
    assert index.lag(company) == 0  # nothing queued
    # Given changes queued: an entry saved twice, one saved then deleted, one of ana's layer, one of another memory
    for content in ("Refunds take 14 days.", "Refunds take 30 days."):
        container.entries.save(account, "company", "refunds", SaveRequest(content, "Refunds"))
    container.entries.save(account, "company", "gone", SaveRequest("Soon deleted.", "Gone"))
    container.entries.delete(account, "company", "gone")
    container.entries.save(account, "company", "plan", SaveRequest("Ana is on the Team plan.", "Plan"), user="ana")
    container.entries.save(account, "notes", "other", SaveRequest("Another memory's note.", "Note"))
    monkeypatch.setattr(vector_index, "LAG_KEPT_S", 60.0)  # (this machine's pace aside)
    # Then each scope counts its own entries that are still there, once each
    assert (index.lag(company), index.lag(as_ana), index.lag({**company, "memory": ["company", "notes"]})) == (1, 2, 2)
    assert index.lag({"kind": "entry", "account": "another", "memory": ["company"], "user": [""]}) == 0
    # and a count is kept LAG_KEPT_S: a save meanwhile is counted once it has passed
    container.entries.save(account, "company", "vpn", SaveRequest("Connect to the VPN first.", "Access"))
    assert index.lag(company) == 1
    monkeypatch.setattr(vector_index, "LAG_KEPT_S", 0.0)
    assert index.lag(company) == 2
    # When the index catches up, nothing is behind
    index.catch_up()
    assert (index.lag(company), index.lag(as_ana)) == (0, 0)


def test_a_slow_count_of_the_lag_is_kept_until_it_has_cost_a_small_share_of_the_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A count that took LAG_SLOW_S or more (a million queued) is kept until it has cost LAG_COST_SHARE of the time
    since, whatever LAG_KEPT_S; a fast one only LAG_KEPT_S."""
    container, account, index = make(tmp_path)
    company = {"kind": "entry", "account": account.account_id, "memory": ["company"], "user": [""]}
    container.entries.save(account, "company", "refunds", SaveRequest("Refunds take 14 days.", "Refunds"))
    monkeypatch.setattr(vector_index, "LAG_KEPT_S", 0.0)
    monkeypatch.setattr(vector_index, "LAG_SLOW_S", 0.0)  # every count is slow here
    monkeypatch.setattr(vector_index, "LAG_COST_SHARE", 1e-9)  # ... and kept for ever for what it cost
    assert index.lag(company) == 1
    container.entries.save(account, "company", "vpn", SaveRequest("Connect to the VPN first.", "Access"))
    assert index.lag(company) == 1  # kept
    monkeypatch.setattr(vector_index, "LAG_SLOW_S", 60.0)  # a fast count is not kept past LAG_KEPT_S
    index._lags.clear()
    assert index.lag(company) == 2
    container.entries.save(account, "company", "plan", SaveRequest("On the Team plan.", "Plan"))
    assert index.lag(company) == 3


def test_beside_the_indexer_a_save_just_made_is_found_by_meaning_once_the_running_batch_is_done(
    tmp_path: Path,
) -> None:
    """A save then a recall (read your writes): the indexer's batch that is running holds the save or is about to;
    the query waits for it (QUERY_WAIT_BEHIND_S at most) and applies what is left, rather than missing the save."""
    import threading

    container, account, index = make(tmp_path)
    entries = {"kind": "entry", "account": account.account_id, "memory": "company", "user": ""}
    container.entries.save(account, "company", "vpn", SaveRequest("Connect to the VPN first.", "Access"))
    index.catch_up()
    index.background = True  # (as IndexWorker.start does)
    # Given the indexer in the middle of a batch, done in a tenth of a second
    assert index._draining.acquire(timeout=5)
    threading.Timer(0.1, index._draining.release).start()
    # When an entry is saved and recalled at once
    container.entries.save(account, "company", "cat", SaveRequest("Tom the tabby cat sleeps on the printer.", "Pet"))
    found = [h.fields["name"] for h in near(index, container, "where does the cat sleep", entries)]
    # Then the query waited for the batch, applied the save and found it by meaning
    assert found[:1] == ["cat"] and index.pending() == 0


def test_beside_an_indexer_that_holds_the_queue_a_query_waits_only_so_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    monkeypatch.setattr(vector_index, "QUERY_WAIT_BEHIND_S", 0.05)
    container, account, index = make(tmp_path)
    entries = {"kind": "entry", "account": account.account_id, "memory": "company", "user": ""}
    container.entries.save(account, "company", "vpn", SaveRequest("Connect to the VPN first.", "Access"))
    index.catch_up()
    index.background = True
    assert index._draining.acquire(timeout=5)  # (a batch that does not end while the query runs)
    try:
        container.entries.save(account, "company", "cat", SaveRequest("Tom the tabby cat sleeps on the printer.",
                                                                      "Pet"))
        started = time.monotonic()
        found = [h.fields["name"] for h in near(index, container, "where does the cat sleep", entries)]
        waited = time.monotonic() - started
    finally:
        index._draining.release()
    # Then it answered over what is indexed (the save still queued) instead of waiting for the batch
    assert found == ["vpn"] and index.pending() == 1 and waited < 5


def test_beside_another_process_indexer_a_search_leaves_a_large_import_to_it_and_waits_briefly_for_a_save(
    tmp_path: Path,
) -> None:
    """``agentmem serve --workers N``: all workers but the first search beside the first one's indexer. Their
    searches must not apply a large import themselves (seconds of embedding, past the semantic deadline), and a
    save just made is found by meaning once the other process's running batch is done."""
    import fcntl
    import threading

    container, account, index = make(tmp_path)
    container.agents.put(account, "support", AgentSettings())
    service = container.conversations
    entries = {"kind": "entry", "account": account.account_id, "memory": "company", "user": ""}
    container.entries.save(account, "company", "vpn", SaveRequest("Connect to the VPN first.", "Access"))
    index.catch_up()
    index.background = True  # (as the follower of another process's indexer does, IndexWorker(follow=True))
    # When a large import lands and the journal is searched at once
    imported = [MessageDraft("user", f"Line {i} of the export: invoices, shipments and quarterly numbers.")
                for i in range(40)]
    service.append(account, "support", "import", imported, user="ana")
    page = service.search_page(account, "support", "quarterly invoices", user="ana")
    # Then the search answered over what is indexed and said how far behind, leaving the import queued
    assert (page.mode, page.fallback, page.index_lag) == ("hybrid", None, 40) and index.pending() == 40
    index.catch_up()
    # Given the other process in the middle of a batch (it holds the data dir's catch-up lock for 0.1 s)
    other = open(index.db.path.with_name(index.db.path.name + ".indexing"), "rb+")  # noqa: SIM115
    fcntl.flock(other, fcntl.LOCK_EX)
    threading.Timer(0.1, lambda: fcntl.flock(other, fcntl.LOCK_UN)).start()
    try:
        # When an entry is saved and recalled at once
        container.entries.save(account, "company", "cat", SaveRequest("Tom the tabby cat sleeps on the printer.",
                                                                      "Pet"))
        found = [h.fields["name"] for h in near(index, container, "where does the cat sleep", entries)]
    finally:
        other.close()
    # Then the search waited for the batch and applied the save itself
    assert found[:1] == ["cat"] and index.pending() == 0


LONG_PARAGRAPHS = [
    "The web tier runs on four containers behind the load balancer, and deploys take about six minutes.",
    "Logging goes to the central collector; alerts page whoever is on call when errors stay above two percent.",
    "The nightly backup runs at two in the morning from the Frankfurt replica and a restore is tested monthly.",
    "Costs went down by a fifth since the move, mostly the smaller database and reserved container capacity.",
] * 4


@pytest.mark.parametrize("graph_above", [vector_index.ANN_THRESHOLD, 2])  # a matrix, and a graph
def test_a_long_message_is_indexed_whole_and_by_passage_and_answers_once_naming_its_passage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, graph_above: int) -> None:
    from agentmem.domain.passages import passages

    monkeypatch.setattr(vector_index, "ANN_THRESHOLD", graph_above)
    container, account, index = make(tmp_path)
    container.agents.put(account, "support", AgentSettings())
    long_text = "\n\n".join(f"{i}. {p}" for i, p in enumerate(LONG_PARAGRAPHS))
    cut = passages(long_text)
    assert len(cut) > 2
    container.conversations.append(account, "support", "ops", [
        MessageDraft("assistant", long_text), MessageDraft("user", "Thanks, and the backup?")], user="ana")
    index.catch_up()
    # Then the long message has its whole text's vector and one for each passage; the short one, one
    assert index.vectors() == 1 + len(cut) + 1
    messages = {"kind": "message", "account": account.account_id, "agent": "support", "user": "ana"}
    hits = near(index, container, "Frankfurt replica nightly backup restore", messages, k=5)
    seats = [(h.fields["conversation"], h.fields["seq"]) for h in hits]
    assert len(seats) == len(set(seats)) == 2  # each message once, however many passages were near
    long_hit = next(h for h in hits if h.fields["seq"] == 1)
    assert "Frankfurt" in cut[long_hit.fields["passage"]].of(long_text)
    assert "passage" not in next(h for h in hits if h.fields["seq"] == 2).fields
    # and the same from a process that loads the partition afresh (and a conversation named)
    again = build_container(Settings(data_dir=tmp_path)).search_index
    assert isinstance(again, SqliteVectorIndex)
    vector = container.embedder.embed_one("Frankfurt replica nightly backup restore")  # type: ignore[union-attr]
    fresh = again.query(None, vector, {**messages, "conversation": "ops", "embedder": index.embedder.name}, 5)
    assert [(h.fields["seq"], h.fields.get("passage")) for h in fresh] == [
        (h.fields["seq"], h.fields.get("passage")) for h in hits]


def test_an_index_made_before_passages_keeps_its_vectors_and_adds_the_passages_of_long_messages(
        tmp_path: Path) -> None:
    import sqlite3

    from agentmem.adapters.embedded.migrations import MIGRATIONS, _passages

    container, account, index = make(tmp_path)
    container.agents.put(account, "support", AgentSettings())
    long_text = "\n\n".join(LONG_PARAGRAPHS)
    container.conversations.append(account, "support", "ops", [
        MessageDraft("assistant", long_text), MessageDraft("user", "short one")], user="ana")
    index.catch_up()
    # Given a data dir whose index was made whole-message only (the schema before migration 20)
    db = sqlite3.connect(tmp_path / "agentmem.db")
    db.executescript(
        "DELETE FROM vectors WHERE part > 0; DROP TRIGGER vectors_removed;"
        "CREATE TABLE old_vectors AS SELECT id, kind, source, partition, embedder, text_hash, label, seq, vector "
        "FROM vectors; DROP TABLE vectors;"
        "CREATE TABLE vectors (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, source INTEGER NOT NULL,"
        " partition TEXT NOT NULL, embedder TEXT NOT NULL, text_hash TEXT NOT NULL, label TEXT NOT NULL, seq INTEGER,"
        " vector BLOB NOT NULL, UNIQUE (kind, source));"
        "INSERT INTO vectors SELECT * FROM old_vectors; DROP TABLE old_vectors;"
        "CREATE INDEX vectors_by_partition ON vectors(partition, embedder);"
        "CREATE TABLE old_removals AS SELECT id, partition, source FROM vector_removals; DROP TABLE vector_removals;"
        "CREATE TABLE vector_removals (id INTEGER PRIMARY KEY AUTOINCREMENT, partition TEXT NOT NULL,"
        " source INTEGER NOT NULL);"
        "CREATE TRIGGER vectors_removed AFTER DELETE ON vectors BEGIN"
        " INSERT INTO vector_removals (partition, source) VALUES (old.partition, old.source); END;"
        f"PRAGMA user_version = {MIGRATIONS.index(_passages)};")
    newest = db.execute("SELECT max(id) FROM vectors").fetchone()[0]
    db.close()
    # When the server starts on it
    upgraded = build_container(Settings(data_dir=tmp_path)).search_index
    assert isinstance(upgraded, SqliteVectorIndex)
    assert upgraded.vectors() == 2 and upgraded.pending() == 2  # the old vectors kept, every message queued
    upgraded.catch_up()
    # Then the long message gains its passages' vectors, numbered after the old ones, and nothing else changed
    db = sqlite3.connect(tmp_path / "agentmem.db")
    rows = db.execute("SELECT id, source, part FROM vectors ORDER BY id").fetchall()
    assert [r[2] for r in rows if r[0] <= newest] == [0, 0]
    assert len(rows) > 3 and all(r[0] > newest and r[2] > 0 for r in rows[2:])


def test_the_indexer_and_its_followers_load_a_journal_it_writes_before_its_first_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal imported into a fresh ``agentmem serve`` was read from the database by each worker's first
    search of it, past that search's deadline: the indexer, and each other worker's thread that follows it, load
    a partition an import writes to. One written a few vectors at a time, or before the thread first looked, is
    left to its first query."""
    monkeypatch.setattr(vector_index, "LOAD_WRITTEN_MIN", 20)  # (an import: 40 messages here)
    container, account, index = make(tmp_path, embedder="hashing", embedding_dimension=64)
    other, other_index = second_process(tmp_path, embedder="hashing", embedding_dimension=64)
    container.agents.put(account, "support", AgentSettings())
    service = container.conversations
    service.append(account, "support", "before", [MessageDraft("user", "Written before the indexer started.")],
                   user="bo")
    index.catch_up()
    journal = vector_index.message_partition(account.account_id, "support", "ana")
    earlier = vector_index.message_partition(account.account_id, "support", "bo")
    # Given the indexer and a follower in the other process, as agentmem serve's workers start them
    indexer, follower = vector_index.IndexWorker(index), vector_index.IndexWorker(other_index, follow=True)
    indexer.start()
    follower.start()
    try:
        started = time.monotonic() + 30  # (each thread has looked once: what is written from now on is theirs)
        while time.monotonic() < started and (index._written_seen is None or other_index._written_seen is None):
            time.sleep(0.01)
        # When a journal is imported and nobody searches it, and another is written a few messages
        service.append(account, "support", "import",
                       [MessageDraft("user", f"Line {i} of the export: invoices and shipments.") for i in range(40)],
                       user="ana")
        service.append(account, "support", "chat", [MessageDraft("user", f"A turn, {i}.") for i in range(3)],
                       user="cy")
        few = vector_index.message_partition(account.account_id, "support", "cy")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
                journal in index._partitions and journal in other_index._partitions
                and index.pending() == 0 and other_index._partitions[journal].live == 40):
            time.sleep(0.05)
        # Then both processes hold its partition, up to date, before its first search
        assert journal in index._partitions and journal in other_index._partitions
        assert other_index._partitions[journal].live == 40
        # and the partition written a few vectors, or before they looked, is loaded by its first query only
        assert earlier not in index._partitions and earlier not in other_index._partitions
        assert few not in index._partitions and few not in other_index._partitions
    finally:
        indexer.stop()
        follower.stop()
    hits = near(other_index, other, "invoices and shipments",
                {"kind": "message", "account": account.account_id, "agent": "support", "user": "ana"})
    assert len(hits) == 5


def test_the_vectors_written_are_counted_for_a_bounded_number_of_partitions_the_most_written_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``load_written`` counts what is written to each partition not loaded; among many tenants, each written a
    little, the count must not grow with every partition ever written."""
    monkeypatch.setattr(vector_index, "LOAD_WRITTEN_MIN", 10_000)  # (nothing is loaded here: only counted)
    monkeypatch.setattr(vector_index, "WRITTEN_KEPT", 6)
    container, account, index = make(tmp_path, embedder="hashing", embedding_dimension=64)
    container.agents.put(account, "support", AgentSettings())
    index.load_written()  # (the first look)
    # Given eight users' journals written to, one of them much more than the others
    for user, count in [(f"u{n}", 1 + n % 2) for n in range(7)] + [("big", 30)]:
        container.conversations.append(account, "support", "c", [MessageDraft("user", f"Turn {i}.")
                                                                  for i in range(count)], user=user)
    index.catch_up()
    # When the vectors written are counted
    index.load_written()
    # Then the count holds at most half the bound after passing it, the most written partition among them
    assert len(index._written) == 3
    assert index._written[vector_index.message_partition(account.account_id, "support", "big")] == 30


def test_the_indexer_takes_smaller_batches_while_queries_are_asked(tmp_path: Path) -> None:
    """A query that comes during a batch shares the CPU with less of it; with no query lately, full batches."""
    container, account, index = make(tmp_path, embedder="hashing", embedding_dimension=64)
    container.agents.put(account, "support", AgentSettings())
    limits: list[int | None] = []
    catch_up = index.catch_up

    def recorded(limit: int | None = None, **kwargs: Any) -> int:
        limits.append(limit)
        return catch_up(limit, **kwargs)

    index.catch_up = recorded  # type: ignore[method-assign]
    worker = vector_index.IndexWorker(index)
    index.last_query_s = time.monotonic() + 3600  # (a query has just ended, for the next hour)
    worker.start()
    try:
        container.conversations.append(account, "support", "c1",
                                       [MessageDraft("user", f"Message {i} of the import.") for i in range(40)],
                                       user="ana")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and index.pending():
            time.sleep(0.02)
        assert index.pending() == 0
        assert limits and set(limits) == {vector_index.WORKER_BATCH_QUERIED}
        # When no query has run lately
        index.last_query_s = 0.0
        limits.clear()
        container.conversations.append(account, "support", "c2",
                                       [MessageDraft("user", f"Message {i} of the next import.") for i in range(40)],
                                       user="ana")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (index.pending() or not limits):
            time.sleep(0.02)
        assert limits and set(limits) == {vector_index.WORKER_BATCH}
    finally:
        worker.stop()
