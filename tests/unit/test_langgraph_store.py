"""``AgentmemStore`` (LangGraph's ``BaseStore`` on agentmem) against LangGraph's own ``InMemoryStore``: the same
random operations on both, side by side (Hypothesis), give the same items; and a graph whose node uses ``store``
runs the same with either. agentmem runs in-process on a fresh embedded data dir."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.client import Client, InProcessTransport
from agentmem.integrations.langgraph import AgentmemStore, entry_name
from agentmem.settings import Settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    mp = pytest.MonkeyPatch()
    mp.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    container = build_container(Settings(data_dir=tmp_path_factory.mktemp("store")))
    key = ensure_default_account(container)
    set_container(container)
    yield Client("http://in-process", key, transport=InProcessTransport(lambda_handler))
    set_container(None)
    mp.undo()


def fresh(client: Client) -> AgentmemStore:
    return AgentmemStore(client, memory=f"lg-{uuid.uuid4().hex[:12]}")


NAMESPACES = st.lists(st.sampled_from(["users", "42", "prefs", "Ana Müller", "a/b"]), min_size=1, max_size=3).map(
    tuple)
KEYS = st.sampled_from(["tone", "plan", "key with spaces", "ключ", "x" * 80])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text("abcxyz 🙂é", max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text("abc", max_size=4), children,
                                                                       max_size=3),
    max_leaves=8,
)
VALUES = st.dictionaries(st.sampled_from(["kind", "n", "text", "nested"]), JSON, max_size=4)
OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), NAMESPACES, KEYS, VALUES),
    st.tuples(st.just("delete"), NAMESPACES, KEYS),
    st.tuples(st.just("get"), NAMESPACES, KEYS),
    st.tuples(st.just("search"), NAMESPACES.map(lambda ns: ns[:1]), st.none() | st.fixed_dictionaries(
        {"kind": JSON})),
    st.tuples(st.just("namespaces"), st.none() | st.integers(1, 2)),
), min_size=1, max_size=12)


def observe(store: BaseStore, op: tuple[Any, ...]) -> Any:
    """What an operation shows of the store, in a form both stores give alike."""
    match op:
        case ("put", namespace, key, value):
            store.put(namespace, key, value)
            return None
        case ("delete", namespace, key):
            store.delete(namespace, key)
            return None
        case ("get", namespace, key):
            item = store.get(namespace, key)
            return None if item is None else (item.namespace, item.key, item.value)
        case ("search", prefix, filter):
            found = store.search(prefix, filter=filter, limit=100)
            # (a value's text with its keys sorted: equal dicts whatever order their keys were written in)
            return sorted((i.namespace, i.key, json.dumps(i.value, sort_keys=True)) for i in found)
        case ("namespaces", depth):
            if isinstance(store, InMemoryStore):
                # InMemoryStore still lists a namespace whose items were all deleted (it keeps the empty dict);
                # LangGraph's SQL stores list only namespaces that hold items, as AgentmemStore does
                held = {i.namespace for ns in store.list_namespaces(limit=1000) for i in store.search(ns, limit=1000)}
                return sorted({ns[:depth] if depth else ns for ns in held})
            return sorted(store.list_namespaces(max_depth=depth))
    raise AssertionError(op)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_the_same_operations_give_what_langgraphs_in_memory_store_gives(client: Client, ops: list[Any]) -> None:
    # Given LangGraph's InMemoryStore and an AgentmemStore on a fresh memory
    reference, store = InMemoryStore(), fresh(client)
    # When the same operations run on both, Then each shows the same items, namespaces and values
    for op in ops:
        assert observe(store, op) == observe(reference, op), (op, ops)


def test_items_keep_their_times_and_any_json_comes_back_equal(client: Client) -> None:
    store = fresh(client)
    value = {"text": "Ana prefers brief answers", "n": 3, "nested": {"list": [1, None, "é🙂"], "ok": True}}
    store.put(("users", "42"), "prefs", value)
    first = store.get(("users", "42"), "prefs")
    assert first is not None and first.value == value
    store.put(("users", "42"), "prefs", {**value, "n": 4})
    second = store.get(("users", "42"), "prefs")
    assert second is not None and second.value["n"] == 4
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    # and the entry agentmem holds is named from the namespace and key, in the store's memory
    assert client.memory(store.memory_name).read(entry_name(("users", "42"), "prefs")).version == 2


def test_search_with_a_query_is_agentmems_recall_narrowed_to_the_prefix(client: Client) -> None:
    store = fresh(client)
    store.put(("users", "42"), "billing", {"text": "Ana is on the Team plan, billed yearly."})
    store.put(("users", "42"), "tone", {"text": "Answer briefly, no jargon."})
    store.put(("users", "7"), "billing", {"text": "Bo is on the Team plan too."})
    hits = store.search(("users", "42"), query="team plan billing")
    assert [(h.namespace, h.key) for h in hits][:1] == [(("users", "42"), "billing")]
    assert all(h.namespace == ("users", "42") for h in hits)
    assert hits[0].score is not None


def test_a_nested_filter_matches_key_by_key_as_langgraphs_store_does(client: Client) -> None:
    reference, store = InMemoryStore(), fresh(client)
    for each in (reference, store):
        each.put(("prefs",), "tone", {"kind": {"style": "brief", "lang": "en"}, "tags": ["a", "b"]})
        each.put(("prefs",), "plan", {"kind": {"style": "long"}, "tags": ["a"]})
    for filter in ({"kind": {}}, {"kind": {"style": "brief"}}, {"kind": {"style": "long", "lang": "en"}},
                   {"tags": ["a", "b"]}, {"tags": ["a"]}):
        assert sorted(i.key for i in store.search(("prefs",), filter=filter)) == \
            sorted(i.key for i in reference.search(("prefs",), filter=filter)), filter


def test_pages_of_a_query_search_are_slices_of_its_whole_ranking(client: Client) -> None:
    # the store stops reading hits once a page is full: offset/limit/filter must still page the same ranking
    store = fresh(client)
    for n in range(8):
        store.put(("users", "42"), f"fact-{n}", {"text": f"Ana is on the Team plan, fact {n}.", "n": n})
        store.put(("users", "7"), f"fact-{n}", {"text": f"Bo is on the Team plan, fact {n}.", "n": n})
    whole = [(h.key, h.score) for h in store.search(("users", "42"), query="team plan", limit=100)]
    assert len(whole) == 8
    pages = [(h.key, h.score) for offset in range(0, 8, 3)
             for h in store.search(("users", "42"), query="team plan", offset=offset, limit=3)]
    assert pages == whole
    even = store.search(("users", "42"), query="team plan", filter={"n": {"$lt": 4}}, offset=1, limit=2)
    expected = [key for key, _ in whole if int(key.split("-")[1]) < 4][1:3]
    assert [h.key for h in even] == expected
    assert store.search(("users", "42"), query="team plan", offset=8, limit=3) == []


def test_a_graph_that_uses_the_store_runs_the_same_on_both(client: Client) -> None:
    class State(TypedDict):
        user: str
        said: str
        remembered: list[str]

    def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
        namespace = ("users", state["user"], "facts")
        store.put(namespace, f"fact-{len(store.search(namespace, limit=100))}", {"text": state["said"]})
        return {"remembered": sorted(item.value["text"] for item in store.search(namespace, limit=100))}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)

    def run(store: BaseStore) -> list[list[str]]:
        graph = builder.compile(store=store)
        return [graph.invoke({"user": "42", "said": said, "remembered": []})["remembered"]
                for said in ("I'm Ana.", "I'm on the Team plan.")]

    assert run(fresh(client)) == run(InMemoryStore()) == [["I'm Ana."], ["I'm Ana.", "I'm on the Team plan."]]
