"""The embedded semantic index and its deterministic hashing embedder (no model, no download)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from agentmem.adapters.embedded.embedder import HashingEmbedder
from agentmem.adapters.embedded.search_index import InMemorySearchIndex
from agentmem.ports.search_index import entry_doc_id

EMBEDDER = HashingEmbedder(64)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def entry(name: str, description: str, content: str, *, memory: str = "company", user: str = "") -> dict[str, Any]:
    return {
        "kind": "entry", "account": "acct_1", "memory": memory, "user": user, "name": name,
        "description": description, "content": content, "category": "note", "importance": 0.5, "version": 1,
    }


@pytest.fixture
def index() -> InMemorySearchIndex:
    index = InMemorySearchIndex(EMBEDDER.dimension)
    for fields in [
        entry("refund-policy", "How refunds work", "Refunds are paid back within 14 days of the return."),
        entry("shipping", "Shipping times", "Parcels leave the warehouse in two working days."),
        entry("ana-diet", "Ana's food preferences", "Ana is vegetarian and allergic to peanuts.", user="ana"),
        entry("bob-diet", "Bob's food preferences", "Bob eats everything.", user="bob"),
        entry("holiday", "Office holidays", "Closed on public holidays.", memory="hr"),
    ]:
        doc_id = entry_doc_id("acct_1", fields["memory"], fields["user"] or None, fields["name"])
        text = f"{fields['name']}\n{fields['description']}\n{fields['content']}"
        index.upsert(doc_id, fields, EMBEDDER.embed_one(text))
    return index


def test_the_embedder_is_deterministic_across_processes_and_gives_unit_vectors() -> None:
    vector = EMBEDDER.embed_one("Refunds are paid back within 14 days")
    assert len(vector) == 64
    assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0)
    code = (
        "import json; from agentmem.adapters.embedded.embedder import HashingEmbedder;"
        "print(json.dumps(HashingEmbedder(64).embed_one('Refunds are paid back within 14 days')))"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(other) == vector
    assert EMBEDDER.embed_one("   ") == [0.0] * 64


def test_texts_sharing_words_and_stems_are_closer_than_unrelated_ones() -> None:
    refund, refunds, parcel = EMBEDDER.embed(["refund", "refunds", "parcel delivery"])
    assert cosine(refund, refunds) > 0.5
    assert cosine(refund, refunds) > cosine(refund, parcel)


def test_a_vector_query_finds_the_nearest_entries_first(index: InMemorySearchIndex) -> None:
    hits = index.query(None, EMBEDDER.embed_one("when are refunds paid"), {"account": "acct_1"}, 2)
    assert hits[0].doc_id == "entry/acct_1/company//refund-policy"
    assert len(hits) == 2
    assert hits[0].score >= hits[1].score
    assert hits[0].fields["description"] == "How refunds work"


def test_filters_keep_to_one_memory_and_the_layers_asked_for(index: InMemorySearchIndex) -> None:
    vector = EMBEDDER.embed_one("food preferences")
    ana = index.query(None, vector, {"memory": "company", "user": ["", "ana"]}, 10)
    assert "entry/acct_1/company/ana/ana-diet" in {hit.doc_id for hit in ana}
    assert all(hit.fields["user"] in ("", "ana") for hit in ana)
    assert all(hit.fields["memory"] == "company" for hit in ana)
    assert index.query(None, vector, {"account": "acct_2"}, 10) == []
    assert [h.doc_id for h in index.query(None, vector, {"name": "holiday"}, 10)] == ["entry/acct_1/hr//holiday"]


def test_a_text_query_weighs_name_and_description_above_content(index: InMemorySearchIndex) -> None:
    returns = entry("returns", "Returns desk", "Ask about a refund here.")
    index.upsert("entry/acct_1/company//returns", returns, [0.0] * 64)
    hits = index.query("refund", None, {}, 10)
    # "refund-policy" has the word (as a prefix of "refunds") in its name, description and content
    assert [hit.doc_id for hit in hits] == ["entry/acct_1/company//refund-policy", "entry/acct_1/company//returns"]


def test_upsert_replaces_and_delete_removes(index: InMemorySearchIndex) -> None:
    doc_id = "entry/acct_1/company//shipping"
    changed = entry("shipping", "Shipping times", "Parcels now leave the same day.") | {"version": 2}
    index.upsert(doc_id, changed, EMBEDDER.embed_one("same day shipping"))
    assert (index.get(doc_id) or {})["version"] == 2
    assert len(index) == 5
    index.delete(doc_id)
    index.delete(doc_id)  # absent: not an error
    assert index.get(doc_id) is None
    assert doc_id not in {hit.doc_id for hit in index.query("shipping", None, {}, 10)}


def test_what_the_mapping_does_not_know_is_refused(index: InMemorySearchIndex) -> None:
    with pytest.raises(ValueError, match="secret"):
        index.upsert("x", {"secret": "no"}, [0.0] * 64)
    with pytest.raises(ValueError, match="dimensions"):
        index.upsert("x", entry("x", "x", "x"), [0.0] * 3)
    with pytest.raises(ValueError, match="keyword"):
        index.query("x", None, {"content": "x"}, 10)
    assert index.query("refund", None, {}, 0) == []
