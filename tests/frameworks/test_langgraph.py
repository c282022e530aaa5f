"""LangGraph's latest release beside agentmem: a graph whose node remembers through ``store`` runs on
``AgentmemStore`` over HTTP (a real ``agentmem serve``) as on LangGraph's own ``InMemoryStore``."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

from agentmem.client import Client
from agentmem.integrations.langgraph import AgentmemStore
from conftest import Served
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore


class State(TypedDict):
    user: str
    said: str
    remembered: list[str]


def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
    namespace = ("users", state["user"], "facts")
    store.put(namespace, f"fact-{len(store.search(namespace, limit=100))}", {"text": state["said"]})
    return {"remembered": sorted(item.value["text"] for item in store.search(namespace, limit=100))}


def run(store: BaseStore) -> list[list[str]]:
    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    graph = builder.compile(store=store)
    return [graph.invoke({"user": "42", "said": said, "remembered": []})["remembered"]
            for said in ("I'm Ana.", "I'm on the Team plan.")]


def test_a_graph_remembers_through_agentmem_as_through_langgraphs_own_store(served: Served) -> None:
    with Client(served.base_url, served.key) as client:
        store = AgentmemStore(client, memory=f"lg-{uuid.uuid4().hex[:8]}")
        assert run(store) == run(InMemoryStore()) == [["I'm Ana."], ["I'm Ana.", "I'm on the Team plan."]]
