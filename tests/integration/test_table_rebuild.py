"""``agentmem reindex`` on the AWS backend: the table (DynamoDB Local) scanned into the search index.

Entries of every layer and memory, journal messages whether hot or sealed into the journal bucket; never a
checkpoint, never an expired entry (its stale document is removed); ``--memory`` keeps to one memory; a
rebuild interrupted after any step and resumed from its cursor ends with the same documents as one that ran
through; the CLI saves its cursor and says what it did.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import dynamodb_local
import pytest
from agentmem.adapters.aws.config import client_config
from agentmem.adapters.aws.dynamodb import DynamoDBStores, build_dynamodb_stores
from agentmem.adapters.aws.reindex import Cursor, TableRebuild
from agentmem.adapters.embedded.blobs import FileBlobStore
from agentmem.adapters.embedded.embedder import HashingEmbedder
from agentmem.adapters.embedded.search_index import InMemorySearchIndex
from agentmem.domain.conversations import ConversationRef, MessageDraft
from agentmem.domain.models import EntryDraft, Layer, MemoryRecord
from agentmem.ports.search_index import entry_doc_id
from agentmem.settings import Settings

NOW = "2026-03-02T09:00:00.000000Z"
LATER = "2026-03-03T09:00:00.000000Z"
EMBEDDER = HashingEmbedder(32)
ACCOUNT = "acct_rebuild"


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[DynamoDBStores]:
    table = f"rebuild-{uuid.uuid4().hex[:8]}"
    with mock.patch.dict(os.environ, dynamodb_local.shared().environment()):
        session = boto3.Session()
        dynamodb_local.create_table(session.client("dynamodb", config=client_config()), table)
        yield build_dynamodb_stores(Settings(backend="aws", table=table), session,
                                    journal=FileBlobStore(tmp_path / "journal"), index=InMemorySearchIndex(32))


def save(stores: DynamoDBStores, layer: Layer, name: str, content: str, **more: Any) -> None:
    draft = EntryDraft(name=name, content=content, description=more.pop("description", f"about {name}"), **more)
    stores.entries.save(layer, draft, expected_version=None, now=NOW, keep_history_until=LATER, layer_limit=500)


def fill(stores: DynamoDBStores) -> ConversationRef:
    shared, mine, other = Layer(ACCOUNT, "company"), Layer(ACCOUNT, "company", "u1"), Layer(ACCOUNT, "notes")
    for memory in ("company", "notes"):
        stores.memories.create_memory(MemoryRecord(ACCOUNT, memory, None, NOW))
    for i in range(12):
        save(stores, shared, f"policy-{i}", f"Refunds within {i + 1} days of purchase.")
    save(stores, mine, "diet", "Vegetarian, no nuts.")
    save(stores, other, "travel", "Window seat, aisle when the flight is long.")
    save(stores, shared, "old-offer", "A spring discount.", expires_at="2026-03-02T10:00:00.000000Z")
    save(stores, shared, "context.abc", "a checkpoint", conversation="chat-1")
    ref = ConversationRef(ACCOUNT, "support", "u1", "chat-1")
    for start in range(0, 60, 20):
        drafts = [MessageDraft(role="user" if i % 2 == 0 else "assistant", content=f"message {start + i} about Lisbon")
                  for i in range(20)]
        stores.conversations.append(ref, drafts, now=NOW, surface="agent", thresholds=(10**9, 10**9))
    assert stores.conversations.seal(ref, keep_hot=10) > 0  # most of it now lives in the journal bucket
    return ref


def rebuild(stores: DynamoDBStores, index: InMemorySearchIndex, now: str = NOW) -> TableRebuild:
    return TableRebuild(stores.client, str(stores.entries.models.entry.Meta.table_name), index, EMBEDDER,
                        stores.conversations, now)


def documents(index: InMemorySearchIndex) -> dict[str, dict[str, Any]]:
    return {doc_id: fields for doc_id, (fields, _) in index._docs.items()}


def test_a_rebuild_writes_every_live_entry_and_every_message_and_no_checkpoint(stores: DynamoDBStores) -> None:
    ref = fill(stores)
    index = InMemorySearchIndex(32)
    steps = list(rebuild(stores, index).run())
    docs = documents(index)
    entries = {f["name"] for f in docs.values() if f["kind"] == "entry"}
    assert entries == {f"policy-{i}" for i in range(12)} | {"diet", "travel", "old-offer"}
    assert docs[entry_doc_id(ACCOUNT, "company", "u1", "diet")]["user"] == "u1"
    assert docs[entry_doc_id(ACCOUNT, "company", "u1", "diet")]["embedder"] == EMBEDDER.name
    messages = sorted(f["seq"] for f in docs.values() if f["kind"] == "message")
    assert messages == list(range(1, 61))  # the sealed ones and the hot tail alike
    assert all(f["conversation"] == ref.key for f in docs.values() if f["kind"] == "message")
    assert steps[-1].cursor.phase == "done"
    assert sum(s.written for s in steps if s.kind == "messages") == 60


def test_an_expired_entry_is_removed_from_the_index_not_written(stores: DynamoDBStores) -> None:
    fill(stores)
    index = InMemorySearchIndex(32)
    stale = entry_doc_id(ACCOUNT, "company", None, "old-offer")
    index.upsert(stale, {"kind": "entry", "account": ACCOUNT, "memory": "company", "user": "", "name": "old-offer"},
                 EMBEDDER.embed_one("x"))
    removed = sum(step.removed for step in rebuild(stores, index, now=LATER).run())
    assert removed == 1 and stale not in documents(index)


def test_memory_keeps_to_the_entries_of_one_memory(stores: DynamoDBStores) -> None:
    fill(stores)
    index = InMemorySearchIndex(32)
    steps = list(rebuild(stores, index).run(memory="notes"))
    assert [f["name"] for f in documents(index).values()] == ["travel"]
    assert steps[-1].cursor.phase == "done"


def test_journal_rebuilds_only_the_journals(stores: DynamoDBStores) -> None:
    fill(stores)
    index = InMemorySearchIndex(32)
    list(rebuild(stores, index).run(journal=True))
    assert {f["kind"] for f in documents(index).values()} == {"message"}
    assert len(index) == 60


def test_a_rebuild_stopped_after_any_step_and_resumed_ends_with_the_same_documents(
    stores: DynamoDBStores, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(stores)
    monkeypatch.setattr("agentmem.adapters.aws.reindex.SCAN_PAGE_ITEMS", 4)  # many steps
    monkeypatch.setattr("agentmem.adapters.aws.reindex.MESSAGES_PER_READ", 7)
    whole = InMemorySearchIndex(32)
    cursors = [step.cursor for step in rebuild(stores, whole).run()]
    assert len(cursors) > 10
    for stop in range(0, len(cursors), 3):
        resumed = InMemorySearchIndex(32)
        first = rebuild(stores, resumed).run()
        for _ in range(stop + 1):
            cursor = next(first).cursor
        token = cursor.token()
        list(rebuild(stores, resumed).run(cursor=Cursor.parse(token)))
        assert documents(resumed) == documents(whole), f"resumed after step {stop}"


def test_a_cursor_not_given_out_is_refused() -> None:
    for token in ("", "nope", "eyJwaGFzZSI6ICJ4In0="):
        with pytest.raises(ValueError, match="not a cursor"):
            Cursor.parse(token)


def test_the_cli_rebuilds_saves_its_cursor_and_refuses_options_of_the_other_backend(
    stores: DynamoDBStores, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentmem.bootstrap import Adapters
    from agentmem.cli.reindex import reindex as command
    from click.testing import CliRunner

    fill(stores)
    index = InMemorySearchIndex(EMBEDDER.dimension)
    adapters = Adapters(embedder=EMBEDDER, journal=FileBlobStore(tmp_path / "j"),
                        workspaces=FileBlobStore(tmp_path / "w"), search_index=index)
    real_build = __import__("agentmem.bootstrap", fromlist=["build_container"]).build_container

    def build(settings: Settings) -> Any:
        from agentmem.bootstrap import Stores

        s = stores
        return real_build(settings, stores=Stores(accounts=s.accounts, agents=s.agents, memories=s.memories,
                                                  entries=s.entries, usage=s.usage, conversations=s.conversations),
                          adapters=adapters)

    monkeypatch.setattr("agentmem.bootstrap.build_container", build)
    monkeypatch.setattr("agentmem.adapters.aws.dynamodb.dynamodb_client",
                        lambda *a: boto3.Session().client("dynamodb", config=client_config()))
    state = tmp_path / "state.json"
    env = {**dynamodb_local.shared().environment(), "AGENTMEM_BACKEND": "aws",
           "AGENTMEM_TABLE": stores.entries.models.entry.Meta.table_name,
           "AGENTMEM_OPENSEARCH_ENDPOINT": "https://unused.example"}
    with mock.patch.dict(os.environ, env):
        result = CliRunner().invoke(command, ["--state", str(state)])
        assert result.exit_code == 0, result.output
        # today the spring offer has expired: 14 live entries
        assert f"reindexed: 14 entries, 60 messages by {EMBEDDER.name}" in result.output
        assert len(index) == 74
        assert Cursor.parse(json.loads(state.read_text())["cursor"]).phase == "done"
        again = CliRunner().invoke(command, ["--state", str(state)])
        assert again.exit_code == 0 and "already rebuilt" in again.output
        bad = CliRunner().invoke(command, ["--resume", "garbage"])
        assert bad.exit_code == 2 and "not a cursor" in bad.output
    embedded = CliRunner().invoke(command, ["--data-dir", str(tmp_path / "d"), "--restart"],
                                  env={"AGENTMEM_BACKEND": "embedded"})
    assert embedded.exit_code == 2 and "for the AWS backend" in embedded.output
