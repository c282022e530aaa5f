"""Journal search bounded in time on the AWS backend's store with its search index (SPEC §4.1): the messages'
original times reach the index (the rebuild writes them as the stream indexer does), the index is asked with a
range on them, and every hit read back from the journal is checked against the journal's own time."""

from __future__ import annotations

from agentmem.adapters.aws.dynamodb import DynamoDBStores
from agentmem.adapters.embedded.search_index import InMemorySearchIndex
from agentmem.domain.conversations import ConversationRef, MessageDraft, TimeRange

from tests.integration.test_table_rebuild import ACCOUNT, NOW, rebuild, stores  # noqa: F401 (the fixture)

SAID = [("2026-01-05T10:00:00.000000Z", "The Lisbon office moves in spring."),
        ("2026-02-05T10:00:00.000000Z", "The Lisbon office moves on April 1st."),
        ("2026-02-25T10:00:00.000000Z", "Lisbon office: the move is delayed to May."),
        ("2026-03-01T10:00:00.000000Z", "Lunch in Porto on Friday.")]


def test_a_search_with_an_index_keeps_only_the_messages_of_the_window(stores: DynamoDBStores) -> None:  # noqa: F811
    ref = ConversationRef(ACCOUNT, "support", "u1", "moves")
    drafts = [MessageDraft("user", text, created_at=when) for when, text in SAID]
    stores.conversations.append(ref, drafts, now=NOW, surface="agent", thresholds=(10**9, 10**9))
    index = stores.conversations.index
    assert isinstance(index, InMemorySearchIndex)
    list(rebuild(stores, index).run())
    assert sorted(f["updated_at"] for f, _ in index._docs.values() if f["kind"] == "message") == [w for w, _ in SAID]

    def found(when: TimeRange | None) -> list[tuple[int, str]]:
        hits = stores.conversations.search_candidates(ACCOUNT, "support", "u1", ["lisbon", "office"], when=when)
        return sorted((h.message.seq, h.message.created_at) for h in hits)

    assert [seq for seq, _ in found(None)] == [1, 2, 3]
    february = TimeRange("2026-02-01T00:00:00.000000Z", "2026-03-01T00:00:00.000000Z")
    assert found(february) == [(2, SAID[1][0]), (3, SAID[2][0])]
    assert [seq for seq, _ in found(TimeRange(before="2026-02-05T10:00:00.000000Z"))] == [1]
    # a stale document (its time says February, the journal's says January) is checked against the journal
    doc_id = next(d for d, (f, _) in index._docs.items() if f.get("seq") == 1 and f["kind"] == "message")
    index._docs[doc_id][0]["updated_at"] = "2026-02-10T00:00:00.000000Z"
    assert [seq for seq, _ in found(february)] == [2, 3]
