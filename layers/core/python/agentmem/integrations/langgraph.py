"""LangGraph's long-term memory on agentmem: ``AgentmemStore``, a ``BaseStore`` (``agentmem[langgraph]``).

    from agentmem import Client
    from agentmem.integrations.langgraph import AgentmemStore

    store = AgentmemStore(Client(), memory="langgraph")          # the memory is created on first use
    graph = builder.compile(store=store)                          # nodes get it as `store`
    store.put(("users", "42", "prefs"), "tone", {"style": "brief"})
    store.search(("users", "42"), query="how do they like answers")   # agentmem's hybrid recall

How namespaces map: every item of the store is one entry of ONE agentmem memory (``memory=``), in one layer of
it (the account's, or ``user=``'s: a store per user keeps users apart as agentmem's layers do). An item's
namespace and key are kept whole inside the entry (its content is ``{"namespace": [...], "key": ..., "value":
...}`` as JSON, so any JSON value comes back equal); the entry's name is derived from them (``lg-`` and 40 hex
digits of their BLAKE2b digest: agentmem's names are 1–64 of ``a-z0-9._-``, LangGraph's keys anything). Its
``created_at``/``updated_at`` are the entry's. ``search(query=...)`` is the memory's hybrid recall (meaning and
words), narrowed to the namespace prefix and ``filter``; without a query, the items under the prefix, newest
first. ``filter`` matches values as LangGraph's stores do (equality, ``$eq``/``$ne``/``$gt``/``$gte``/
``$lt``/``$lte``, and a nested object key by key: ``{"kind": {"a": 1}}`` matches ``{"kind": {"a": 1, "b": 2}}``).
A ``ttl`` (minutes) sets the entry's ``expires_at``; reads do not extend it
(``supports_ttl`` is false: LangGraph refreshes nothing).

Only the public SDK is used (``Client``): ``abatch`` runs the sync calls in a worker thread (``async_client=`` is
accepted and kept, not used yet).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ..client import Client, Entry, NotFound

SEARCH_MAX = 100  # what one agentmem search returns at most


def entry_name(namespace: tuple[str, ...], key: str) -> str:
    """The agentmem entry name of an item: ``lg-`` and 40 hex digits of its namespace and key."""
    digest = hashlib.blake2b(json.dumps([list(namespace), key]).encode("utf-8"), digest_size=20).hexdigest()
    return f"lg-{digest}"


def _when(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _item_of(entry: Entry) -> Item | None:
    """The store's item an entry holds (``None``: an entry this store did not write)."""
    try:
        envelope = json.loads(entry.content or "")
    except ValueError:
        return None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("value"), dict):
        return None
    return Item(value=envelope["value"], key=str(envelope["key"]), namespace=tuple(envelope["namespace"]),
                created_at=_when(entry.created_at), updated_at=_when(entry.updated_at))


def _compare(actual: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping) and condition and all(str(k).startswith("$") for k in condition):
        checks = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b, "$gt": lambda a, b: a > b,
                  "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}
        try:
            return all(checks[op](actual, value) for op, value in condition.items())
        except (KeyError, TypeError):
            return False
    if isinstance(condition, Mapping):  # a nested object matches as LangGraph's stores match it: key by key
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in condition.items())
    if isinstance(condition, list | tuple):
        return (isinstance(actual, list | tuple) and len(actual) == len(condition)
                and all(_compare(a, c) for a, c in zip(actual, condition, strict=True)))
    return bool(actual == condition)


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` passes a LangGraph ``filter``."""
    return all(_compare(value.get(key), condition) for key, condition in (filter or {}).items())


def _namespace_matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


class AgentmemStore(BaseStore):
    """A LangGraph ``BaseStore`` whose items are entries of one agentmem memory (see the module's docstring)."""

    supports_ttl = False

    def __init__(self, client: Client | None = None, *, memory: str = "langgraph", user: str | None = None,
                 async_client: Any = None) -> None:
        self.client = client if client is not None else Client()
        self.memory_name = memory
        self.user = user
        self.async_client = async_client
        self._memory = self.client.memory(memory, user=user)
        self._ready = False

    # --- BaseStore ------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        return await asyncio.to_thread(self.batch, listed)

    # --- the operations ---------------------------------------------------------------------------

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"unknown store operation {type(op).__name__}")

    def _ensure(self) -> None:
        if not self._ready:
            self.client.memories.create(self.memory_name, user=self.user)
            self._ready = True

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        try:
            entry = self._memory.read(entry_name(namespace, key))
        except NotFound:
            return None
        return _item_of(entry)

    def _put(self, op: PutOp) -> None:
        self._ensure()
        name = entry_name(op.namespace, op.key)
        if op.value is None:
            with contextlib.suppress(NotFound):
                self._memory.forget(name)
            return
        content = json.dumps({"namespace": list(op.namespace), "key": op.key, "value": op.value},
                             ensure_ascii=False, sort_keys=True)
        description = ("LangGraph item " + "/".join(op.namespace) + ": " + op.key)[:200]
        expires = None
        if op.ttl is not None:
            expires = (datetime.now(UTC) + timedelta(minutes=op.ttl)).isoformat().replace("+00:00", "Z")
        self._memory.save(name, content, description=description, expires_at=expires,
                          clear_expiry=expires is None)

    def _all(self) -> list[Item]:
        self._ensure()
        items = [_item_of(self._memory.read(entry.name)) for entry in self._memory.iter_entries()
                 if entry.name.startswith("lg-")]
        return [item for item in items if item is not None]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = op.namespace_prefix
        found: Iterable[tuple[Item | None, float | None]]
        if op.query:
            self._ensure()
            hits = self._memory.search(op.query, limit=SEARCH_MAX)
            found = ((_item_of(hit), hit.score) for hit in hits)  # parsed only until the page is full
        else:
            found = [(item, None) for item in sorted(self._all(), key=lambda i: i.updated_at, reverse=True)]
        wanted = op.offset + op.limit
        kept: list[SearchItem] = []
        for item, score in found:
            if len(kept) >= wanted:
                break
            if item is not None and item.namespace[: len(prefix)] == prefix and matches(item.value, op.filter):
                kept.append(SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at,
                                       score))
        return kept[op.offset :]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        namespaces = {item.namespace for item in self._all()}
        if op.match_conditions:
            namespaces = {ns for ns in namespaces if all(_namespace_matches(ns, c) for c in op.match_conditions)}
        if op.max_depth is not None:
            namespaces = {ns[: op.max_depth] for ns in namespaces}
        ordered = sorted(namespaces)
        return ordered[op.offset : op.offset + op.limit]


__all__ = ["AgentmemStore", "entry_name", "matches"]
