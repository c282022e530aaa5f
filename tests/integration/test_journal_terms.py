"""The embedded journal's search leaves out words so common that scoring them costs more than they tell
(adapters/embedded/conversations.py ``_telling``), once the journal is large."""

from __future__ import annotations

from pathlib import Path

import pytest
from agentmem.adapters.embedded import conversations as embedded
from agentmem.bootstrap import build_container
from agentmem.domain.conversations import MessageDraft
from agentmem.services.agents import AgentSettings
from agentmem.settings import Settings


def test_a_word_most_messages_hold_is_left_out_while_rarer_ones_remain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedded, "SEARCH_TERM_MIN_MESSAGES", 50)
    container = build_container(Settings(data_dir=tmp_path, embedder="none"))
    _, secret = container.keys.create_account("acme")
    account = container.keys.authenticate("Bearer " + secret)
    container.agents.put(account, "support", AgentSettings())
    # Given 120 messages that all mention the meeting, one of which is about the dentist
    drafts = [MessageDraft("user", f"The meeting number {n} is on {'the dentist' if n == 77 else 'Monday'}.")
              for n in range(120)]
    for start in range(0, 120, 40):
        container.conversations.append(account, "support", f"c{start}", drafts[start:start + 40], user="ana")
    store = container.stores.conversations
    assert isinstance(store, embedded.SqliteConversationStore)
    # Then "meeting" is not worth scoring beside "dentist", and two common words are both kept, rarest first
    assert store._telling(["meeting", "dentist"]) == (["dentist"], False)
    assert store._telling(["meeting", "monday"]) == (["monday", "meeting"], True)
    # and the search finds the dentist message first, by the word that tells
    hits = store.search_candidates(account.account_id, "support", "ana", ["meeting", "dentist"], limit=10)
    assert [(h.conversation, h.message.seq) for h in hits] == [("c40", 38)]
    # and a query of common words only finds the messages holding them all
    both = store.search_candidates(account.account_id, "support", "ana", ["meeting", "monday"], limit=200)
    assert len(both) == 119 and ("c40", 38) not in [(h.conversation, h.message.seq) for h in both]
    # while a small journal scores every word
    monkeypatch.setattr(embedded, "SEARCH_TERM_MIN_MESSAGES", 1_000)
    assert store._telling(["meeting", "dentist"]) == (["meeting", "dentist"], False)
