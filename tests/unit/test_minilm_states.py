"""mode=deep's token states read when a journal message is indexed (adapters/embedded/minilm_states.py) and the
MiniLM re-ranking stage's budget (minilm_reranker.py), on a tiny model made here (the real weights ship in an
optional package; the arithmetic is the same): a search reads no model forward pass for a candidate read ahead,
a candidate not read in time is left unscored, and an erased message leaves nothing behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from agentmem.adapters.embedded import minilm
from agentmem.adapters.embedded.minilm_reranker import MiniLMLateInteraction
from agentmem.adapters.embedded.minilm_states import TokenStates, texts_read
from agentmem.bootstrap import Container, build_container
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.models import Principal
from agentmem.services.agents import AgentSettings
from agentmem.settings import Settings
from test_minilm_numpy import tiny_model

WIDTH = 24
LONG = " ".join(f"the cat sleeps at seven {'printer ' * (n % 4)}the pharmacy closes." for n in range(40))
LINES = ["the pharmacy closes at seven", "the cat sleeps", "printer", LONG, "the printer the cat", "seven"]


@pytest.fixture()
def tiny(monkeypatch: pytest.MonkeyPatch) -> minilm.MiniLM:
    model = tiny_model(width=WIDTH)
    model.tokenizer.enable_truncation(60)  # its 64 positions
    monkeypatch.setitem(minilm._LOADED, minilm.MODEL, model)
    monkeypatch.setattr(minilm, "installed", lambda: True)  # it stands in for the model's package, installed or not
    return model


@pytest.fixture()
def journal(tmp_path: Path, tiny: minilm.MiniLM) -> Iterator[tuple[Container, Principal]]:
    container = build_container(Settings(backend="embedded", data_dir=tmp_path, embedder="none"))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, "support", AgentSettings())
    drafts = [MessageDraft("user" if n % 2 == 0 else "assistant", line) for n, line in enumerate(LINES)]
    container.conversations.append(account, "support", "errands", drafts)
    yield container, account


def store_of(container: Container, **options: int) -> TokenStates:
    return TokenStates(container.stores.entries.db, **options)  # type: ignore[attr-defined]


def read_all(states: TokenStates) -> None:
    while states.read_some(tokens=16):
        pass


def what_deep_reads() -> list[str]:
    """What journal search hands the stage: a short message whole, a long one by its passages."""
    return [piece for line in LINES for _, piece in texts_read(line)]


def test_states_read_when_indexed_are_used_and_the_search_reads_no_forward_pass(
        journal: tuple[Container, Principal]) -> None:
    container, _ = journal
    # Given the indexer has read the journal ahead (a long message by its passages)
    states = store_of(container)
    read_all(states)
    texts = what_deep_reads()
    assert len(texts) > len(LINES)  # the long message is read by passage
    assert states.held() > 0 and states.behind() == 0
    # When the stage scores every candidate with no time at all to read one
    reranker = MiniLMLateInteraction(store=store_of(container))
    scores = reranker.rerank_within("when does the pharmacy close", texts, 0.0)
    # Then every candidate is scored from what was read ahead, without a forward pass over any of them
    assert reranker.forward_texts == 0 and None not in scores
    # and the scores are the model's own (int8 states: within a hundredth)
    read_now = MiniLMLateInteraction().rerank_within("when does the pharmacy close", texts, None)
    assert np.allclose(scores, read_now, atol=0.01)  # type: ignore[arg-type]


def test_a_candidate_not_read_within_the_budget_is_left_unscored(tiny: minilm.MiniLM) -> None:
    reranker = MiniLMLateInteraction()
    texts = ["the pharmacy closes at seven", "the cat sleeps", "printer"]
    # With no budget and nothing read before, nothing is read
    assert reranker.rerank_within("pharmacy", texts, 0.0) == [None, None, None]
    assert reranker.forward_texts == 0
    # with time enough, all are, best first; and what was read is not read again
    full = reranker.rerank_within("pharmacy", texts, None)
    assert None not in full and reranker.forward_texts == 3
    assert reranker.rerank_within("pharmacy", [*texts, "seven"], 0.0) == [*full, None]


def test_erasing_a_conversation_takes_its_token_states(journal: tuple[Container, Principal]) -> None:
    container, account = journal
    states = store_of(container)
    read_all(states)
    db = container.stores.entries.db  # type: ignore[attr-defined]
    assert db.connection().execute("SELECT count(*) FROM token_states").fetchone()[0] > 0
    container.conversations.delete(account, "support", "errands", purge=True)
    assert db.connection().execute("SELECT count(*) FROM token_states").fetchone()[0] == 0
    assert states.held() == 0
    # and a conversation appended after (its ids may be the erased ones' again) is read anew
    container.conversations.append(account, "support", "again", [MessageDraft("user", "the cat sleeps")])
    read_all(states)
    assert states.get(list(map(_key, ["the cat sleeps"]))) != {}


def _key(text: str) -> bytes:
    from agentmem.adapters.embedded.minilm_states import key

    return key(text)


def test_the_store_keeps_the_newest_messages_within_its_bound(journal: tuple[Container, Principal]) -> None:
    container, _ = journal
    states = store_of(container, max_tokens=40)
    read_all(states)
    held = states.get([_key(t) for t in what_deep_reads()])
    assert 0 < states.held() <= 40
    # the newest message is kept, the oldest went first
    assert _key("seven") in held and _key("the pharmacy closes at seven") not in held


def test_the_indexer_reads_ahead_and_a_deep_search_then_reads_only_the_query(
        tmp_path: Path, tiny: minilm.MiniLM, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from agentmem.adapters.embedded.vector_index import IndexWorker, SqliteVectorIndex
    from agentmem.services.entries import SaveRequest
    from agentmem.services.recall import Reranking

    monkeypatch.setattr(minilm, "installed", lambda: True)  # the tiny model stands in for the package's
    container = build_container(Settings(backend="embedded", data_dir=tmp_path, embedder="hashing",
                                         recall_deadline_ms=30_000))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, "support", AgentSettings())
    drafts = [MessageDraft("user" if n % 2 == 0 else "assistant", line) for n, line in enumerate(LINES)]
    container.conversations.append(account, "support", "errands", drafts)
    container.memories.create(account, "notes")
    container.entries.save(account, "notes", "pharmacy", SaveRequest(content=LINES[0], description="hours"))
    # Given the indexer thread of `agentmem serve`, which once caught up reads the token states of the entries
    # and of the journal ahead
    index = container.search_index
    assert isinstance(index, SqliteVectorIndex) and index.read_ahead is not None
    worker = IndexWorker(index, idle_s=0.01)
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while ((index.pending() or index.read_ahead.behind() or index.read_ahead.entries_behind())
               and time.monotonic() < deadline):
            time.sleep(0.05)
    finally:
        worker.stop()
    assert index.read_ahead.behind() == 0 and index.read_ahead.entries_behind() == 0
    # When a deep search has no time at all to read a candidate through the model
    reranker = container.reranker
    assert isinstance(reranker, MiniLMLateInteraction)
    container.conversations.reranking = Reranking(lambda: reranker, deadline_s=30.0, budget_s=0.0)
    page = container.conversations.search_page(account, "support", "the pharmacy closes at seven", mode="deep")
    # Then every candidate was scored from what the indexer read (no forward pass but the query's), and the
    # answer is a whole deep one
    assert page.items and reranker.forward_texts == 0
    assert (page.mode, page.fallback, page.stages[-1]) == ("deep", None, "rerank")
    # and so was the entry, recalled deep
    container.entries.reranking = Reranking(lambda: reranker, deadline_s=30.0, budget_s=0.0)
    found = container.entries.search_page(account, "notes", "when does the pharmacy close", mode="deep")
    assert [e.entry.name for e in found.items] == ["pharmacy"] and reranker.forward_texts == 0
    assert (found.mode, found.fallback, found.stages[-1]) == ("deep", None, "rerank")


def test_a_reader_far_behind_starts_at_the_newest_messages_the_bound_can_hold(
        journal: tuple[Container, Principal]) -> None:
    container, account = journal
    # Given a large journal written before any was read ahead (an upgrade), and a bound of a few messages
    for start in range(0, 1200, 40):
        container.conversations.append(account, "support", "import", [
            MessageDraft("user", f"the cat sleeps {n}") for n in range(start, start + 40)])
    states = store_of(container, max_tokens=60)
    read_all(states)
    # Then it read about what the bound holds, the newest, and not the whole journal only to drop it
    assert states.read_messages < 50 and states.behind() == 0
    assert _key("the cat sleeps 1199") in states.get([_key("the cat sleeps 1199")])


def test_a_batch_stopped_for_the_vectors_keeps_the_messages_read_whole_and_goes_on_after_them(
        journal: tuple[Container, Principal]) -> None:
    container, _ = journal
    states = store_of(container)
    # Given the indexer has vectors to write again after the first forward pass of a batch
    passes: list[int] = []
    states.yielding = lambda: bool(passes.append(1) or len(passes) >= 1)
    # When it reads a batch that holds the long message (its passages take several passes)
    read = states.read_some(tokens=60)
    # Then the messages read whole before it are kept, the long one and those after it are left to the next
    held = states.get([_key(t) for t in what_deep_reads()])
    assert read == 3 and _key("printer") in held
    assert not any(_key(piece) in held for _, piece in texts_read(LONG))
    states.yielding = lambda: False
    read_all(states)
    assert states.behind() == 0 and len(states.get([_key(t) for t in what_deep_reads()])) == len(
        set(what_deep_reads()))


def test_entry_recall_reads_every_candidate_where_journal_search_reads_within_its_budget(
        tmp_path: Path, tiny: minilm.MiniLM) -> None:
    from agentmem.services.entries import SaveRequest

    # Given no budget at all to read a candidate not read before, and nothing read ahead
    container = build_container(Settings(backend="embedded", data_dir=tmp_path / "e", embedder="none",
                                         rerank_budget_ms=0, rerank_store_tokens=0))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.memories.create(account, "errands")
    for n, line in enumerate(LINES[:3]):
        container.entries.save(account, "errands", f"note-{n}", SaveRequest(content=line, description="errand"))
    container.agents.put(account, "support", AgentSettings())
    drafts = [MessageDraft("user" if n % 2 == 0 else "assistant", line) for n, line in enumerate(LINES)]
    container.conversations.append(account, "support", "errands", drafts)
    # When both are searched deep
    entries = container.entries.search_page(account, "errands", "pharmacy seven", mode="deep")
    journal = container.conversations.search_page(account, "support", "pharmacy seven", mode="deep")
    # Then entry recall (never read ahead) read its candidates within its deadline, and journal search kept to
    # its budget (no semantic side here: both answer by words, which is said first)
    assert entries.stages[-1] == "rerank" and entries.fallback == "not_configured"
    assert "rerank" not in journal.stages and journal.fallback == "not_configured"


@pytest.fixture()
def memory(tmp_path: Path, tiny: minilm.MiniLM) -> Iterator[tuple[Container, Principal]]:
    from agentmem.services.entries import SaveRequest

    container = build_container(Settings(backend="embedded", data_dir=tmp_path, embedder="none"))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.memories.create(account, "errands")
    for n, line in enumerate(LINES[:3]):
        container.entries.save(account, "errands", f"note-{n}", SaveRequest(content=line, description="errand"))
    yield container, account


def entry_keys(container: Container, account: Principal) -> dict[str, bytes]:
    """The key of what deep recall reads of each entry of the memory now (domain/text.py entry_index_text)."""
    from agentmem.domain.text import entry_index_text

    page = container.entries.list_entries(account, "errands", content=True)
    return {e.name: _key(entry_index_text(e.name, e.description, e.content)) for e in page.items}


def entry_rows(container: Container) -> int:
    db = container.stores.entries.db  # type: ignore[attr-defined]
    return int(db.connection().execute("SELECT count(*) FROM entry_token_states").fetchone()[0])


def test_entries_are_read_ahead_and_a_deep_recall_then_reads_only_the_query(
        memory: tuple[Container, Principal]) -> None:
    from agentmem.services.recall import Reranking

    container, account = memory
    # Given the reader has read the memory's entries ahead
    states = store_of(container)
    assert states.entries_behind() == 3
    read_all(states)
    assert states.entries_behind() == 0 and states.read_entries == 3
    held = states.get(list(entry_keys(container, account).values()))
    assert len(held) == 3 and states.held() == sum(len(rows) for rows in held.values())
    # When a deep recall has no time at all to read a candidate through the model
    reranker = MiniLMLateInteraction(store=store_of(container))
    container.entries.reranking = Reranking(lambda: reranker, deadline_s=30.0, budget_s=0.0)
    page = container.entries.search_page(account, "errands", "pharmacy seven", mode="deep")
    # Then every candidate was scored from what was read ahead: no forward pass but the query's
    assert page.items and reranker.forward_texts == 0 and page.stages[-1] == "rerank"
    assert page.fallback == "not_configured"  # (no semantic side here: the words found them, said first)


def test_an_entry_changed_is_read_again_and_one_deleted_leaves_nothing(memory: tuple[Container, Principal]) -> None:
    from agentmem.services.entries import SaveRequest

    container, account = memory
    states = store_of(container)
    read_all(states)
    before = entry_keys(container, account)
    # When an entry's content changes, its states go in the same transaction and it is queued again
    container.entries.save(account, "errands", "note-1", SaveRequest(content="the vet opens at nine",
                                                                       description="errand"))
    assert entry_rows(container) == 2 and states.entries_behind() == 1
    read_all(states)
    after = entry_keys(container, account)
    assert after["note-1"] != before["note-1"] and after["note-1"] in states.get([after["note-1"]])
    # a change of what recall does not read it by (its importance) keeps them
    container.entries.save(account, "errands", "note-1", SaveRequest(content="the vet opens at nine",
                                                                       description="errand", importance=0.9))
    assert entry_rows(container) == 3 and states.entries_behind() == 0
    # When entries are deleted (a trigger on every delete of an entry: any path), nothing of them is left
    container.entries.delete(account, "errands", "note-0")
    assert entry_rows(container) == 2
    container.entries.delete(account, "errands", "note-1")
    container.entries.delete(account, "errands", "note-2")
    assert entry_rows(container) == 0 and states.held() == 0 and states.entries_behind() == 0
    # and a user's erasure (her layers deleted whole) takes hers
    container.entries.save(account, "errands", "diet", SaveRequest(content="no peanuts", description="ana"),
                           user="ana")
    read_all(states)
    assert entry_rows(container) == 1
    container.erasure.erase_user(account, "ana")
    assert entry_rows(container) == 0 and states.held() == 0


def test_an_entry_changed_while_it_is_read_keeps_no_states_of_the_old_text_and_stays_queued(
        memory: tuple[Container, Principal]) -> None:
    from agentmem.services.entries import SaveRequest

    container, account = memory
    states = store_of(container)
    changed: list[int] = []

    def change_once() -> None:  # before a layer of the model: the save lands while the batch is being read
        if not changed:
            changed.append(1)
            container.entries.save(account, "errands", "note-2", SaveRequest(content="printer paper, A4",
                                                                               description="errand"))

    states.pause = change_once
    states.read_some(tokens=1000)
    # Then the two entries unchanged are kept; the one changed keeps nothing and waits for its new text
    assert changed and entry_rows(container) == 2 and states.entries_behind() == 1
    states.pause = lambda: None
    read_all(states)
    keys = entry_keys(container, account)
    assert entry_rows(container) == 3 and keys["note-2"] in states.get([keys["note-2"]])


def test_entries_are_read_before_the_journal_and_kept_within_one_bound_with_it(
        memory: tuple[Container, Principal]) -> None:
    container, account = memory
    container.agents.put(account, "support", AgentSettings())
    drafts = [MessageDraft("user" if n % 2 == 0 else "assistant", line) for n, line in enumerate(LINES)]
    container.conversations.append(account, "support", "errands", drafts)
    states = store_of(container, max_tokens=40)
    # The first batch is the entries'
    states.read_some(tokens=1000)
    assert states.read_entries == 3 and states.read_messages == 0
    read_all(states)
    # Then the bound holds both: the entries, and the newest messages in what is left (the oldest out first)
    assert 0 < states.held() <= 40 and entry_rows(container) == 3
    assert len(states.get(list(entry_keys(container, account).values()))) == 3
    held = states.get([_key(t) for t in what_deep_reads()])
    assert _key("seven") in held and _key("the pharmacy closes at seven") not in held


def test_a_bound_full_of_entries_leaves_the_rest_to_be_read_at_search_time(
        memory: tuple[Container, Principal]) -> None:
    from agentmem.domain.text import entry_index_text

    container, _ = memory
    one = len(minilm.load().token_ids([entry_index_text("note-0", "errand", LINES[0])])[0])
    states = store_of(container, max_tokens=one)
    read_all(states)
    # Then the first entry is read, and the others, which the bound cannot hold, are not read only to be dropped
    assert entry_rows(container) == 1 and states.entries_behind() == 2 and states.read_tokens == one
    assert states.read_some() == 0  # nothing to read: no reader spinning on the queue


def test_entries_saved_before_the_upgrade_are_queued_by_it(
        tmp_path: Path, memory: tuple[Container, Principal]) -> None:
    import sqlite3

    from agentmem.adapters.embedded.database import Database

    path = tmp_path / "agentmem.db"  # (the memory's three entries saved)
    old = sqlite3.connect(path)  # the database as migration 21 left it
    old.executescript(
        "DROP TRIGGER entry_token_states_held_on_insert; DROP TRIGGER entry_token_states_held_on_delete; "
        "DROP TRIGGER entry_token_queued_on_insert; DROP TRIGGER entry_token_states_on_update; "
        "DROP TRIGGER entry_token_states_on_delete; DROP TABLE entry_token_states; DROP TABLE entry_token_queue; "
        f"ALTER TABLE token_reader DROP COLUMN entry_tokens; PRAGMA user_version = {ENTRY_STATES - 1};")
    old.close()
    states = TokenStates(Database(path))
    assert states.entries_behind() == 3
    read_all(states)
    assert states.read_entries == 3 and states.held() > 0


ENTRY_STATES = 22  # the migration that reads entries ahead too
