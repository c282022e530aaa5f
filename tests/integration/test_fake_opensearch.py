"""The fake OpenSearch's own rules for nested fields (``fake_opensearch.py``): the mapping and documents it takes,
the ``nested`` query as OpenSearch evaluates it (score modes, inner hits, a k-NN on a nested vector) and the
malformed bodies it refuses, as the real service would."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_opensearch import FakeOpenSearch

KNN = {"type": "knn_vector", "dimension": 2,
       "method": {"name": "hnsw", "engine": "faiss", "space_type": "innerproduct"}}
MAPPING = {"dynamic": "strict", "properties": {
    "owner": {"type": "keyword"},
    "vector": KNN,
    "parts": {"type": "nested", "properties": {"note": {"type": "text", "analyzer": "english"},
                                               "start": {"type": "long"}, "vector": KNN}},
}}


def call(fake: FakeOpenSearch, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    if isinstance(body, list):
        raw = "".join(json.dumps(line) + "\n" for line in body).encode()
    else:
        raw = json.dumps(body).encode() if body is not None else b""
    return fake.answer(method, path, raw)


@pytest.fixture
def fake() -> FakeOpenSearch:
    state = FakeOpenSearch()
    assert call(state, "PUT", "/t", {"mappings": MAPPING})[0] == 200
    docs = [
        {"owner": "ana", "vector": [1.0, 0.0], "parts": [
            {"note": "refund policy", "start": 0, "vector": [0.0, 1.0]},
            {"note": "refund refund window days", "start": 10, "vector": [0.6, 0.8]},
            {"note": "shipping", "start": 20, "vector": [1.0, 0.0]}]},
        {"owner": "bob", "vector": [0.0, 1.0], "parts": [{"note": "refund", "start": 0, "vector": [0.8, 0.6]}]},
        {"owner": "ana", "vector": [0.6, 0.8]},
    ]
    status, answer = call(state, "POST", "/t/_bulk", [line for doc in docs for line in ({"index": {}}, doc)])
    assert status == 200 and not answer["errors"], answer
    return state


def search(fake: FakeOpenSearch, body: dict[str, Any]) -> tuple[int, Any]:
    return call(fake, "POST", "/t/_search", body)


def owners(fake: FakeOpenSearch, answer: Any) -> list[tuple[str, float]]:
    docs = fake.docs("t")
    return [(docs[h["_id"]]["owner"], round(h["_score"], 4)) for h in answer["hits"]["hits"]]


@pytest.mark.parametrize(("mode", "ana"), [("max", 2.0), ("avg", 1.5), ("sum", 3.0), ("min", 1.0), ("none", 0.0)])
def test_a_nested_query_scores_the_parent_by_its_matching_objects(fake: FakeOpenSearch, mode: str, ana: float) -> None:
    # "refund" and "window" match ana's first two parts (one word, two words) and bob's only one (one word)
    status, answer = search(fake, {"query": {"nested": {
        "path": "parts", "score_mode": mode,
        "query": {"multi_match": {"query": "refund window", "fields": ["parts.note"]}}}}})
    assert status == 200, answer
    assert dict(owners(fake, answer)) == {"ana": ana, "bob": 0.0 if mode == "none" else 1.0}


def test_inner_hits_list_the_matching_objects_best_first_with_their_offsets(fake: FakeOpenSearch) -> None:
    status, answer = search(fake, {"_source": False, "query": {"nested": {
        "path": "parts", "score_mode": "max",
        "query": {"multi_match": {"query": "refund window", "fields": ["parts.note"]}},
        "inner_hits": {"size": 1, "_source": False, "fields": ["parts.start"]}}}})
    assert status == 200, answer
    first = answer["hits"]["hits"][0]
    (inner,) = first["inner_hits"]["parts"]["hits"]["hits"]
    assert inner["_nested"] == {"field": "parts", "offset": 1}
    assert inner["fields"] == {"parts.start": [10]} and "_source" not in inner
    assert first["inner_hits"]["parts"]["hits"]["total"]["value"] == 2
    # by default: three at most, each with its object as _source
    _, answer = search(fake, {"query": {"nested": {"path": "parts", "query": {"match_all": {}}, "inner_hits": {}}}})
    hits = {fake.docs("t")[h["_id"]]["owner"]: h["inner_hits"]["parts"]["hits"]["hits"] for h in answer["hits"]["hits"]}
    assert [h["_nested"]["offset"] for h in hits["ana"]] == [0, 1, 2]
    assert hits["bob"][0]["_source"] == {"note": "refund", "start": 0, "vector": [0.8, 0.6]}


def test_a_knn_on_a_nested_vector_answers_the_k_nearest_parents_each_by_its_nearest_object(
    fake: FakeOpenSearch,
) -> None:
    body = {"query": {"nested": {"path": "parts", "score_mode": "max", "query": {"knn": {"parts.vector": {
        "vector": [1.0, 0.0], "k": 2}}}, "inner_hits": {"_source": False}}}}
    status, answer = search(fake, body)
    assert status == 200, answer
    # ana's third part (ip 1: score 2) and bob's only one (ip 0.8: 1.8); the third document has no parts
    assert owners(fake, answer) == [("ana", 2.0), ("bob", 1.8)]
    offsets = [[i["_nested"]["offset"] for i in h["inner_hits"]["parts"]["hits"]["hits"]]
               for h in answer["hits"]["hits"]]
    assert offsets == [[2], [0]]
    # k = 1: one parent; a filter on the parent's fields pre-filters
    body["query"]["nested"]["query"]["knn"]["parts.vector"].update(k=1, filter={"term": {"owner": "bob"}})
    _, answer = search(fake, body)
    assert owners(fake, answer) == [("bob", 1.8)]


def test_an_unmapped_path_is_an_error_unless_ignored(fake: FakeOpenSearch) -> None:
    query = {"nested": {"path": "pieces", "query": {"match_all": {}}}}
    status, answer = search(fake, {"query": query})
    assert (status, answer["error"]["type"]) == (400, "query_shard_exception")
    status, answer = search(fake, {"query": {"nested": {**query["nested"], "ignore_unmapped": True}}})
    assert status == 200 and answer["hits"]["hits"] == []
    # ... and inside a bool the other clause still answers
    status, answer = search(fake, {"query": {"bool": {"should": [
        {"knn": {"vector": {"vector": [1.0, 0.0], "k": 1}}},
        {"nested": {**query["nested"], "ignore_unmapped": True}}], "minimum_should_match": 1}}})
    assert status == 200 and len(answer["hits"]["hits"]) == 1


@pytest.mark.parametrize("body", [
    {"nested": {"path": "owner", "query": {"match_all": {}}}},  # not a nested field
    {"nested": {"path": "parts"}},  # no query
    {"nested": {"path": "parts", "query": {"match_all": {}}, "score_mode": "best"}},
    {"nested": {"path": "parts", "query": {"match_all": {}}, "ignore_unmapped": "yes"}},
    {"nested": {"path": "parts", "query": {"match_all": {}}, "boosted": 2}},
    {"nested": {"path": "parts", "query": {"match_all": {}}, "inner_hits": {"sort": ["start"]}}},
    {"nested": {"path": "parts", "query": {"match_all": {}}, "inner_hits": {"fields": ["owner"]}}},
    {"nested": {"path": "parts", "query": {"match_all": {}}, "inner_hits": {"size": -1}}},
    {"knn": {"parts.vector": {"vector": [1.0, 0.0], "k": 1}}},  # a nested vector outside a nested query
    {"nested": {"path": "parts", "query": {"knn": {"parts.vector": {"vector": [1.0], "k": 1}}}}},  # dimension
])
def test_malformed_nested_queries_are_refused(fake: FakeOpenSearch, body: dict[str, Any]) -> None:
    status, answer = search(fake, {"query": body})
    assert status == 400, answer


def test_nested_mappings_and_documents_are_checked(fake: FakeOpenSearch) -> None:
    # a nested field with an unknown parameter, or an unknown type inside, is refused
    assert call(fake, "PUT", "/u", {"mappings": {"properties": {"p": {"type": "nested", "store": True}}}})[0] == 400
    assert call(fake, "PUT", "/u", {"mappings": {"properties": {"p": {"type": "nested", "properties": {
        "x": {"type": "geo_point"}}}}}})[0] == 400
    # a nested field can be added to an index that lacks it; an existing field cannot become nested
    assert call(fake, "PUT", "/t/_mapping", {"properties": {"more": {"type": "nested", "properties": {
        "start": {"type": "long"}}}}})[0] == 200
    assert call(fake, "PUT", "/t/_mapping", {"properties": {"owner": {"type": "nested"}}})[0] == 400
    # documents: a field the nested mapping lacks (strict), a vector of another dimension, a value for an object
    for bad in ({"parts": [{"colour": "red"}]}, {"parts": [{"vector": [1.0, 0.0, 0.0]}]}, {"parts": ["red"]}):
        _, answer = call(fake, "POST", "/t/_bulk", [{"index": {}}, bad])
        assert answer["errors"] and answer["items"][0]["index"]["status"] == 400, bad
