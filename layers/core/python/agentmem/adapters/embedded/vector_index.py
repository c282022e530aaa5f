"""The embedded backend's semantic index: vectors kept in the SQLite database, searched in process.

Every change of an entry or a journal message queues its row (``index_queue``, filled by triggers in the same
transaction as the change: no write path can forget). ``catch_up`` drains the queue: it reads each queued
row as it is *now* — an entry's current version, or nothing when it is gone, a checkpoint or expired — embeds
what changed (an unchanged text is not embedded again) and writes or removes its vector. Replaying the queue
is harmless and an older version can never overwrite a newer one, since only the current row is ever read.
A thread of ``agentmem serve`` runs ``catch_up`` continuously (``IndexWorker``), and a query first applies
what is queued, so a save is found by meaning at once in process and within moments on a busy server. A
conversation searched while some of its messages are still queued is embedded next, before the rest of the
queue (``asked_first.py``): the one an agent works in during a large import is found by meaning within moments.

Vectors are grouped in *partitions* — one per layer of a memory, one per (agent, user) pair of a journal.
A partition is loaded into memory on its first query and kept up to date from the database from then on: new
vectors by their id, removed ones from the log a trigger writes as each leaves ``vectors`` (``vector_removals``),
so every process on the data dir (the workers of ``agentmem serve --workers N``, ``agentmem reindex``) holds
what the database holds, whichever of them wrote it. One ``catch_up`` runs at a time across those processes
(a lock on a file beside the database): two embedding the same queued change could otherwise let the older
text's vector land last.

- up to ``ANN_THRESHOLD`` vectors, a float32 matrix searched exactly (one matrix-vector product: ~3 ms for
  50,000 vectors of 256 dimensions); beside the indexer thread, a partition that grows past it keeps its
  matrix until the indexer has built its graph without the lock (``build_graphs``);
- above it, an HNSW graph (usearch, half-precision vectors, inner product) answers the nearest neighbours in
  well under a millisecond. It holds each distinct vector once (copies of a line share one node); a query that
  names one conversation is answered exactly from that conversation's vectors, read from the database. A graph
  is kept on disk once built (``vector_graphs.py``), so a process that starts loads it instead of building it.

A journal message longer than a passage has, beside the vector of its whole text (``part`` 0), a vector for each
of its passages (``domain/passages.py``: a few sentences each, overlapping; parts 1, 2, ...); a query answers
each message once, its score made of its whole's and its best passage's (``domain/recall.py``
``passage_score``), and names that passage. Each vector records the embedder that wrote it; vectors of another
embedder are never compared (``agentmem reindex`` rebuilds them).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import os
import sqlite3
import struct
import sys
import threading
import time
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from ...domain.clock import TimeRange, parse_iso
from ...domain.models import ACCOUNT_LAYER
from ...domain.passages import long_passages
from ...domain.recall import passage_score
from ...domain.search import warm
from ...domain.text import entry_index_text
from ...observability import logger
from ...ports.embedder import Embedder
from ...ports.search_index import (
    ENTRY_KIND,
    MESSAGE_KIND,
    Filters,
    SearchHit,
    SearchIndex,
    check_filters,
    filter_values,
    time_ranges,
)
from .asked_first import AskedFirst
from .database import Database
from .private_files import map_private_file, open_private_file
from .vector_graphs import GraphFiles

if TYPE_CHECKING:
    from .minilm_states import TokenStates

BATCH = 512
# A query first applies what is queued, so a save is found by meaning at once. In process, with no indexer thread
# (tests, the CLI), it applies up to QUERY_CATCH_UP queued changes; beside the indexer (``agentmem serve``) it
# does not wait out a backlog: it applies one of at most QUERY_CATCH_UP_BEHIND (a save just made), waiting at most
# QUERY_WAIT_BEHIND_S for a catch-up that is running (the indexer's batch holds those saves or is about to); behind
# a longer backlog, the same of its own scope's changes (``_queued_of_scope``); the rest is the indexer's, and the
# query answers over what is indexed.
QUERY_CATCH_UP = 2000
QUERY_CATCH_UP_BEHIND = 16
QUERY_WAIT_BEHIND_S = 0.25
DRAIN_POLL_S = 0.005  # how often a timed wait asks again for the catch-up lock another process holds
# ... and while it waits, it says so in a file every process maps (``<db>.indexing-wanted``: until when, Unix time):
# the indexer lets it take the lock before its next batch (``yield_to_waiting``), for at most QUERY_WAIT_BEHIND_S.
# Without it, a query of another worker of ``agentmem serve`` asked for the lock between the indexer's batches and
# rarely found it free: behind an import of 10,000 long messages, 20 of 31 entries saved through two workers were
# found by meaning at once, 26 of 26 through one (bench/serve_lag.py --read-your-writes)
# The indexer embeds WORKER_BATCH queued changes at a time (long messages: a batch is about a tenth of a second
# of one core), and lets a query that is running go first between two batches, for at most WORKER_YIELD_S.
WORKER_BATCH = 64
WORKER_YIELD_S = 0.05
# ... and, while queries are asked (one ended less than QUERIED_RECENTLY_S ago), WORKER_BATCH_QUERIED at a time: a
# query that comes during a batch shares the CPU with less of it (bench/recall_lag.py, searched throughout: p50 /
# p99 while catching up 34.5 / 93.0 ms with 64, 27.9-29.5 / 67.6-88.0 with this, catching up a sixth slower)
WORKER_BATCH_QUERIED = 16
QUERIED_RECENTLY_S = 1.0
LOAD_WRITTEN_MIN = 2_000  # vectors written to a partition no query has loaded, for the indexer to load it
# ... counted for at most this many partitions: past it, the half written to least are forgotten (a partition
# written a few vectors at a time among many tenants' is loaded by its first query; an import is counted again)
WRITTEN_KEPT = 10_000
# Reading token states ahead for mode=deep (minilm_states.py) waits, before each layer of the model, until no
# query has run for READ_AHEAD_QUIET_S: queries that come one after another keep the CPU to themselves.
READ_AHEAD_QUIET_S = 0.25
READ_AHEAD_WAIT_S = 1.0  # ... at most this long each time (a layer a second, at least, under a steady stream)
LAG_KEPT_S = 0.5  # a scope's count of queued messages or entries (index_lag) is counted again after this long
# ... and a count that took LAG_SLOW_S or more, until it has cost at most LAG_COST_SHARE of the time since: the
# importing user's own journal at a million queued (160 ms a count) is counted every 3.3 s, not twice a second
LAG_SLOW_S = 0.02
LAG_COST_SHARE = 0.05
# A scope's queued messages are read from the queue unless the scope's messages are fewer than a third of it
# (``_queued_in``): a message looked up in the queue costs about three queue rows read in order. At 1,000,200
# queued: another user's 200 messages counted in 0.1 ms (116 ms reading the queue), the importing user's million
# in 160 ms by the queue (397 by their messages)
QUEUE_READ_FACTOR = 3
ANN_THRESHOLD = 50_000  # vectors in one partition above which a graph answers instead of a full scan
# Beside the indexer thread, a loaded partition that grows past ANN_THRESHOLD has its graph built without the
# lock while its matrix still answers exactly (50,000 vectors took 12 s to add to a graph: the queries that
# waited for it missed their deadline); past GRAPH_LATER_MAX it is built at once, as without the indexer.
GRAPH_LATER_MAX = 4 * ANN_THRESHOLD
GRAPH_SWAP_MAX = 1_000  # nodes added to such a graph with the lock held, as it takes the matrix's place
LOAD_CHUNK = 20_000
TIME_EXACT_MAX = 20_000  # a time-bounded query searches at most this many vectors of a graph exactly
# ... and otherwise asks the graph for as many of its nearest as hold about TIME_WIDEN × k of the rows within the
# times, were they spread evenly (a window of half the journal: 2 × 2 × k), at least TIME_WIDE_MIN and at most
# TIME_WIDE_MAX × k. At a million messages a window of the newer half asked 2,000 (20 × k), 24 ms in the graph and
# 15 ms turning its nodes into rows, a search
TIME_WIDEN = 3
TIME_WIDE_MIN = 200
TIME_WIDE_MAX = 20
TIME_UNREAD, TIME_GONE = -1, -2  # a row's message time not read yet, or of no message (``_Partition.times``)
TIMES_BATCH = 50_000  # message times read and converted at a time
KEEP_REMOVALS = 100_000  # removals logged at most; a process further behind reloads its partitions
# The graph's build: two threads add, each looking wider than one would (expansion_add 96, not 64). Measured on
# 146,870 distinct journal vectors added 500 at a time (usearch 2.26): one thread at 64 added 3,400-3,600/s,
# recall@10 against the exact answer 0.861, 287 vectors not found by their own search; two threads at 96 added
# 4,200/s, recall@10 0.870, 96 not found. (Two threads at 64 were faster still, but recall fell to 0.836.)
GRAPH_THREADS = 2
GRAPH_EXPANSION_ADD = 96
# The graph keeps each vector as 8-bit integers (usearch's ``i8``, compared by cosine: the integers' inner product
# is not on the cosine's scale), not half floats, and searches wider (384, was 128). Measured by
# bench/graph_kinds.py on 196,314 distinct vectors of the template journal (and 297,711 of a kept one), 300
# questions, the 100 nearest against the exact answer: f16 at 128, recall@10 / @100 0.782 / 0.774 (0.864 / 0.851),
# 0.56 ms a query, 951 bytes a vector; i8 at 384, 0.838 / 0.847 (0.871 / 0.895), 1.0 ms, 609 bytes, its cosines
# within 0.003 of the exact ones on average. (f16 at 256 finds a little more, 0.856 / 0.842, for 342 more bytes a
# vector.) At a million messages the graph went from 1,535 to 1,023 MiB. A graph saved as f16 before keeps its kind
# when loaded, searched as wide.
GRAPH_KIND, GRAPH_METRIC = "i8", "cos"
GRAPH_EXPANSION_SEARCH = 384
# A graph is saved (vector_graphs.py) when it is built, and again once it has grown by SAVE_GROWTH of its rows
# (at least SAVE_MIN_ROWS): two million vectors take seconds to write, while a graph brought up to date on
# load adds a few thousand a second. One that lost vectors has its files removed at once (what was erased does
# not stay on disk) and is saved again SAVE_DELAY_S later, so a stream of removals costs one save that often.
SAVE_GROWTH = 0.1
SAVE_MIN_ROWS = 50_000
SAVE_DELAY_S = 300.0
Vectors = np.ndarray[Any, np.dtype[np.float32]]
PART_SPAN = 1 << 8  # a row's key in a partition: source × PART_SPAN + part (domain.passages.MAX_PASSAGES < it)
PASSAGE_ROWS = 3  # a journal query reads this many nearest rows per message asked for (passages of one message)
_SEP = "\x1f"


def entry_partition(account_id: str, memory: str, user_key: str) -> str:
    return _SEP.join(("entry", account_id, memory, user_key))


def message_partition(account_id: str, agent: str, user_key: str) -> str:
    return _SEP.join(("message", account_id, agent, user_key))


def message_text(content: str, tool_name: str | None) -> str:
    return f"{content}\n{tool_name}" if tool_name else content


@dataclass(frozen=True)
class _Doc:
    kind: str
    source: int
    partition: str
    label: str  # an entry's name, or a message's conversation key
    seq: int | None
    text: str
    part: int = 0  # which passage of a message (0: the first, or the whole)

    @property
    def text_hash(self) -> str:
        return hashlib.blake2b(self.text.encode("utf-8"), digest_size=12).hexdigest()


def _vector_key(vector: Vectors) -> int:
    """Equal vectors (the same text embedded twice) share a key."""
    return int.from_bytes(hashlib.blake2b(np.ascontiguousarray(vector).tobytes(), digest_size=8).digest(), "little")


@dataclass
class _Partition:
    """One partition's vectors in memory: rows in ``sources`` order, a matrix or a graph over their nodes.

    The graph holds each distinct vector once (a *node*), however many rows share it: a journal says "thanks" or
    repeats a line many times, and an HNSW graph whose nodes are many copies of one point links them to each
    other rather than to their neighbours, and stops finding what is near. ``node_of`` maps a row to its node;
    a node's rows are its first (``node_first``) and any others (``node_more``)."""

    name: str
    dimension: int
    sources: np.ndarray[Any, np.dtype[np.int64]] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    parts: np.ndarray[Any, np.dtype[np.int64]] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    labels: list[str] = field(default_factory=list)
    seqs: np.ndarray[Any, np.dtype[np.int64]] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    alive: np.ndarray[Any, np.dtype[np.bool_]] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    matrix: Vectors | None = None  # small partitions: one row per node (a gone node's row stays, never found)
    graph: Any = None  # large ones: a usearch Index keyed by node
    # rows of each name or conversation, ascending: a list, or as loaded from a saved graph an array (two million
    # rows as Python ints in lists took 72 MB; a label written to again becomes a list)
    by_label: dict[str, Any] = field(default_factory=dict)
    by_source: _Multimap = field(default_factory=lambda: _Multimap(np.int64))  # rows of each source (its parts)
    node_of: np.ndarray[Any, np.dtype[np.int64]] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    node_first: array[int] = field(default_factory=lambda: array("q"))  # a node's first row (-1: the node is gone)
    node_more: dict[int, list[int]] = field(default_factory=dict)  # a node's other rows
    node_by_key: _Multimap = field(default_factory=lambda: _Multimap(np.uint64))  # the nodes made for each key
    node_key: array[int] = field(default_factory=lambda: array("Q"))  # each node's key
    live_nodes: int = 0
    changes: int = 0  # rows added or dropped since it was loaded
    live: int = 0  # rows alive
    saved_at: int | None = None  # ``changes`` when its saved graph was written (None: no saved file is like it)
    unsaved_since: float = 0.0  # when it stopped being like its saved file (time.monotonic; 0: since it was built)
    # a journal partition's rows' message times (µs since the epoch; TIME_UNREAD: not read yet, TIME_GONE: no such
    # message), read from the journal by the indexer once caught up (``read_times``) or by the first search bounded
    # in time, whichever comes first, and kept (saved with the graph): a message's time never changes. Every live
    # row before its length has been read; the rows after it have not
    times: np.ndarray[Any, np.dtype[np.int64]] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    times_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    times_saved: int = 0  # how many of them its saved file holds
    # a loaded partition beside the indexer thread: past ANN_THRESHOLD, the indexer builds its graph without the
    # lock (``SqliteVectorIndex.build_graphs``) while the matrix still answers, up to GRAPH_LATER_MAX nodes
    graph_later: bool = False

    def __post_init__(self) -> None:
        if self.matrix is None and self.graph is None:
            self.matrix = np.zeros((0, self.dimension), dtype=np.float32)

    @property
    def size(self) -> int:
        """Its live rows (counted as they come and go: a sum over two million rows took a millisecond a query)."""
        return self.live

    @property
    def nodes(self) -> int:
        """Its live nodes (distinct vectors)."""
        return self.live_nodes

    def add(self, sources: Sequence[int], labels: Sequence[str], seqs: Sequence[int], vectors: Vectors,
            parts: Sequence[int] | None = None) -> None:
        """Add rows, or replace the rows of (source, part) already held (an entry's new version); ``parts``
        None: each row is its source's part 0."""
        if not len(sources):
            return
        incoming = np.asarray(sources, dtype=np.int64)
        incoming_parts = np.asarray(parts if parts is not None else [0] * len(sources), dtype=np.int64)
        held = self._rows_held(incoming, incoming_parts)
        if held.size:
            self._drop(held)
        start = len(self.sources)
        self.sources = np.concatenate([self.sources, incoming])
        self.parts = np.concatenate([self.parts, incoming_parts])
        for offset, label in enumerate(labels):
            label = sys.intern(label)
            self.labels.append(label)
            rows = self.by_label.get(label)
            if rows is None:
                self.by_label[label] = [start + offset]
            else:
                if not isinstance(rows, list):
                    rows = self.by_label[label] = rows.tolist()
                rows.append(start + offset)
            self.by_source.add(int(incoming[offset]), start + offset)
        self.seqs = np.concatenate([self.seqs, np.asarray(seqs, dtype=np.int64)])
        self.alive = np.concatenate([self.alive, np.ones(len(incoming), dtype=bool)])
        self.changes += len(incoming)
        self.live += len(incoming)
        nodes, fresh, offsets = self._nodes_for(start, vectors)
        self.by_source.settle()
        self.node_by_key.settle()
        self.node_of = np.concatenate([self.node_of, nodes])
        if self.graph is not None:
            if fresh:
                self.graph.add(np.asarray(fresh, dtype=np.int64), vectors[offsets], threads=GRAPH_THREADS)
        else:
            assert self.matrix is not None
            if fresh:
                self.matrix = np.concatenate([self.matrix, vectors[offsets]])
            if self.nodes > (GRAPH_LATER_MAX if self.graph_later else ANN_THRESHOLD):
                self._to_graph()

    def _nodes_for(self, start: int, vectors: Vectors) -> tuple[np.ndarray[Any, np.dtype[np.int64]], list[int],
                                                                   list[int]]:
        """The node of each new row (rows ``start``…): an existing node for a vector already held, else a new one;
        the new nodes, and where their vectors are in ``vectors``."""
        nodes = np.empty(len(vectors), dtype=np.int64)
        fresh: list[int] = []
        offsets: list[int] = []
        keys = np.fromiter((_vector_key(vector) for vector in vectors), dtype=np.uint64, count=len(vectors))
        in_base = self.node_by_key.last_of(keys)  # (a key's newest node is its only live one, if any)
        for offset, key in enumerate(keys.tolist()):
            newer = self.node_by_key.more.get(key)
            node = newer[-1] if newer else int(in_base[offset])
            if node < 0 or self.node_first[node] < 0:  # none, or gone: a new node
                node = len(self.node_first)
                self.node_by_key.add(key, node)
                self.node_first.append(start + offset)
                self.node_key.append(key)
                self.live_nodes += 1
                fresh.append(node)
                offsets.append(offset)
            else:
                self.node_more.setdefault(node, []).append(start + offset)
            nodes[offset] = node
        return nodes, fresh, offsets

    def _rows_held(self, sources: np.ndarray[Any, np.dtype[np.int64]], parts: np.ndarray[Any, np.dtype[np.int64]],
                   ) -> np.ndarray[Any, np.dtype[np.int64]]:
        """The live rows of these (source, part)s."""
        known = (self.by_source.last_of(sources) >= 0) | np.fromiter(
            (s in self.by_source.more for s in sources.tolist()), dtype=bool, count=len(sources))
        rows = [row for source, part in zip(sources[known].tolist(), parts[known].tolist(), strict=True)
                for row in self.by_source.get(source) if self.alive[row] and self.parts[row] == part]
        return np.asarray(sorted(set(rows)), dtype=np.int64)

    def remove(self, sources: Sequence[int], parts: Sequence[int] | None = None) -> None:
        """Drop the rows of these (source, part)s (``parts`` None: part 0 of each)."""
        rows = self._rows_held(np.asarray(sources, dtype=np.int64),
                               np.asarray(parts if parts is not None else [0] * len(sources), dtype=np.int64))
        if rows.size:
            self._drop(rows)

    def _drop(self, rows: np.ndarray[Any, np.dtype[np.int64]]) -> None:
        """Rows gone: a node none of whose rows is alive leaves the graph, and its key is forgotten."""
        self.alive[rows] = False
        self.changes += len(rows)
        self.live -= len(rows)
        gone: list[int] = []
        for node in {int(n) for n in self.node_of[rows]}:
            if not any(self.alive[r] for r in self._rows_of(node)):
                gone.append(node)
        for node in gone:  # (its key's lookup still names it: a gone node is never found again)
            self.node_first[node] = -1
            self.node_more.pop(node, None)
        self.live_nodes -= len(gone)
        if gone and self.graph is not None:
            self.graph.remove(np.asarray(gone, dtype=np.int64))

    def rows_in(self, conversations: Iterable[str]) -> np.ndarray[Any, np.dtype[np.int64]]:
        """The rows of these names or conversations (``by_label``), alive or not."""
        held = [np.asarray(self.by_label[c], dtype=np.int64) for c in conversations if c in self.by_label]
        return np.concatenate(held) if held else np.zeros(0, dtype=np.int64)

    def _rows_of(self, node: int) -> list[int]:
        first = self.node_first[node]
        return ([first] if first >= 0 else []) + self.node_more.get(node, [])

    def _to_graph(self) -> None:
        assert self.matrix is not None
        nodes = np.flatnonzero(np.array(self.node_first, dtype=np.int64) >= 0)
        self.graph, self.matrix = _graph_of(self.dimension, nodes, self.matrix), None

    @property
    def graph_pending(self) -> bool:
        """Past ANN_THRESHOLD and still a matrix: its graph is to be built beside it (``graph_later``)."""
        return self.graph is None and self.nodes > ANN_THRESHOLD

    def due(self, now: float) -> bool:
        """Whether its graph should be saved (again): one never saved, or unlike its file for SAVE_DELAY_S, or
        grown by SAVE_GROWTH of its rows (at least SAVE_MIN_ROWS) since it was saved, or holding as many more rows'
        times (a file saved before they were read)."""
        if self.graph is None:
            return False
        if self.saved_at is None:
            return now - self.unsaved_since >= SAVE_DELAY_S or not self.unsaved_since
        enough = max(SAVE_MIN_ROWS, SAVE_GROWTH * len(self.sources))
        return self.changes - self.saved_at >= enough or len(self.times) - self.times_saved >= enough

    def arrays(self) -> dict[str, np.ndarray[Any, Any]]:
        """What it holds beside its graph, as arrays (``vector_graphs.py``): rows, nodes and the rows' labels
        (each distinct label once)."""
        distinct: dict[str, int] = {}
        label_of = np.fromiter((distinct.setdefault(label, len(distinct)) for label in self.labels), dtype=np.int64,
                               count=len(self.labels))
        return {"sources": self.sources, "parts": self.parts, "seqs": self.seqs, "alive": self.alive,
                "node_of": self.node_of, "node_first": np.array(self.node_first, dtype=np.int64),
                "node_key": np.array(self.node_key, dtype=np.uint64), "label_of": label_of,
                "label_values": np.array(list(distinct), dtype=str), "times": self.times}

    @classmethod
    def from_saved(cls, name: str, dimension: int, arrays: Mapping[str, np.ndarray[Any, Any]], graph: Any,
                   ) -> _Partition:
        """The partition ``arrays`` and ``graph`` were saved from, with the lookups made of them again."""
        graph.expansion_add, graph.expansion_search = GRAPH_EXPANSION_ADD, GRAPH_EXPANSION_SEARCH
        part = cls(name, dimension, graph=graph)
        part.sources = arrays["sources"].astype(np.int64, copy=False)  # (no second copy of what is int64 already)
        part.parts = arrays["parts"].astype(np.int64, copy=False)
        part.seqs, part.alive = arrays["seqs"].astype(np.int64, copy=False), arrays["alive"].astype(bool, copy=False)
        part.live = int(part.alive.sum())
        part.node_of = arrays["node_of"].astype(np.int64, copy=False)
        firsts = arrays["node_first"].astype(np.int64, copy=False)
        part.node_first, part.node_key = array("q", firsts.tobytes()), array("Q", arrays["node_key"].tobytes())
        values = [sys.intern(str(v)) for v in arrays["label_values"]]
        label_of = arrays["label_of"]
        part.labels = np.array(values, dtype=object)[label_of].tolist() if len(label_of) else []
        rows = np.arange(len(part.sources), dtype=np.int64)
        part.by_label = _groups(label_of, rows, lambda i: values[i], lists=False)
        part.by_source = _Multimap.of(part.sources, rows)
        live = firsts >= 0
        part.node_by_key = _Multimap.of(arrays["node_key"][live].astype(np.uint64), np.flatnonzero(live))
        part.live_nodes = int(live.sum())
        first_of_row = firsts[part.node_of] if len(part.node_of) else firsts[:0]
        more = (first_of_row >= 0) & (first_of_row != rows)
        part.node_more = _groups(part.node_of[more], rows[more], int)
        times = arrays.get("times")  # (a file saved before they were kept holds none: read on the first search)
        if times is not None and len(times) <= len(part.sources):
            part.times = np.array(times, dtype=np.int64)
            part.times_saved = len(part.times)
        return part

    def nearest(self, query: Vectors, k: int, rows: np.ndarray[Any, np.dtype[np.int64]] | None = None,
                vectors: Vectors | None = None) -> list[tuple[float, int]]:
        """(score, row) of the ``k`` nearest live rows; ``rows`` with ``vectors`` restricts the search to them."""
        if rows is not None and vectors is not None:
            scores = vectors @ query
            picked = rows
        elif self.graph is not None:
            found = self.graph.search(query, min(k, max(self.nodes, 1)))
            return self._rows_near(np.asarray(found.keys, dtype=np.int64).tolist(),
                                   (1.0 - np.asarray(found.distances, dtype=np.float64)).tolist(), k)
        else:
            assert self.matrix is not None
            if not len(self.matrix):
                return []
            firsts = np.array(self.node_first, dtype=np.int64)
            by_node = np.where(firsts >= 0, self.matrix @ query, -np.inf)
            take = min(k, len(by_node))
            best = np.argpartition(-by_node, take - 1)[:take]
            best = best[np.argsort(-by_node[best], kind="stable")]
            if not self.node_more:  # each node stands for one row: which rows, in one vector operation
                rows, scores = firsts[best], by_node[best].astype(np.float64)
                keep = np.isfinite(scores) & (rows >= 0)
                rows, scores = rows[keep], scores[keep]
                keep = self.alive[rows]
                return list(zip(scores[keep][:k].tolist(), rows[keep][:k].tolist(), strict=True))
            return self._rows_near(best.tolist(), by_node[best].astype(np.float64).tolist(), k)
        if not len(scores):
            return []
        take = min(k, len(scores))
        best = np.argpartition(-scores, take - 1)[:take]
        return [(float(scores[i]), int(picked[i])) for i in best if np.isfinite(scores[i])]

    def _rows_near(self, nodes: Sequence[int], scores: Sequence[float], k: int) -> list[tuple[float, int]]:
        """The nearest nodes (best first), each standing for its live rows at its score, until ``k`` rows."""
        out: list[tuple[float, int]] = []
        for node, score in zip(nodes, scores, strict=True):
            if not 0 <= node < len(self.node_first) or not np.isfinite(score):
                continue  # usearch pads a short answer; a gone node scores -inf
            out += [(score, row) for row in self._rows_of(node) if self.alive[row]]
            if len(out) >= k:
                break
        return out[:k]


