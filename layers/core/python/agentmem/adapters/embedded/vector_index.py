"""The embedded backend's semantic index: vectors kept in the SQLite database, searched in process.

Every change of an entry or a journal message queues its row (``index_queue``, filled by triggers in the same
transaction as the change: no write path can forget). ``catch_up`` drains the queue: it reads each queued
row as it is *now* — an entry's current version, or nothing when it is gone, a checkpoint or expired — embeds
what changed (an unchanged text is not embedded again) and writes or removes its vector. Replaying the queue
is harmless and an older version can never overwrite a newer one, since only the current row is ever read.
A thread of the embedded backend runs ``catch_up`` continuously (``IndexWorker``), so a save is found by
meaning within moments; queries also drain a short queue first.

Vectors are grouped in *partitions* — one per layer of a memory, one per (agent, user) pair of a journal —
each held in memory as one float32 matrix once queried, and searched exactly (a matrix-vector product).
Each vector records the embedder that wrote it; vectors of another embedder are never compared
(``agentmem reindex`` rebuilds them).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...domain.models import ACCOUNT_LAYER
from ...observability import logger
from ...ports.embedder import Embedder
from ...ports.search_index import Filters, SearchHit, SearchIndex, check_filters, filter_values
from .database import Database

BATCH = 512
QUERY_CATCH_UP = 2000  # queued changes a query applies first; the worker takes a longer backlog


def entry_partition(account_id: str, memory: str, user_key: str) -> str:
    return f"e\x1f{account_id}\x1f{memory}\x1f{user_key}"


def message_partition(account_id: str, agent: str, user_key: str) -> str:
    return f"m\x1f{account_id}\x1f{agent}\x1f{user_key}"


def entry_text(name: str, description: str, content: str) -> str:
    """What an entry's vector stands for: its name's words, its description and its content."""
    words = name.replace("-", " ").replace("_", " ").replace(".", " ")
    return f"{words}: {description}\n{content}"


def message_text(content: str, tool_name: str | None) -> str:
    return f"{content}\n{tool_name}" if tool_name else content


@dataclass
class _Partition:
    sources: list[int]
    fields: list[dict[str, Any]]
    matrix: np.ndarray[Any, np.dtype[np.float32]]


class SqliteVectorIndex(SearchIndex):
    def __init__(self, db: Database, embedder: Embedder) -> None:
        self.db = db
        self.embedder = embedder
        self._partitions: dict[str, _Partition] = {}
        self._lock = threading.Lock()  # the in-memory partitions
        self._draining = threading.Lock()  # one catch-up at a time

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    def setup(self) -> None:
        """The tables come with the database's migrations."""

    # --- the port's writes (the queue is the normal way in; these serve reindexing and tests) ----------------
    def upsert(self, doc_id: str, fields: Mapping[str, Any], vector: Sequence[float]) -> None:
        raise NotImplementedError("the embedded index is written from the store's change queue (catch_up)")

    def delete(self, doc_id: str) -> None:
        raise NotImplementedError("the embedded index is written from the store's change queue (catch_up)")

    # --- catching up with the store ----------------------------------------------------------------------------
    def pending(self) -> int:
        return int(self.db.connection().execute("SELECT count(*) FROM index_queue").fetchone()[0])

    def catch_up(self, limit: int | None = None, *, wait: bool = True) -> int:
        """Apply queued changes (at most ``limit``; all when None); how many queue items were applied.
        ``wait=False`` returns 0 at once when another thread is catching up."""
        if not self._draining.acquire(blocking=wait):
            return 0
        try:
            done = 0
            while limit is None or done < limit:
                applied = self._apply_batch(BATCH if limit is None else min(BATCH, limit - done))
                if not applied:
                    break
                done += applied
            return done
        finally:
            self._draining.release()

    def _apply_batch(self, size: int) -> int:
        conn = self.db.connection()
        queued = conn.execute("SELECT id, kind, source FROM index_queue ORDER BY id LIMIT ?", (size,)).fetchall()
        if not queued:
            return 0
        last = queued[-1][0]
        entries = sorted({r[2] for r in queued if r[1] == "entry"})
        messages = sorted({r[2] for r in queued if r[1] == "message"})
        docs = self._entry_docs(entries) + self._message_docs(messages)
        present = {(kind, source) for kind, source, *_ in docs}
        known = self._known_hashes(entries, messages)
        name = self.embedder.name
        fresh = [d for d in docs if known.get((d[0], d[1])) != (name, d[3])]
        vectors = self.embedder.embed([d[4] for d in fresh]) if fresh else []
        gone = [("entry", s) for s in entries if ("entry", s) not in present]
        gone += [("message", s) for s in messages if ("message", s) not in present]
        with self.db.write() as write:
            for (kind, source, partition, text_hash, _, fields), vector in zip(fresh, vectors, strict=True):
                blob = np.asarray(vector, dtype=np.float32).tobytes()
                write.execute(
                    "INSERT OR REPLACE INTO vectors (kind, source, partition, embedder, text_hash, fields, vector) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (kind, source, partition, name, text_hash, json.dumps(fields), blob),
                )
            for kind, source in gone:
                write.execute("DELETE FROM vectors WHERE kind=? AND source=?", (kind, source))
            write.execute("DELETE FROM index_queue WHERE id <= ?", (last,))
        self._forget_partitions({d[2] for d in fresh} | self._partitions_of(gone))
        return len(queued)

    def _entry_docs(self, rowids: Sequence[int]) -> list[tuple[str, int, str, str, str, dict[str, Any]]]:
        if not rowids:
            return []
        marks = ",".join("?" * len(rowids))
        rows = self.db.connection().execute(
            "SELECT rowid, account_id, memory, layer_user, name, description, content, importance, updated_at, "
            f"expires_at FROM entries WHERE rowid IN ({marks}) AND conversation IS NULL", tuple(rowids),
        ).fetchall()
        docs = []
        for r in rows:
            text = entry_text(r["name"], r["description"], r["content"])
            fields = {"kind": "entry", "account": r["account_id"], "memory": r["memory"], "user": r["layer_user"],
                      "name": r["name"], "importance": r["importance"], "updated_at": r["updated_at"]}
            docs.append(("entry", int(r["rowid"]), entry_partition(r["account_id"], r["memory"], r["layer_user"]),
                         _hash(text), text, fields))
        return docs

    def _message_docs(self, ids: Sequence[int]) -> list[tuple[str, int, str, str, str, dict[str, Any]]]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.db.connection().execute(
            "SELECT m.id, c.account_id, c.agent, c.user_key, c.key, m.seq, m.role, m.content, m.tool_name "
            f"FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.id IN ({marks})", tuple(ids),
        ).fetchall()
        docs = []
        for r in rows:
            text = message_text(r["content"], r["tool_name"])
            if not text.strip():
                continue  # a tool row without words: nothing to find it by
            fields = {"kind": "message", "account": r["account_id"], "agent": r["agent"], "user": r["user_key"],
                      "conversation": r["key"], "seq": r["seq"], "role": r["role"]}
            docs.append(("message", int(r["id"]), message_partition(r["account_id"], r["agent"], r["user_key"]),
                         _hash(text), text, fields))
        return docs

    def _known_hashes(self, entries: Sequence[int], messages: Sequence[int]) -> dict[tuple[str, int], tuple[str, str]]:
        known: dict[tuple[str, int], tuple[str, str]] = {}
        conn = self.db.connection()
        for kind, sources in (("entry", entries), ("message", messages)):
            if sources:
                marks = ",".join("?" * len(sources))
                for row in conn.execute(
                    f"SELECT source, embedder, text_hash FROM vectors WHERE kind=? AND source IN ({marks})",
                    (kind, *sources),
                ):
                    known[(kind, int(row[0]))] = (row[1], row[2])
        return known

    def _partitions_of(self, gone: Sequence[tuple[str, int]]) -> set[str]:
        with self._lock:
            wanted = set(gone)
            return {name for name, part in self._partitions.items()
                    if any((f["kind"], s) in wanted for s, f in zip(part.sources, part.fields, strict=True))}

    def _forget_partitions(self, names: set[str]) -> None:
        with self._lock:
            for name in names:
                self._partitions.pop(name, None)

    # --- queries ---------------------------------------------------------------------------------------------------
    def query(self, text: str | None, vector: Sequence[float] | None, filters: Filters, k: int) -> list[SearchHit]:
        """The nearest ``k`` of the partitions the filters name (``kind`` and ``account``, then ``memory`` and
        ``user`` for entries or ``agent`` and ``user`` for messages); other filters apply to the hits' fields.
        The embedded backend's keyword side is the store's own full-text index, so ``text`` is not used."""
        check_filters(filters)
        if vector is None or k <= 0:
            return []
        self.catch_up(QUERY_CATCH_UP)  # what was just written is found by meaning too
        if len(vector) != self.dimension:
            raise ValueError(f"a vector has {self.dimension} dimensions, not {len(vector)}")
        names = _partition_names(filters)
        parts = [p for p in (self._partition(n) for n in names) if p is not None and p.sources]
        if not parts:
            return []
        rest = {f: set(filter_values(v)) for f, v in filters.items()
                if f not in ("kind", "account", "memory", "agent", "user", "embedder")}
        query = np.asarray(vector, dtype=np.float32)
        hits: list[tuple[float, str, dict[str, Any]]] = []
        for part in parts:
            scores = part.matrix @ query
            if rest:
                keep = np.array([all(str(f.get(n)) in vals for n, vals in rest.items()) for f in part.fields])
                scores = np.where(keep, scores, -np.inf)
            take = min(k, len(scores))
            best = np.argpartition(-scores, take - 1)[:take]
            for i in best:
                if np.isfinite(scores[i]):
                    hits.append((float(scores[i]), f"{part.fields[i]['kind']}:{part.sources[i]}", part.fields[i]))
        hits.sort(key=lambda h: (-h[0], h[1]))
        return [SearchHit(doc_id, score, fields) for score, doc_id, fields in hits[:k]]

    def _partition(self, name: str) -> _Partition | None:
        with self._lock:
            cached = self._partitions.get(name)
        if cached is not None:
            return cached
        rows = self.db.connection().execute(
            "SELECT source, fields, vector FROM vectors WHERE partition=? AND embedder=? ORDER BY source",
            (name, self.embedder.name),
        ).fetchall()
        matrix = (np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(len(rows), self.dimension)
                  if rows else np.zeros((0, self.dimension), dtype=np.float32))
        part = _Partition([int(r[0]) for r in rows], [json.loads(r[1]) for r in rows], matrix)
        with self._lock:
            self._partitions[name] = part
        return part

    def vectors(self) -> int:
        """How many vectors the current embedder wrote (the reindex progress and tests)."""
        return int(self.db.connection().execute(
            "SELECT count(*) FROM vectors WHERE embedder=?", (self.embedder.name,)).fetchone()[0])

    def reindex(self) -> int:
        """Queue every entry and message again and forget vectors of other embedders: after a change of embedder
        or dimension. ``catch_up`` (or the worker) then rebuilds; answers how many rows were queued."""
        with self.db.write() as conn:
            conn.execute("DELETE FROM vectors WHERE embedder != ?", (self.embedder.name,))
            conn.execute("INSERT INTO index_queue (kind, source) SELECT 'entry', rowid FROM entries "
                         "WHERE conversation IS NULL")
            conn.execute("INSERT INTO index_queue (kind, source) SELECT 'message', id FROM messages")
            queued = int(conn.execute("SELECT count(*) FROM index_queue").fetchone()[0])
        self._forget_partitions(set(self._partitions))
        return queued


def _partition_names(filters: Filters) -> list[str]:
    kinds = filter_values(filters.get("kind", []))
    accounts = filter_values(filters.get("account", []))
    users = filter_values(filters.get("user", [ACCOUNT_LAYER]))
    names = []
    for kind in kinds:
        scopes = filter_values(filters.get("memory" if kind == "entry" else "agent", []))
        for account in accounts:
            for scope in scopes:
                for user in users:
                    names.append(entry_partition(account, scope, user) if kind == "entry"
                                 else message_partition(account, scope, user))
    return names


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class IndexWorker:
    """The embedded backend's indexer: a daemon thread that keeps the vector index caught up with the store."""

    def __init__(self, index: SqliteVectorIndex, *, idle_s: float = 0.05) -> None:
        self.index = index
        self.idle_s = idle_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="agentmem-indexer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                applied = self.index.catch_up(BATCH * 4)
            except Exception:  # a bad moment (a locked database, a failing embedder): try again shortly
                logger.exception("the semantic indexer could not catch up")
                applied = 0
            if not applied:
                self._stop.wait(self.idle_s)