def time_wide(k: int, within: int, size: int) -> int:
    """How many of a graph's nearest rows a time-bounded query asks for, to keep ``k`` of the ``within`` rows inside
    its times (of the partition's ``size`` live rows, at most all of them): as many as would hold TIME_WIDEN × k of
    them, spread evenly."""
    share = within / max(size, within, 1)
    return min(size, max(TIME_WIDE_MIN, min(TIME_WIDE_MAX * k, math.ceil(TIME_WIDEN * k / max(share, 1e-9)))))


class SqliteVectorIndex(SearchIndex):
    def __init__(self, db: Database, embedder: Embedder) -> None:
        self.db = db
        self.embedder = embedder
        self._partitions: dict[str, _Partition] = {}
        self._loading: dict[str, threading.Lock] = {}  # one thread loads a partition; others wait for that one
        self.graphs = GraphFiles(db.path.with_name(db.path.name + ".graphs"))  # large partitions kept on disk
        self._seen = 0  # the newest vector row the loaded partitions hold (ids only grow: AUTOINCREMENT)
        self._removed = 0  # the newest removal they have applied (``vector_removals``, AUTOINCREMENT too)
        self._lock = threading.Lock()  # the in-memory partitions
        self._draining = threading.Lock()  # one catch-up at a time in this process
        self._drain_fd: int | None = None  # and across processes: a lock on this file (opened on first use)
        self._wanted: Any = None  # the mapped file where a waiting query says until when it wants that lock
        self._background = False  # an indexer thread catches up (IndexWorker): queries never wait for it
        self._queries = 0  # queries running now (the indexer lets them go first between batches)
        self._queries_lock = threading.Lock()
        self._no_queries = threading.Event()
        self._no_queries.set()
        self.last_query_s = 0.0  # when the last query ended (time.monotonic)
        self._lags: dict[tuple[str, ...], tuple[float, int, float]] = {}  # scope -> when, count, kept (slow)
        # the conversations searched while behind, embedded first (asked_first.py), whichever process searched
        self.asked = AskedFirst(db.path.with_name(db.path.name + ".asked"))
        self._written_seen: int | None = None  # the newest vector row ``load_written`` has looked at
        self._written: dict[str, int] = {}  # ... and the vectors written since to each partition not loaded
        # once caught up, the indexer reads the journal's token states for mode=deep ahead (minilm_states.py)
        self.read_ahead: TokenStates | None = None

    @property
    def dimension(self) -> int:
        return self.embedder.dimension

    @property
    def background(self) -> bool:
        """Whether an indexer thread catches up (``IndexWorker``; or follows another process's): then queries
        never wait for it, and it builds the graphs of partitions that grow past the threshold (``graph_later``)."""
        return self._background

    @background.setter
    def background(self, on: bool) -> None:
        with self._lock:
            self._background = on
            for part in self._partitions.values():
                part.graph_later = on

    def setup(self) -> None:
        """The tables come with the database's migrations."""

    def upsert(self, doc_id: str, fields: Mapping[str, Any], vector: Sequence[float]) -> None:
        raise NotImplementedError("the embedded index is written from the store's change queue (catch_up)")

    def delete(self, doc_id: str) -> None:
        raise NotImplementedError("the embedded index is written from the store's change queue (catch_up)")

    # --- catching up with the store ----------------------------------------------------------------------------
    def pending(self) -> int:
        return int(self.db.connection().execute("SELECT count(*) FROM index_queue").fetchone()[0])

    def _queued_about(self) -> int:
        """How many changes are queued, at most: the span of the queue's ids (read at once, where ``pending`` counts
        them; what was taken out of turn, ``asked_first``, is counted in)."""
        found = self.db.connection().execute(  # (each of min and max alone is one step down the table's tree)
            "SELECT (SELECT max(id) FROM index_queue) - (SELECT min(id) FROM index_queue) + 1").fetchone()[0]
        return int(found or 0)

    def vectors(self) -> int:
        """How many vectors the current embedder wrote (the reindex progress and tests)."""
        return int(self.db.connection().execute(
            "SELECT count(*) FROM vectors WHERE embedder=?", (self.embedder.name,)).fetchone()[0])

    def catch_up(self, limit: int | None = None, *, wait: bool | float = True) -> int:
        """Apply queued changes (at most ``limit``; all when None); how many queue items were applied.
        ``wait=False`` returns at once when another thread or process is catching up; a number of seconds waits
        that long at most for another thread's or process's catch-up."""
        seconds = -1.0 if wait is True else float(wait)  # (-1: as long as it takes; 0: not at all)
        deadline = time.monotonic() + seconds
        if not (self._draining.acquire(timeout=seconds) if seconds else self._draining.acquire(blocking=False)):
            return 0
        try:
            done = 0
            while limit is None or done < limit:
                # batch by batch: another process waits one batch at most
                with self._drain_lock(True if wait is True else max(0.0, deadline - time.monotonic())) as held:
                    applied = self._apply_batch(BATCH if limit is None else min(BATCH, limit - done)) if held else 0
                if not applied:
                    break
                done += applied
            return done
        finally:
            self._draining.release()

    @contextlib.contextmanager
    def _drain_lock(self, wait: bool | float) -> Iterator[bool]:
        """Hold the data dir's catch-up lock (an flock, released by the kernel if the process dies); yields
        whether it is held (``wait=False``: not when another process holds it; a number of seconds: not when it
        still does after that long, asked again every DRAIN_POLL_S)."""
        if self._drain_fd is None:
            self._drain_fd = open_private_file(self.db.path.with_name(self.db.path.name + ".indexing"), os.O_RDWR)
        deadline = None if wait is True else time.monotonic() + float(wait)
        said = False  # whether this wait told the indexer it wants the lock
        try:
            while True:
                try:
                    fcntl.flock(self._drain_fd, fcntl.LOCK_EX | (0 if deadline is None else fcntl.LOCK_NB))
                    break
                except BlockingIOError:
                    if deadline is None or time.monotonic() >= deadline:
                        yield False
                        return
                    if not said:
                        self._want_lock(time.time() + deadline - time.monotonic())
                        said = True
                    time.sleep(DRAIN_POLL_S)
        finally:
            if said:
                self._want_lock(0.0)
        try:
            yield True
        finally:
            fcntl.flock(self._drain_fd, fcntl.LOCK_UN)

    def _wanted_map(self) -> Any:
        """The 8 bytes every process on the data dir maps: until when (Unix time) a query waits for the lock."""
        if self._wanted is None:
            fd, self._wanted = map_private_file(self.db.path.with_name(self.db.path.name + ".indexing-wanted"), 8)
            os.close(fd)  # (the mapping stays)
        return self._wanted

    def _want_lock(self, until: float) -> None:
        """Say, to the indexer in whichever process, until when a query waits for the catch-up lock (0: no more)."""
        self._wanted_map()[0:8] = struct.pack("<d", until)

    def yield_to_waiting(self, most: float = QUERY_WAIT_BEHIND_S) -> None:
        """The indexer, before a batch: while a query (of another process, most often) waits for the catch-up lock
        to apply a few changes of its own, let it take the lock first; at most ``most`` seconds."""
        end = time.monotonic() + most
        while time.monotonic() < end and struct.unpack("<d", self._wanted_map()[0:8])[0] > time.time():
            time.sleep(DRAIN_POLL_S)

    def _asked_first(self, conn: sqlite3.Connection, size: int) -> list[tuple[int, str, int]]:
        """The queued messages of the conversation last searched while behind (``asked_first.py``), in the order
        they came, at most ``size``; none when no conversation so searched has any left."""
        wanted = self.asked.wanted()
        queued = self._queued_about() if wanted else 0
        for conversation in wanted:
            found = conn.execute("SELECT last_seq FROM conversations WHERE id = ?", (conversation,)).fetchone()
            rows = conn.execute(
                f"SELECT q.id, q.kind, q.source {_queued_in(queued, found[0], 'c.id = ?')} ORDER BY q.id LIMIT ?",
                (conversation, size)).fetchall() if found else []
            if rows:
                return rows
            self.asked.done(conversation)
        return []

    def _apply_batch(self, size: int) -> int:
        conn = self.db.connection()
        queued = self._asked_first(conn, size)  # a conversation searched while behind comes first
        if queued:
            return self._apply_rows(conn, queued, out_of_turn=True)
        queued = conn.execute("SELECT id, kind, source FROM index_queue ORDER BY id LIMIT ?", (size,)).fetchall()
        return self._apply_rows(conn, queued, out_of_turn=False)

    def _apply_rows(self, conn: sqlite3.Connection, queued: list[tuple[int, str, int]], *, out_of_turn: bool) -> int:
        """Apply queued changes (rows of ``index_queue``) and take them out of the queue: the first of it
        (``out_of_turn`` False: every row up to the last), or picked from it (True: those rows alone)."""
        if not queued:
            return 0
        last = queued[-1][0]
        entries = sorted({r[2] for r in queued if r[1] == "entry"})
        messages = sorted({r[2] for r in queued if r[1] == "message"})
        docs = self._entry_docs(entries) + self._message_docs(messages)
        present = {(d.kind, d.source, d.part) for d in docs}
        known = self._known(entries, messages)
        name = self.embedder.name
        fresh = [d for d in docs if known.get((d.kind, d.source, d.part), (None, None))[1:] != (name, d.text_hash)
                 or known[(d.kind, d.source, d.part)][0] != d.partition]
        vectors = self._embed([d.text for d in fresh])
        gone = [key for key in known if key not in present]  # gone, or a part the message no longer has
        replaced = [key for d in fresh if (key := (d.kind, d.source, d.part)) in known]
        with self.db.write() as write:
            # a vector moving to another partition leaves its old one through the removal log (a REPLACE fires
            # no delete trigger)
            write.executemany("DELETE FROM vectors WHERE kind=? AND source=? AND part=? AND partition != ?",
                              [(d.kind, d.source, d.part, d.partition) for d in fresh])
            write.executemany(
                "INSERT OR REPLACE INTO vectors (kind, source, part, partition, embedder, text_hash, label, seq, "
                "vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(d.kind, d.source, d.part, d.partition, name, d.text_hash, d.label, d.seq, vectors[i].tobytes())
                 for i, d in enumerate(fresh)],
            )
            write.executemany("DELETE FROM vectors WHERE kind=? AND source=? AND part=?", gone)
            if out_of_turn:  # (the rest of the queue, before and after, waits its turn)
                write.executemany("DELETE FROM index_queue WHERE id = ?", [(row[0],) for row in queued])
            else:
                write.execute("DELETE FROM index_queue WHERE id <= ?", (last,))
            write.execute("DELETE FROM vector_removals WHERE id <= (SELECT max(id) FROM vector_removals) - ?",
                          (KEEP_REMOVALS,))
        # a saved graph still holding a vector that left the index (gone, moved or replaced) is removed at once
        for partition in {known[key][0] for key in gone} | {known[key][0] for key in replaced}:
            self.graphs.forget(partition)
        self._refresh()
        return len(queued)

    def _embed(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        matrix = getattr(self.embedder, "embed_matrix", None)
        found = matrix(texts) if callable(matrix) else self.embedder.embed(texts)
        vectors = np.asarray(found, dtype=np.float32)
        if vectors.shape != (len(texts), self.dimension) or not np.isfinite(vectors).all():
            raise ValueError(f"the embedder {self.embedder.name} answered vectors of shape {vectors.shape}")
        return vectors

    def refresh(self) -> None:
        """``_refresh``, for a thread that follows another process's indexer (``IndexWorker(follow=True)``)."""
        self._refresh()

    def _refresh(self) -> None:
        """Bring the loaded partitions up to date with the database, whoever wrote it: the vectors removed since
        they were loaded leave them, then the vectors written since come in (a removed source added again is
        added back, as it is in the table)."""
        conn = self.db.connection()
        with self._lock:
            self._refresh_locked(conn, *_newest(conn))

    def _refresh_locked(self, conn: sqlite3.Connection, newest: int, removed: int) -> None:
        """``_refresh`` with the partitions' lock held, to ``newest`` vector and ``removed`` removal."""
        if newest <= self._seen and removed <= self._removed:
            return
        if self._partitions and removed > self._removed:
            self._apply_removals(conn, removed)
        if self._partitions and newest > self._seen:
            cursor = conn.execute(
                "SELECT partition, source, part, label, seq, vector FROM vectors WHERE id > ? AND id <= ? "
                "AND embedder=? "
                "ORDER BY id", (self._seen, newest, self.embedder.name),
            )
            while rows := cursor.fetchmany(LOAD_CHUNK):
                by_partition: dict[str, list[tuple[Any, ...]]] = {}
                for row in rows:
                    if row[0] in self._partitions:
                        by_partition.setdefault(row[0], []).append(row)
                for name, found in by_partition.items():
                    _add_rows(self._partitions[name], found, self.dimension)
        self._seen, self._removed = max(newest, self._seen), removed

    def _apply_removals(self, conn: sqlite3.Connection, removed: int) -> None:
        """Drop from the loaded partitions the vectors removed after ``_removed`` up to ``removed``; when the log
        no longer goes back that far (``KEEP_REMOVALS``), forget the partitions: they are loaded again. A
        partition that lost vectors is no longer like its saved graph (``_unsaved``)."""
        rows = _removals(conn, self._removed, removed)
        if rows is None:
            self._partitions.clear()
            return
        by_partition: dict[str, tuple[list[int], list[int]]] = {}
        for partition, source, part in rows:
            if partition in self._partitions:
                sources, parts = by_partition.setdefault(partition, ([], []))
                sources.append(source)
                parts.append(part)
        for name, (sources, parts) in by_partition.items():
            self._partitions[name].remove(sources, parts)
        self._unsaved(by_partition)

    def _entry_docs(self, rowids: Sequence[int]) -> list[_Doc]:
        if not rowids:
            return []
        marks = ",".join("?" * len(rowids))
        rows = self.db.connection().execute(
            "SELECT rowid, account_id, memory, layer_user, name, description, content, content_hash FROM entries "
            f"WHERE rowid IN ({marks}) AND conversation IS NULL", tuple(rowids),
        ).fetchall()
        for r in rows:  # the keyword ranking's analysis too, while the text is at hand
            warm(r[2], r[3], r[4], r[5], r[6], r[7])
        return [_Doc("entry", int(r[0]), entry_partition(r[1], r[2], r[3]), r[4], None,
                     entry_index_text(r[4], r[5], r[6])) for r in rows]

    def _message_docs(self, ids: Sequence[int]) -> list[_Doc]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.db.connection().execute(
            "SELECT m.id, c.account_id, c.agent, c.user_key, c.key, m.seq, m.content, m.tool_name "
            f"FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.id IN ({marks})", tuple(ids),
        ).fetchall()
        docs = []
        for r in rows:
            text = message_text(r[6], r[7])
            if text.strip():  # a tool row without words: nothing to find it by
                partition = message_partition(r[1], r[2], r[3])
                docs.append(_Doc("message", int(r[0]), partition, r[4], int(r[5]), text))
                # a long message: its passages too, as parts 1, 2, ...
                docs += [_Doc("message", int(r[0]), partition, r[4], int(r[5]), passage.of(text), part)
                         for part, passage in enumerate(long_passages(text), start=1)]
        return docs

    def _known(self, entries: Sequence[int], messages: Sequence[int]
               ) -> dict[tuple[str, int, int], tuple[str, str, str]]:
        """(partition, embedder, text hash) of the vectors these rows have now, by (kind, source, part)."""
        known: dict[tuple[str, int, int], tuple[str, str, str]] = {}
        conn = self.db.connection()
        for kind, sources in (("entry", entries), ("message", messages)):
            for chunk in _chunks(sources):
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(
                    "SELECT source, part, partition, embedder, text_hash FROM vectors "
                    f"WHERE kind=? AND source IN ({marks})", (kind, *chunk),
                ):
                    known[(kind, int(row[0]), int(row[1]))] = (row[2], row[3], row[4])
        return known

    # --- queries ---------------------------------------------------------------------------------------------------
    def query(self, text: str | None, vector: Sequence[float] | None, filters: Filters, k: int) -> list[SearchHit]:
        """The nearest ``k`` of the partitions the filters name (``kind`` and ``account``, then ``memory`` and
        ``user`` for entries or ``agent`` and ``user`` for messages; ``conversation`` narrows a journal). The
        embedded backend's keyword side is the store's own full-text index, so ``text`` is not used."""
        check_filters(filters)
        if vector is None or k <= 0:
            return []
        if len(vector) != self.dimension:
            raise ValueError(f"a vector has {self.dimension} dimensions, not {len(vector)}")
        with self.querying():
            return self._query(vector, filters, k)

    @contextlib.contextmanager
    def querying(self) -> Iterator[None]:
        """Marks a query running (re-entrant by count): the indexer lets it finish before its next batch. Recall
        holds it from the query's embedding on (``SemanticSide``)."""
        with self._queries_lock:
            self._queries += 1
            self._no_queries.clear()
        try:
            yield
        finally:
            with self._queries_lock:
                self._queries -= 1
                self.last_query_s = time.monotonic()
                if not self._queries:
                    self._no_queries.set()

    def wait_for_queries(self, timeout: float) -> None:
        """The indexer, between two batches: let the queries running now finish first (at most ``timeout``)."""
        self._no_queries.wait(timeout)

    def _catch_up_for_query(self, filters: Filters) -> None:
        """What a query applies of the queue before it searches (QUERY_CATCH_UP; beside an indexer, this process's
        or another's that this one follows, QUERY_CATCH_UP_BEHIND). Behind a larger backlog (an import, perhaps
        another tenant's), the changes of the query's own scope, when there are that few: a save just made in
        the memory layers it searches, or the conversation it names, is found by meaning at once, whatever else
        is queued (``_queued_of_scope``)."""
        if not self.background:
            self.catch_up(QUERY_CATCH_UP)
            return
        queued = self._queued_about()
        if not queued:
            return
        if queued <= QUERY_CATCH_UP_BEHIND:  # what the indexer's batch did not apply, once it is done
            self.catch_up(queued, wait=QUERY_WAIT_BEHIND_S)
            return
        kept = self._lags.get(_scope_of(filters))
        if kept is not None and kept[1] > QUERY_CATCH_UP_BEHIND:
            return  # (its own backlog, counted a moment ago, is the indexer's: its conversation is put first)
        conn = self.db.connection()
        if not 0 < len(self._queued_of_scope(conn, filters, queued, QUERY_CATCH_UP_BEHIND + 1)) \
                <= QUERY_CATCH_UP_BEHIND:
            return  # (nothing of its own queued, the common case: the query waits for nothing)
        if not self._draining.acquire(timeout=QUERY_WAIT_BEHIND_S):
            return
        try:  # (picked again with the locks held: a batch of the indexer's may have applied them meanwhile)
            with self._drain_lock(QUERY_WAIT_BEHIND_S) as held:
                own = self._queued_of_scope(conn, filters, queued, QUERY_CATCH_UP_BEHIND + 1) if held else []
                if len(own) <= QUERY_CATCH_UP_BEHIND:
                    self._apply_rows(conn, own, out_of_turn=True)
        finally:
            self._draining.release()

    def _queued_of_scope(self, conn: sqlite3.Connection, filters: Filters, queued: int,
                         limit: int) -> list[tuple[int, str, int]]:
        """The first ``limit`` queued changes of the scope a query names, in the order they came: the entries of
        the memory layers it searches (a layer holds at most a few hundred: each looked up in the queue), or the
        messages of the one conversation it names, from the cheaper side (``_queued_in``); none for a journal
        searched across its conversations."""
        if filter_values(filters.get("kind", [])) == [ENTRY_KIND]:
            where, params = _conditions(filters, _ENTRY_SCOPE)
            return conn.execute(
                "SELECT q.id, q.kind, q.source FROM entries e CROSS JOIN index_queue q ON q.kind = 'entry' "
                f"AND q.source = e.rowid WHERE {where} ORDER BY q.id LIMIT ?", [*params, limit]).fetchall()
        if len(filter_values(filters.get("conversation", []))) != 1:
            return []
        where, params, conversations, messages, _ = self._journal_scope(conn, filters)
        if conversations != 1:
            return []
        return conn.execute(f"SELECT q.id, q.kind, q.source {_queued_in(queued, messages, where)} "
                            "ORDER BY q.id LIMIT ?", [*params, limit]).fetchall()

    def _journal_scope(self, conn: sqlite3.Connection, filters: Filters) -> tuple[str, list[str], int, int, int]:
        """The conversations a journal query names: the conditions on ``c`` and their parameters, how many they
        are, how many messages they have had (their last seqs), and the row id of the last of them."""
        where, params = _conditions(filters, _JOURNAL_SCOPE)
        conversations, messages, last = conn.execute(
            f"SELECT count(*), coalesce(sum(c.last_seq), 0), max(c.id) FROM conversations c WHERE {where}",
            params).fetchone()
        return where, params, int(conversations), int(messages), int(last or 0)

    def lag(self, filters: Filters) -> int | None:
        """How many documents of the scope ``filters`` name are queued and not yet indexed: journal messages (an
        agent and user, one conversation) or entries (an account's memories and layers, as a query names their
        partitions; an entry queued by several changes counts once). Counted again after LAG_KEPT_S, or longer
        after a slow count (LAG_SLOW_S)."""
        kinds = filter_values(filters.get("kind", []))
        if kinds not in ([MESSAGE_KIND], [ENTRY_KIND]):
            return None
        if self.db.connection().execute("SELECT 1 FROM index_queue LIMIT 1").fetchone() is None:
            return 0  # (caught up: at once, whatever count is kept)
        scope = _scope_of(filters)
        now = time.monotonic()
        kept = self._lags.get(scope)
        if kept is not None and now - kept[0] < max(LAG_KEPT_S, kept[2]):
            return kept[1]
        conn = self.db.connection()
        if kinds == [MESSAGE_KIND]:  # counted from the cheaper side: the queue, or the scope's messages
            where, params, conversations, messages, last = self._journal_scope(conn, filters)
            counted = int(conn.execute(f"SELECT count(*) {_queued_in(self._queued_about(), messages, where)}",
                                       params).fetchone()[0]) if conversations else 0
            if conversations == 1 and len(filter_values(filters.get("conversation", []))) == 1:
                # the one conversation a search names is embedded first while behind (asked_first.py)
                (self.asked.ask if counted else self.asked.done)(last)
            return self._kept_lag(scope, now, counted)
        # (a checkpoint is queued too, and never indexed)
        where, params = _conditions(filters, _ENTRY_SCOPE)
        counted = int(conn.execute(
            "SELECT count(DISTINCT q.source) FROM index_queue q JOIN entries e ON e.rowid = q.source "
            f"WHERE q.kind = 'entry' AND e.conversation IS NULL AND {where}", params,
        ).fetchone()[0])
        return self._kept_lag(scope, now, counted)

    def _kept_lag(self, scope: tuple[str, ...], now: float, counted: int) -> int:
        """``counted`` kept for ``scope``, counted at ``now``: LAG_KEPT_S, or longer when counting it was slow."""
        took = time.monotonic() - now
        if len(self._lags) > 1000:
            self._lags.clear()
        self._lags[scope] = (now, counted, took / LAG_COST_SHARE if took >= LAG_SLOW_S else 0.0)
        return counted

    def _query(self, vector: Sequence[float], filters: Filters, k: int) -> list[SearchHit]:
        self._catch_up_for_query(filters)  # what was just written is found by meaning too
        self._refresh()
        query = np.asarray(vector, dtype=np.float32)
        conversations = set(filter_values(filters["conversation"])) if "conversation" in filters else None
        when = time_ranges(filters)
        if set(when) - {"updated_at"} or (when and filter_values(filters.get("kind", [])) != [MESSAGE_KIND]):
            raise ValueError("the embedded index bounds only a journal message's time (updated_at)")
        found: list[tuple[float, int, _Partition, int]] = []
        journal = filter_values(filters.get("kind", [])) == [MESSAGE_KIND]
        k_rows = k * PASSAGE_ROWS if journal else k  # a message may answer with several of its passages
        for name in _partition_names(filters):
            part = self._partition(name)
            if part is None or not part.size:
                continue
            if when:
                nearest = self._nearest_between(part, query, k_rows, when["updated_at"], conversations)
            elif conversations is not None:
                rows = part.rows_in(conversations)
                rows = rows[part.alive[rows]]
                nearest = part.nearest(query, k_rows, rows, self._vectors_of(part, rows)) if rows.size else []
            else:
                nearest = part.nearest(query, k_rows)
            found += [(score, int(part.sources[row]), part, row) for score, row in nearest]
        found.sort(key=lambda h: (-h[0], str(h[1])))  # a tie as the ids ("kind:source", one kind) sort
        passage_of: dict[tuple[str, int], int] = {}
        if journal:  # each message once, scored by its whole and its passages (domain/recall.py passage_score)
            found, passage_of = self._by_message(found, query, k)
        hits: list[SearchHit] = []
        for score, source, part, row in found[:k]:  # fields for the answer only, not every partition's best
            kind, account, scope, user = part.name.split(_SEP)
            fields: dict[str, Any] = {"kind": kind, "account": account, "user": user}
            if kind == "entry":
                fields.update(memory=scope, name=part.labels[row])
            else:
                fields.update(agent=scope, conversation=part.labels[row], seq=int(part.seqs[row]))
                if (part.name, source) in passage_of:
                    fields["passage"] = passage_of[(part.name, source)]
            hits.append(SearchHit(f"{kind}:{source}", score, fields))
        return hits

    def _by_message(self, found: list[tuple[float, int, _Partition, int]], query: Vectors, k: int,
                    ) -> tuple[list[tuple[float, int, _Partition, int]], dict[tuple[str, int], int]]:
        """The best ``k`` messages among the rows found (nearest first), each once: every vector of each (its
        whole, and a long one's passages) scored against the query, the message's score made of them by
        ``passage_score``; and, for a long message, which of its passages is nearest (0: the first)."""
        messages: dict[tuple[str, int], tuple[_Partition, int]] = {}
        for _, source, part, row in found:
            if (part.name, source) not in messages and len(messages) < k:
                messages[(part.name, source)] = (part, row)
        scored: list[tuple[float, int, _Partition, int]] = []
        passage_of: dict[tuple[str, int], int] = {}
        rows_of = {key: np.array([r for r in part.by_source.get(key[1]) if part.alive[r]], dtype=np.int64)
                   for key, (part, _) in messages.items()}
        cosine_of: dict[tuple[str, int], np.ndarray[Any, np.dtype[np.float64]]] = {}
        for part in {id(p): p for p, _ in messages.values()}.values():  # one read of the vectors a partition
            keys = [key for key, (p, _) in messages.items() if p is part and rows_of[key].size > 1]
            if keys:
                cosines = (self._vectors_of(part, np.concatenate([rows_of[key] for key in keys])) @ query)
                at = 0
                for key in keys:
                    cosine_of[key] = cosines[at : at + rows_of[key].size].astype(np.float64)
                    at += rows_of[key].size
        best_row = {(h[2].name, h[1]): h[0] for h in reversed(found)}  # the best row's score of each message
        for (name, source), (part, row) in messages.items():
            rows = rows_of[(name, source)]
            if (name, source) not in cosine_of:
                scored.append((best_row[(name, source)], source, part, row))
                continue
            cosines = cosine_of[(name, source)]
            parts = part.parts[rows]
            whole = [float(c) for c, p in zip(cosines, parts, strict=True) if p == 0]
            pieces = [(float(c), int(p)) for c, p in zip(cosines, parts, strict=True) if p > 0]
            if pieces:
                passage_of[(name, source)] = max(pieces)[1] - 1
            scored.append((passage_score(whole[0] if whole else None, [c for c, _ in pieces]), source, part, row))
        scored.sort(key=lambda h: (-h[0], str(h[1])))
        return scored, passage_of

    def _nearest_between(self, part: _Partition, query: Vectors, k: int, when: TimeRange,
                         conversations: set[str] | None) -> list[tuple[float, int]]:
        """The nearest ``k`` rows of a journal partition whose messages' times are within ``when`` (of these
        ``conversations``, when given), by the rows' times the partition keeps (``_times_of``); they are searched
        exactly, and when they are many in a graph, the graph's nearest are searched wider and kept when they are
        among them. (Asking the journal which messages are within the times read a million of them, 0.4-0.5 s,
        and every such search at a million messages answered by keyword, past its deadline.)"""
        times = self._times_of(part)
        inside = part.alive[: len(times)].copy()
        if when.after is not None:
            inside &= times > _micros(when.after)
        if when.before is not None:
            inside &= times < _micros(when.before)
        inside &= times >= 0
        if conversations is not None:
            held = np.zeros(len(inside), dtype=bool)
            rows = part.rows_in(conversations)
            held[rows[rows < len(held)]] = True
            inside &= held
        rows = np.flatnonzero(inside)
        if not rows.size:
            return []
        if part.graph is not None and rows.size > TIME_EXACT_MAX:
            wide = part.nearest(query, time_wide(k, rows.size, part.size))  # (size: the live rows, as counted)
            return [(score, row) for score, row in wide if row < len(inside) and inside[row]][:k]
        return part.nearest(query, k, rows, self._vectors_of(part, rows))

    def _times_of(self, part: _Partition) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Each row's message time (``_Partition.times``), the rows not read yet read now: every message of the
        partition's journal in one pass the first time (at a million messages about 2 s: the indexer does it once
        caught up, ``read_times``, before a search has to), then the few written since, by id."""
        with part.times_lock:
            count = len(part.sources)
            times = part.times
            if len(times) < count:
                times = np.concatenate([times, np.full(count - len(times), TIME_UNREAD, dtype=np.int64)])
            unread = np.flatnonzero((times[:count] == TIME_UNREAD) & part.alive[:count])
            if unread.size:
                ids, values = self._message_times(part, part.sources[unread], whole=unread.size > count // 2)
                for begin in range(0, unread.size, TIMES_BATCH):  # (a few MB of temporaries at a time)
                    rows = unread[begin : begin + TIMES_BATCH]
                    sources = part.sources[rows]
                    at = np.clip(np.searchsorted(ids, sources), 0, max(len(ids) - 1, 0))
                    hit = ids[at] == sources if len(ids) else np.zeros(len(sources), dtype=bool)
                    times[rows] = np.where(hit, values[at] if len(ids) else TIME_GONE, TIME_GONE)
            part.times = times
            return times[:count]

    def _message_times(self, part: _Partition, sources: np.ndarray[Any, np.dtype[np.int64]], *, whole: bool,
                       ) -> tuple[np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.int64]]]:
        """The ids and times (µs) of these messages, ids ascending: read by id, or (``whole``) with every message
        of the partition's journal in one pass."""
        conn = self.db.connection()
        if whole:
            _, account, agent, user = part.name.split(_SEP)
            cursors: Iterable[sqlite3.Cursor] = [conn.execute(
                "SELECT m.id, m.created_at FROM messages m JOIN conversations c ON c.id = m.conversation_id "
                "WHERE c.account_id=? AND c.agent=? AND c.user_key=?", (account, agent, user))]
        else:
            cursors = (conn.execute(f"SELECT id, created_at FROM messages WHERE id IN ({','.join('?' * len(chunk))})",
                                    tuple(chunk)) for chunk in _chunks(sorted(set(sources.tolist()))))
        id_parts, value_parts = [], []
        for cursor in cursors:  # a batch at a time: a million rows at once held 300 MB more than their arrays
            while rows := cursor.fetchmany(TIMES_BATCH):
                id_parts.append(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
                value_parts.append(_micros_of([str(r[1]) for r in rows]))
        ids = np.concatenate(id_parts) if id_parts else np.zeros(0, dtype=np.int64)
        values = np.concatenate(value_parts) if value_parts else np.zeros(0, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        return ids[order], values[order]

    def _vectors_of(self, part: _Partition, rows: np.ndarray[Any, np.dtype[np.int64]]) -> Vectors:
        """The rows' vectors: the matrix's; or the graph's own, normalised (its 8-bit integers read as floats: a
        cosine within 0.003 of the stored vector's; reading them from the database took 0.44 s for 2,000 rows
        spread through a journal of a million messages and 3.3 s for 20,000, the graph 6 and 39 ms); else, for a
        node the graph no longer holds, the database's."""
        if part.matrix is not None:
            picked: Vectors = part.matrix[part.node_of[rows]]
            return picked
        graph = part.graph
        if graph is not None and rows.size:
            held = graph.get(part.node_of[rows], dtype=np.float32)
            if all(vector is not None for vector in held):
                vectors = np.vstack(held).astype(np.float32, copy=False)
                normalised: Vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
                return normalised
        sources = [int(s) for s in part.sources[rows]]
        parts = [int(p) for p in part.parts[rows]]
        kind = part.name.split(_SEP, 1)[0]
        blobs: dict[tuple[int, int], bytes] = {}
        conn = self.db.connection()
        for chunk in _chunks(sorted(set(sources))):
            marks = ",".join("?" * len(chunk))
            blobs.update(((int(s), int(p)), v) for s, p, v in conn.execute(
                f"SELECT source, part, vector FROM vectors WHERE kind=? AND source IN ({marks})", (kind, *chunk)))
        return np.stack([np.frombuffer(blobs[(s, p)], dtype=np.float32) for s, p in zip(sources, parts, strict=True)])

    def _partition(self, name: str) -> _Partition | None:
        """The partition, loaded on its first query: from its saved graph when there is one (``vector_graphs.py``),
        else from the database; then brought up to date as the loaded ones are. One thread loads it, and a query
        of it waits for that one; the queries of other partitions do not."""
        with self._lock:
            cached = self._partitions.get(name)
            if cached is not None:
                return cached
            loading = self._loading.setdefault(name, threading.Lock())
        with loading:
            with self._lock:
                cached = self._partitions.get(name)
                if cached is not None:
                    return cached
            started = time.monotonic()
            # where the whole index is first (a process that has not searched yet is at row 0): a partition is
            # loaded as of there, or the next refresh would add every row it holds to it again
            self._refresh()
            part, how = self._load_saved(name), "saved graph"
            if part is None:
                part, how = self._build(name), "database"
            with self._lock:
                part.graph_later = self.background
                self._partitions[name] = part
                self._loading.pop(name, None)
            if part.graph is not None:
                logger.info("a large partition of the semantic index was loaded", extra={
                    "partition": name, "vectors": part.size, "source": how,
                    "seconds": round(time.monotonic() - started, 3)})
            return part

    def _load_saved(self, name: str) -> _Partition | None:
        """The partition from its saved graph, brought up to date (None: none saved, or not usable)."""
        saved = self.graphs.load(name, embedder=self.embedder.name, dimension=self.dimension)
        if saved is None:
            return None
        try:
            part = _Partition.from_saved(name, self.dimension, saved.arrays, saved.graph)
        except (KeyError, ValueError, IndexError):
            logger.exception("a saved graph's arrays do not fit together: it is built again", extra={"partition": name})
            self.graphs.forget(name)
            return None
        part.saved_at = 0
        if not self._bring_up(part, saved.seen, saved.removed):
            logger.info("the removal log no longer reaches back to a saved graph: it is built again",
                        extra={"partition": name})
            self.graphs.forget(name)
            return None
        return part

    def _build(self, name: str) -> _Partition:
        """The partition from the database's vectors, brought up to date."""
        while True:
            with self._lock:
                seen, removed = self._seen, self._removed
            part = _Partition(name, self.dimension)
            cursor = self.db.connection().execute(
                "SELECT partition, source, part, label, seq, vector FROM vectors WHERE partition=? AND embedder=? "
                "AND id <= ? ORDER BY id", (name, self.embedder.name, seen),
            )
            while rows := cursor.fetchmany(LOAD_CHUNK):
                _add_rows(part, rows, self.dimension)
            if self._bring_up(part, seen, removed):
                return part

    def _bring_up(self, part: _Partition, seen: int, removed: int) -> bool:
        """Bring a partition not yet loaded, which holds the vectors up to row ``seen`` and removal ``removed``,
        to where the loaded ones are: most of the way without the lock (queries of other partitions go on), the
        rest with it. False when the removal log no longer reaches back to ``removed``."""
        conn = self.db.connection()
        with self._lock:
            if (seen, removed) > (self._seen, self._removed):  # saved by a process further on: go there first
                self._refresh_locked(conn, *_newest(conn))
            to = (self._seen, self._removed)
        if not self._bring(conn, part, (seen, removed), to):
            return False
        with self._lock:
            if to < (self._seen, self._removed) and not self._bring(conn, part, to, (self._seen, self._removed)):
                return False
        return True

    def _bring(self, conn: sqlite3.Connection, part: _Partition, at: tuple[int, int], to: tuple[int, int]) -> bool:
        """Apply to ``part`` the removals, then the vectors, after ``at`` up to ``to`` (row, removal): as
        ``_refresh`` does for the loaded partitions."""
        (seen, removed), (to_seen, to_removed) = at, to
        if to_removed > removed:
            logged = _removals(conn, removed, to_removed)
            if logged is None:
                return False
            gone = [(source, number) for name, source, number in logged if name == part.name]
            if gone:  # (a graph saved by a process that had not applied them yet: its files go too)
                part.remove([source for source, _ in gone], [number for _, number in gone])
                part.saved_at, part.unsaved_since = None, time.monotonic()
                self.graphs.forget(part.name)
        if to_seen > seen:
            cursor = conn.execute(
                "SELECT partition, source, part, label, seq, vector FROM vectors WHERE partition=? AND embedder=? "
                "AND id > ? AND id <= ? ORDER BY id", (part.name, self.embedder.name, seen, to_seen),
            )
            while rows := cursor.fetchmany(LOAD_CHUNK):
                _add_rows(part, rows, self.dimension)
        return True

    def _unsaved(self, names: Iterable[str]) -> None:
        """These partitions lost vectors: their saved graphs are removed (what was erased does not stay on disk),
        and those loaded are saved again later (``_Partition.due``). Called with the lock held."""
        now = time.monotonic()
        for name in names:
            self.graphs.forget(name)
            part = self._partitions.get(name)
            if part is not None:
                part.saved_at, part.unsaved_since = None, now

    def build_graphs(self) -> int:
        """The indexer, between two batches: build the graph of each loaded partition past ANN_THRESHOLD that is
        still a matrix (``graph_later``), without the lock (its queries are answered by the matrix meanwhile, the
        other partitions' as ever), adding the nodes that came meanwhile the same way until at most
        GRAPH_SWAP_MAX are left; then, with the lock, add those, drop the nodes gone since, and put the graph in
        the matrix's place. How many were built."""
        with self._lock:
            pending = [(name, part) for name, part in self._partitions.items() if part.graph_pending]
        built = 0
        for name, part in pending:
            started = time.monotonic()
            graph: Any = None
            held = np.zeros(0, dtype=np.int64)  # the nodes in the graph
            while True:
                with self._lock:
                    if self._partitions.get(name) is not part or not part.graph_pending:
                        break
                    matrix, firsts = part.matrix, np.array(part.node_first, dtype=np.int64)
                    assert matrix is not None
                    newer = np.flatnonzero(firsts >= 0)
                    newer = newer[newer >= (int(held[-1]) + 1 if held.size else 0)]
                    if graph is not None and newer.size <= GRAPH_SWAP_MAX:
                        if newer.size:
                            graph.add(newer, matrix[newer], threads=GRAPH_THREADS)
                        gone = held[firsts[held] < 0]
                        if gone.size:
                            graph.remove(gone)
                        part.graph, part.matrix = graph, None
                        built += 1
                        logger.info("a partition of the semantic index is now searched through a graph", extra={
                            "partition": name, "vectors": part.size,
                            "seconds": round(time.monotonic() - started, 3)})
                        break
                if graph is None:
                    graph = _graph_of(self.dimension, newer, matrix)
                else:
                    graph.add(newer, matrix[newer], threads=GRAPH_THREADS)
                held = np.concatenate([held, newer])
        return built

    def load_written(self) -> int:
        """The indexer, or a thread following it, between two batches: load each partition that at least
        ``LOAD_WRITTEN_MIN`` vectors were written to since the thread first looked (an import), as the
        partition's first query would, so that the query finds it loaded. A journal imported into a fresh
        ``agentmem serve`` was read from the database by each worker's first search of it, past that search's
        deadline (``bench/serve_lag.py``). A partition written to a few vectors at a time (a conversation's turns)
        is loaded by its first query, in milliseconds, and one nobody searches takes no memory. How many were
        loaded."""
        conn = self.db.connection()
        newest = _newest(conn)[0]
        if self._written_seen is None or newest < self._written_seen:  # (the first look; a database replaced)
            self._written_seen = newest
            return 0
        if newest == self._written_seen:
            return 0
        for name, count in conn.execute("SELECT partition, count(*) FROM vectors WHERE id > ? AND id <= ? "
                                        "GROUP BY partition", (self._written_seen, newest)):
            self._written[str(name)] = self._written.get(str(name), 0) + int(count)
        self._written_seen = newest
        if len(self._written) > WRITTEN_KEPT:  # (many tenants, each written a little: the most written kept)
            self._written = dict(sorted(self._written.items(), key=lambda item: -item[1])[: WRITTEN_KEPT // 2])
        loaded = 0
        for name, count in list(self._written.items()):
            with self._lock:
                held = name in self._partitions
            if held:
                del self._written[name]
            elif count >= LOAD_WRITTEN_MIN:
                self.wait_for_queries(WORKER_YIELD_S)
                self._partition(name)
                del self._written[name]
                loaded += 1
        return loaded

    def read_times(self) -> int:
        """The indexer, or a thread following it, caught up: read the message times of a loaded journal partition
        searched through a graph that has rows whose times are not read yet (``_times_of``), as its first search
        bounded in time would: at a million messages about 2 s, which that search spent past its deadline. The
        times are saved with the graph, so a process that loads it reads only the rows written since. How many
        rows were read (one partition a call: the queries between two go first)."""
        with self._lock:
            unread = [part for name, part in self._partitions.items()
                      if name.startswith("message" + _SEP) and part.graph is not None
                      and len(part.times) < len(part.sources)]
        if not unread:
            return 0
        before = len(unread[0].times)
        return len(self._times_of(unread[0])) - before

    def load_saved(self) -> int:
        """Load every partition that has a saved graph (``agentmem serve``'s indexer, as it starts: the first
        queries find them loaded); how many."""
        names = self.graphs.partitions()
        for name in names:
            self._partition(name)
        return len(names)

    def save_graphs(self, *, force: bool = False) -> list[dict[str, Any]]:
        """Save the graphs of the loaded partitions that are due (``_Partition.due``; ``force``: every one changed
        since it was saved, as a process stops); what was saved: partition, vectors, bytes and seconds. Each is
        brought up to date first, so a graph is never written back with vectors another process removed (the
        indexer calls this whenever it is idle: a removal reaches the graphs it holds within moments)."""
        saved: list[dict[str, Any]] = []
        with self._lock:
            names = [name for name, part in self._partitions.items() if part.graph is not None]
        conn = self.db.connection()
        for name in names:
            with self._lock:  # (a query of it waits the few seconds a save of millions of vectors takes)
                # what another process removed leaves first (its files went with it: never written back)
                self._refresh_locked(conn, *_newest(conn))
                part = self._partitions.get(name)  # (a graph, once made, is never a matrix again)
                if part is None:
                    continue
                unlike = part.saved_at != part.changes or len(part.times) != part.times_saved  # (its file)
                if not (part.due(time.monotonic()) or (force and unlike)):
                    continue
                started = time.monotonic()
                arrays = part.arrays()
                try:
                    written = self.graphs.save(name, arrays, part.graph, seen=self._seen,
                                               removed=self._removed, embedder=self.embedder.name,
                                               dimension=self.dimension)
                except OSError:
                    logger.exception("a graph of the semantic index could not be saved", extra={"partition": name})
                    part.unsaved_since = time.monotonic()  # tried again SAVE_DELAY_S later
                    continue
                part.saved_at, part.times_saved = part.changes, len(arrays["times"])
            row = {"partition": name, "vectors": part.size, "bytes": written,
                   "seconds": round(time.monotonic() - started, 3)}
            logger.info("a graph of the semantic index was saved", extra=row)
            saved.append(row)
        return saved

    def reindex(self, *, memory: str | None = None, journal: bool = False) -> int:
        """Queue entries (of one memory) and/or messages again, and forget vectors of other embedders: after a
        change of embedder or dimension. ``catch_up`` (or the worker) then rebuilds; answers how many were queued."""
        with self.db.write() as conn:
            before = int(conn.execute("SELECT count(*) FROM index_queue").fetchone()[0])
            conn.execute("DELETE FROM vectors WHERE embedder != ?", (self.embedder.name,))
            if not journal or memory is not None:
                where, params = ("AND memory=?", (memory,)) if memory is not None else ("", ())
                conn.execute("INSERT INTO index_queue (kind, source) SELECT 'entry', rowid FROM entries "
                             f"WHERE conversation IS NULL {where}", params)
            if journal or memory is None:
                conn.execute("INSERT INTO index_queue (kind, source) SELECT 'message', id FROM messages")
            queued = int(conn.execute("SELECT count(*) FROM index_queue").fetchone()[0]) - before
        with self._lock:
            self._partitions.clear()
            self.graphs.forget_all()
        return queued


def _newest(conn: sqlite3.Connection) -> tuple[int, int]:
    """The newest vector row and removal (one statement: one snapshot of both)."""
    newest, removed = conn.execute(
        "SELECT (SELECT coalesce(max(id), 0) FROM vectors), (SELECT coalesce(max(id), 0) FROM vector_removals)"
    ).fetchone()
    return int(newest), int(removed)


def _removals(conn: sqlite3.Connection, after: int, upto: int) -> list[tuple[str, int, int]] | None:
    """(partition, source, part) of the vectors removed after removal ``after`` up to ``upto``; None when the log
    no longer reaches back that far (it keeps the newest KEEP_REMOVALS)."""
    rows = conn.execute("SELECT partition, source, part FROM vector_removals WHERE id > ? AND id <= ?",
                        (after, upto)).fetchall()
    return None if len(rows) != upto - after else [(str(r[0]), int(r[1]), int(r[2])) for r in rows]


def _micros_of(stamps: list[str]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Stored times (``iso``, all in one shape) as microseconds since the epoch, read by numpy at once; one by one
    when one of them is in another shape."""
    try:
        return np.array([t[:-1] if t.endswith("Z") else "?" for t in stamps], dtype="datetime64[us]").astype(np.int64)
    except ValueError:
        return np.fromiter((_micros(t) for t in stamps), dtype=np.int64, count=len(stamps))


def _micros(stamp: str) -> int:
    """A stored time (``iso``: ``2026-12-02T13:00:49.000000Z``) as microseconds since the epoch, ordered as the
    text is."""
    moment = parse_iso(stamp)
    return (moment - _EPOCH) // timedelta(microseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _queued_in(queued: int, messages: int, where: str) -> str:
    """The FROM and WHERE of the queued messages of the conversations ``where`` names (conditions on ``c``), read
    from the cheaper side (QUEUE_READ_FACTOR): the queue's ``queued`` rows, each message and its conversation
    looked up; or the conversations' ``messages``, each looked up in the queue by what it names
    (``index_queue_by_source``). CROSS JOIN keeps the order written: a large import's queue is not read through
    for a conversation of a few messages (another tenant's search while one imports), nor a long journal's
    messages for a queue of a few."""
    if queued <= QUEUE_READ_FACTOR * messages:  # (+: the queue read in its own order)
        return ("FROM index_queue q CROSS JOIN messages m ON m.id = q.source CROSS JOIN conversations c "
                f"ON c.id = m.conversation_id WHERE +q.kind = 'message' AND {where}")
    return ("FROM conversations c CROSS JOIN messages m ON m.conversation_id = c.id CROSS JOIN index_queue q "
            f"ON q.kind = 'message' AND q.source = m.id WHERE {where}")


# a query's filters as columns: of a journal's conversations (``c``), and of memory entries (``e``)
_JOURNAL_SCOPE = (("account", "c.account_id"), ("agent", "c.agent"), ("user", "c.user_key"), ("conversation", "c.key"))
_ENTRY_SCOPE = (("account", "e.account_id"), ("memory", "e.memory"), ("user", "e.layer_user"))


def _scope_of(filters: Filters) -> tuple[str, ...]:
    """What a query's filters say of its scope (whose documents, not how they are searched): the key of its lag."""
    return tuple(sorted(f"{k}={v}" for k, v in filters.items()
                        if k in ("kind", "account", "agent", "memory", "user", "conversation")))


def _conditions(filters: Filters, columns: Sequence[tuple[str, str]]) -> tuple[str, list[str]]:
    """``filters``' values as SQL conditions on ``columns`` (name, column), joined by AND, and their parameters."""
    where, params = ["1"], []
    for name, column in columns:
        if name in filters:
            values = filter_values(filters[name])
            where.append(f"{column} IN ({','.join('?' * len(values))})")
            params += values
    return " AND ".join(where), params


def _chunks(values: Sequence[int], size: int = 900) -> Iterator[Sequence[int]]:
    """``values`` in slices small enough for one ``IN (...)`` of SQLite's."""
    for begin in range(0, len(values), size):
        yield values[begin : begin + size]


def _add_rows(part: _Partition, rows: Sequence[tuple[Any, ...]], dimension: int) -> None:
    """Rows of (partition, source, part, label, seq, vector) added to ``part``."""
    vectors = np.frombuffer(b"".join(r[5] for r in rows), dtype=np.float32).reshape(len(rows), dimension)
    part.add([r[1] for r in rows], [r[3] for r in rows], [r[4] or 0 for r in rows], vectors, [r[2] for r in rows])


class _Multimap:
    """Whole-number keys to the whole numbers added under each, in the order added: most of them in two arrays
    sorted by key, the newest in a dict, folded into the arrays once it holds FOLD_AT. (A partition's rows of
    each source and nodes of each vector key were dicts: about 460 MB of Python objects for two million vectors;
    the arrays hold them in 32 MB.)"""

    FOLD_AT = 65_536

    def __init__(self, dtype: Any) -> None:
        self.keys: np.ndarray[Any, Any] = np.zeros(0, dtype=dtype)
        self.values: np.ndarray[Any, np.dtype[np.int64]] = np.zeros(0, dtype=np.int64)
        self.more: dict[int, list[int]] = {}
        self._pending = 0

    @classmethod
    def of(cls, keys: np.ndarray[Any, Any], values: np.ndarray[Any, Any]) -> _Multimap:
        made = cls(keys.dtype)
        order = np.argsort(keys, kind="stable")
        made.keys, made.values = keys[order], values[order].astype(np.int64)
        return made

    def add(self, key: int, value: int) -> None:
        """(Into the dict: ``settle`` folds it once a batch of adds is done, never in the middle of one.)"""
        self.more.setdefault(key, []).append(value)
        self._pending += 1

    def settle(self) -> None:
        """Fold the dict into the arrays once it holds FOLD_AT values."""
        if self._pending >= self.FOLD_AT:
            self.fold()

    def get(self, key: int) -> list[int]:
        """The values added under ``key``, in the order added."""
        probe = self.keys.dtype.type(key)
        low, high = np.searchsorted(self.keys, probe, "left"), np.searchsorted(self.keys, probe, "right")
        found: list[int] = self.values[low:high].tolist() if high > low else []
        newer = self.more.get(key)
        return found + newer if newer else found

    def last_of(self, keys: np.ndarray[Any, Any]) -> np.ndarray[Any, np.dtype[np.int64]]:
        """For each of ``keys``, the last value the arrays hold under it (-1: none; the dict is not looked at)."""
        out = np.full(len(keys), -1, dtype=np.int64)
        if not len(self.keys) or not len(keys):
            return out
        at = np.searchsorted(self.keys, keys.astype(self.keys.dtype), "right") - 1
        hit = at >= 0
        hit[hit] = self.keys[at[hit]] == keys[hit]
        out[hit] = self.values[at[hit]]
        return out

    def fold(self) -> None:
        """The dict's values into the arrays (after those already there, under each key)."""
        if not self.more:
            return
        keys = np.fromiter((k for k, vs in self.more.items() for _ in vs), dtype=self.keys.dtype, count=self._pending)
        values = np.fromiter((v for vs in self.more.values() for v in vs), dtype=np.int64, count=self._pending)
        keys, values = np.concatenate([self.keys, keys]), np.concatenate([self.values, values])
        order = np.argsort(keys, kind="stable")
        self.keys, self.values, self.more, self._pending = keys[order], values[order], {}, 0


def _graph_of(dimension: int, nodes: np.ndarray[Any, np.dtype[np.int64]], matrix: Vectors) -> Any:
    """An HNSW graph (usearch) of these nodes, keyed by node, their vectors the matrix's rows of those numbers."""
    from usearch.index import Index

    graph = Index(ndim=dimension, metric=GRAPH_METRIC, dtype=GRAPH_KIND, connectivity=16,
                  expansion_add=GRAPH_EXPANSION_ADD, expansion_search=GRAPH_EXPANSION_SEARCH)
    for begin in range(0, nodes.size, LOAD_CHUNK):
        chunk = nodes[begin : begin + LOAD_CHUNK]
        graph.add(chunk, matrix[chunk], threads=GRAPH_THREADS)
    return graph


def _groups(keys: np.ndarray[Any, Any], rows: np.ndarray[Any, np.dtype[np.int64]], key: Any, *,
            lists: bool = True) -> dict[Any, Any]:
    """``rows`` grouped by their ``keys`` (each group in ascending order), a group's key made by ``key``; each group
    a list, or (``lists`` False) an array."""
    if not len(rows):
        return {}
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    groups = np.split(rows[order], starts[1:])
    return {key(k): group.tolist() if lists else group for k, group in zip(ordered[starts].tolist(), groups,
                                                                            strict=True)}


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


class IndexWorker:
    """``agentmem serve``'s indexer: a daemon thread that keeps the vector index caught up with the store. With
    ``follow``, the thread of a process beside another's indexer (``agentmem serve --workers N``, all but the
    first): it catches up with nothing, but brings the loaded partitions up to date as the indexer writes and
    builds the graphs of those that grow past the threshold, so that a search finds little to add itself (a
    search that added what the indexer wrote, a graph's build among it, waited seconds past its deadline)."""

    def __init__(self, index: SqliteVectorIndex, *, idle_s: float = 0.05, follow: bool = False) -> None:
        self.index = index
        self.idle_s = idle_s
        self.follow = follow
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self.index.background = True
            name = "agentmem-follower" if self.follow else "agentmem-indexer"
            self._thread = threading.Thread(target=self._run, name=name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread, and save the graphs changed since they were saved: the next start loads them."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.index.background = False
        if self.follow:
            return  # (the indexer saves the graphs)
        try:
            self.index.save_graphs(force=True)
        except Exception:  # stopping goes on: the next start builds what it cannot load
            logger.exception("the semantic index's graphs could not be saved as the indexer stopped")

    def _quiet(self) -> None:
        """Reading ahead, between two layers of the model: until no query runs nor has for READ_AHEAD_QUIET_S
        (at most WORKER_YIELD_S for one that runs, as the vectors' batches wait), and READ_AHEAD_WAIT_S in all."""
        until = time.monotonic() + READ_AHEAD_WAIT_S
        self.index.wait_for_queries(WORKER_YIELD_S)
        while not self._stop.is_set():
            quiet = min(READ_AHEAD_QUIET_S - (time.monotonic() - self.index.last_query_s), until - time.monotonic())
            if quiet <= 0:
                return
            self._stop.wait(quiet)
            self.index.wait_for_queries(WORKER_YIELD_S)

    def _run(self) -> None:
        """First the partitions with saved graphs are loaded. Then small batches (WORKER_BATCH), and between two of
        them the queries running now go first: a query never waits for the indexer (it answers over what is
        indexed), and the indexer leaves it the CPU. Caught up, it reads the token states of the journal's new
        messages for mode=deep (``read_ahead``), a few hundred tokens at a time, the vectors still first and
        queries before both; then the times of a large journal's rows not read yet (``read_times``); and saves
        the graphs that are due (``SqliteVectorIndex.save_graphs``). Between two batches it builds the graph of a
        partition that grew past the threshold (``build_graphs``), and loads a partition an import wrote to that
        no query has loaded yet (``load_written``). Following (``follow``): the saved graphs loaded first, then,
        between the queries running, the graphs built beside them, the loaded partitions brought up to date with
        what the other process's indexer wrote and their times read, and the partitions an import wrote to
        loaded; nothing caught up, read ahead or saved."""
        ahead = None if self.follow else self.index.read_ahead
        if ahead is not None:
            ahead.pause = self._quiet
            ahead.yielding = lambda: self._stop.is_set() or self.index.pending() > 0
        try:  # the partitions whose graphs were saved are loaded before the first queries ask for them
            self.index.load_saved()
        except Exception:  # each is built from the database on its first query instead
            logger.exception("the semantic index's saved graphs could not be loaded")
        while not self._stop.is_set():
            self.index.wait_for_queries(WORKER_YIELD_S)
            try:
                self.index.build_graphs()  # (a partition that grew past the threshold: its graph, beside it)
                if self.follow:  # another process's indexer writes: what it wrote comes into the loaded partitions
                    self.index.refresh()
                    applied = self.index.read_times()
                else:
                    queried = time.monotonic() - self.index.last_query_s < QUERIED_RECENTLY_S
                    self.index.yield_to_waiting()  # (a query of another worker waiting to apply its own first)
                    applied = self.index.catch_up(WORKER_BATCH_QUERIED if queried else WORKER_BATCH)
                    if not applied and ahead is not None:
                        applied = ahead.read_some()
                    if not applied:  # the times of a journal's new rows, for its searches bounded in time
                        applied = self.index.read_times()
                    if not applied:  # caught up: the graphs grown or changed enough since they were saved
                        self.index.save_graphs()
                self.index.load_written()  # (a partition an import writes to is loaded before its first query)
            except Exception:  # a bad moment (a locked database, a failing embedder): try again shortly
                logger.exception("the semantic indexer could not catch up" if not self.follow else
                                 "the semantic index could not follow the indexer")
                applied = 0
            if not applied:
                self._stop.wait(self.idle_s)
