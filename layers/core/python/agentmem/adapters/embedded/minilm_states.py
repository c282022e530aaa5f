"""all-MiniLM-L6-v2's token states of journal messages and entries, read when they are indexed, for ``mode=deep``.

The re-ranking stage (``minilm_reranker.py``) reads each candidate's token states: through the model, about half
a millisecond of CPU a token on numpy, so a first deep search over 50 candidates it has not read costs a second or
more. The embedded indexer reads them ahead instead (``read_some``, when the vector index is caught up, one
small batch at a time, letting running queries go first between two layers of the model: ``IndexWorker``), and
keeps them here (``token_states``, migration 21): one row per text the stage would read of a message (the
message, or each passage of a long one: ``domain/passages.py``), keyed by the model and the text (``key``), int8
(the unit rows times 127: 384 bytes a token). A deep search then reads no model forward pass for an indexed candidate.

Entries too (``entry_token_states``, migration 22): one row per entry, of the text recall reads it by
(``entry_index_text``), queued by triggers when an entry is saved or changed (``entry_token_queue``) and read before
the journal's messages: a memory is recalled on every turn of its agents, so an agent's first deep recall over it
reads no model either. An entry changed meanwhile keeps its place in the queue and is read again.

Bounded: at most ``max_tokens`` token rows (``AGENTMEM_RERANK_STORE_TOKENS``, 1,000,000 by default: about
400 MB) of both, the entries' and the newest messages' kept, the oldest messages out first (entries are read only
while theirs stay within the bound); far behind (an upgrade over a large journal), the reader
starts at the newest messages the bound can hold. A message deleted or changed loses its rows (triggers, in the
same transaction: an erasure leaves nothing of what it said here). A message not read yet (or out of the bound)
is read by the stage at search time, within its budget (``rerank_partial``).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...domain.context import row_text
from ...domain.passages import long_passages
from ...domain.text import entry_index_text
from . import minilm

if TYPE_CHECKING:
    from .database import Database

STORE_TOKENS = 1_000_000  # token rows kept, 384 bytes each
READ_TOKENS = 128  # tokens one forward pass of the indexer reads (some 60 ms of one core, 10 a layer)
_ROWS_A_BATCH = 64  # queued entries, or journal messages, one batch looks at
_FAR_BEHIND = 1000  # messages: past this, the reader starts at the newest messages the bound can hold...
_CHARS_A_TOKEN = 3.0  # ... guessed from their length (passages overlap: a little more than 4 characters a token)
_SCALE = 127.0


def key(text: str) -> bytes:
    """What identifies a text's token states: the model and the text."""
    return hashlib.blake2b(f"{minilm.MODEL}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).digest()


def texts_read(text: str) -> list[tuple[int, str]]:
    """(part, text) of what the re-ranking stage reads of a message that says ``text``: the message itself (part
    0), or each passage of a long one (parts 1, 2, ...), as journal search hands the matching one to it."""
    if not text.strip():
        return []
    cut = long_passages(text)
    return [(part, p.of(text)) for part, p in enumerate(cut, start=1)] if cut else [(0, text)]


def quantise(unit: np.ndarray) -> bytes:
    return bytes(np.clip(np.rint(unit * _SCALE), -127, 127).astype(np.int8).tobytes())


def dequantise(blob: bytes, width: int) -> np.ndarray:
    rows: np.ndarray = np.frombuffer(blob, dtype=np.int8).reshape(-1, width).astype(np.float32)
    rows *= np.float32(1.0 / _SCALE)
    return rows


class TokenStates:
    def __init__(self, db: Database, *, max_tokens: int = STORE_TOKENS) -> None:
        self.db = db
        self.max_tokens = max_tokens
        self.read_s = 0.0  # time spent reading (the benchmark's throughput)
        self.read_chars = 0
        self.read_messages = 0
        self.read_entries = 0
        self.read_tokens = 0
        # called before each layer of a forward pass (the indexer: running queries go first)
        self.pause: Callable[[], None] = lambda: None
        # asked between two forward passes: whether to stop the batch there (the indexer: the vectors have work)
        self.yielding: Callable[[], bool] = lambda: False

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The unit token states (float32, one row a token) held for these keys."""
        wanted = list(dict.fromkeys(keys))
        found: dict[bytes, np.ndarray] = {}
        conn = self.db.connection()
        width = minilm.load().width
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for text_hash, blob in conn.execute(
                    f"SELECT text_hash, states FROM token_states WHERE text_hash IN ({marks}) UNION ALL "
                    f"SELECT text_hash, states FROM entry_token_states WHERE text_hash IN ({marks})", chunk * 2):
                found.setdefault(bytes(text_hash), dequantise(blob, width))
        return found

    def held(self) -> int:
        """Token rows held now."""
        return int(self.db.connection().execute("SELECT tokens FROM token_reader").fetchone()[0])

    def behind(self) -> int:
        """Journal messages the reader has not reached yet."""
        conn = self.db.connection()
        after = int(conn.execute("SELECT after FROM token_reader").fetchone()[0])
        return int(conn.execute("SELECT count(*) FROM messages WHERE id > ?", (after,)).fetchone()[0])

    def entries_behind(self) -> int:
        """Entries saved or changed that the reader has not read yet."""
        return int(self.db.connection().execute("SELECT count(*) FROM entry_token_queue").fetchone()[0])

    def read_some(self, tokens: int = READ_TOKENS) -> int:
        """The indexer's share: read the token states of the next entries queued, else of the next messages, about
        ``tokens`` tokens of them (at least one entry or message), and keep them; how many entries or messages
        were passed (0: nothing left to read)."""
        if self.max_tokens <= 0:
            return 0
        return self._read_entries(tokens) or self._read_messages(tokens)

    def _read_entries(self, tokens: int) -> int:
        conn = self.db.connection()
        room = self.max_tokens - int(conn.execute("SELECT entry_tokens FROM token_reader").fetchone()[0])
        rows = conn.execute(
            "SELECT q.entry, e.rowid, e.name, e.description, e.content FROM entry_token_queue q "
            "LEFT JOIN entries e ON e.rowid = q.entry AND e.conversation IS NULL ORDER BY q.entry LIMIT ?",
            (_ROWS_A_BATCH,)).fetchall()
        if not rows:
            return 0
        started = time.perf_counter()
        model = minilm.load()
        gone = [(int(r[0]),) for r in rows if r[1] is None]  # (a checkpoint, or a row the triggers missed)
        wanted: list[tuple[int, str, str | None, str, bytes]] = []  # entry, name, description, content, key
        texts: dict[bytes, str] = {}
        counted = 0
        for r in (r for r in rows if r[1] is not None):
            text = entry_index_text(r[2], r[3], r[4])
            size = len(model.token_ids([text])[0])
            if counted + size > room:  # the bound is full: the rest are read at search time
                break
            wanted.append((int(r[0]), r[2], r[3], r[4], key(text)))
            texts[key(text)] = text
            counted += size
            self.read_chars += len(text)
            if counted >= tokens:
                break
        if not wanted and not gone:
            return 0
        known = self.get(list(texts))  # the same text in another memory, or a message: read once
        known.update(self._forward([t for k, t in texts.items() if k not in known], tokens))
        read = [w for w in wanted if w[4] in known]
        with self.db.write() as write:
            write.executemany("DELETE FROM entry_token_queue WHERE entry=?", gone)
            write.executemany("DELETE FROM entry_token_states WHERE entry=?", [(w[0],) for w in read])
            # (only for an entry still saying what was read; one changed meanwhile stays queued, for its new text)
            unchanged = ("EXISTS (SELECT 1 FROM entries WHERE rowid=? AND conversation IS NULL AND name IS ? "
                         "AND description IS ? AND content IS ?)")
            write.executemany(
                "INSERT INTO entry_token_states (entry, text_hash, tokens, states) "
                f"SELECT ?, ?, ?, ? WHERE {unchanged}",
                [(entry, k, len(known[k]), quantise(known[k]), entry, name, description, content)
                 for entry, name, description, content, k in read])
            write.executemany(f"DELETE FROM entry_token_queue WHERE entry=? AND {unchanged}",
                              [(entry, entry, name, description, content)
                               for entry, name, description, content, _ in read])
            self._bound(write)
        self.read_entries += len(read)
        self.read_s += time.perf_counter() - started
        return len(read) + len(gone)

    def _forward(self, fresh: list[str], tokens: int) -> dict[bytes, np.ndarray]:
        """The unit token states of ``fresh`` texts through the model, a few at a time (about ``tokens`` tokens a
        pass), running queries first before each layer; stopped between two passes when the indexer has
        vectors to write again (``yielding``): the texts read by then."""
        model = minilm.load()
        fresh = list(dict.fromkeys(fresh))
        lengths = [len(ids) for ids in model.token_ids(fresh)]
        read: dict[bytes, np.ndarray] = {}
        start = 0
        while start < len(fresh):
            if start and self.yielding():
                break
            end, size = start + 1, lengths[start]
            while end < len(fresh) and size + lengths[end] <= tokens:
                size += lengths[end]
                end += 1
            self.pause()
            for piece, states in zip(fresh[start:end], model.token_states(fresh[start:end], self.pause),
                                     strict=True):
                read[key(piece)] = minilm.unit_rows(states)
                self.read_tokens += len(states)
            start = end
        return read

    def _read_messages(self, tokens: int) -> int:
        from .conversations import _MESSAGE_COLUMNS, _message

        conn = self.db.connection()
        after = int(conn.execute("SELECT after FROM token_reader").fetchone()[0])
        newest = int(conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])
        if newest <= after:
            return 0
        if newest - after > _FAR_BEHIND:  # far behind: no reading what the bound would drop at once
            room = self.max_tokens - int(conn.execute("SELECT entry_tokens FROM token_reader").fetchone()[0])
            guess = 0.0
            for message, chars in conn.execute(
                    "SELECT id, length(content) FROM messages WHERE id > ? ORDER BY id DESC", (after,)):
                guess += chars / _CHARS_A_TOKEN + 2
                if guess > room:
                    after = int(message)
                    break
        rows = conn.execute(f"SELECT m.id, {_MESSAGE_COLUMNS} FROM messages m WHERE m.id > ? ORDER BY m.id LIMIT ?",
                            (after, _ROWS_A_BATCH)).fetchall()
        if not rows:
            return 0
        started = time.perf_counter()
        model = minilm.load()
        wanted: list[tuple[int, int, str, bytes]] = []  # message, part, text, key
        taken, counted, last = 0, 0, after
        contents: dict[int, str] = {}
        for taken, row in enumerate(rows, start=1):  # noqa: B007 - how many, after the loop
            text = row_text(_message(row))
            contents[int(row["id"])] = row["content"]
            parts = texts_read(text)
            for part, piece in parts:
                wanted.append((int(row["id"]), part, piece, key(piece)))
            counted += sum(len(ids) for ids in model.token_ids([p for _, p in parts])) if parts else 0
            self.read_chars += len(text)
            last = int(row["id"])
            if counted >= tokens:
                break
        known = self.get([k for *_, k in wanted])  # the same text under another message: read once
        # (a long message's passages a few at a time; stopped early, the messages read whole are kept and the
        # next batch starts after them)
        known.update(self._forward([piece for _, _, piece, k in wanted if k not in known], tokens))
        order = list(dict.fromkeys(message for message, *_ in wanted))
        whole = {m for m in order if all(k in known for message, _, _, k in wanted if message == m)}
        done = next((n for n, m in enumerate(order) if m not in whole), len(order))
        if done < len(order):  # stopped early: up to the last message read whole, in order
            wanted = [w for w in wanted if w[0] in set(order[:done])]
            taken = done
            last = order[done - 1] if done else after
            if not done:
                return 0
        with self.db.write() as write:
            # (a delete, then an insert: REPLACE would fire no delete trigger, and the rows held would be off)
            write.executemany("DELETE FROM token_states WHERE message=? AND part=?",
                              [(message, part) for message, part, _, _ in wanted])
            # (only for a message still there and saying what was read: one erased or changed meanwhile is not)
            write.executemany(
                "INSERT INTO token_states (message, part, text_hash, tokens, states) SELECT ?, ?, ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM messages WHERE id=? AND content=?)",
                [(message, part, k, len(known[k]), quantise(known[k]), message, contents[message])
                 for message, part, _, k in wanted])
            write.execute("UPDATE token_reader SET after = max(after, ?)", (last,))
            self._bound(write)
        self.read_messages += taken
        self.read_s += time.perf_counter() - started
        return taken

    def _bound(self, conn: sqlite3.Connection) -> None:
        """The oldest messages' rows out while more than ``max_tokens`` rows are held; past the messages', the
        entries read first."""
        while int(conn.execute("SELECT tokens FROM token_reader").fetchone()[0]) > self.max_tokens:
            dropped = conn.execute("DELETE FROM token_states WHERE message IN "
                                   "(SELECT DISTINCT message FROM token_states ORDER BY message LIMIT 64)").rowcount
            if not dropped and not conn.execute("DELETE FROM entry_token_states WHERE entry IN "
                                                "(SELECT entry FROM entry_token_states ORDER BY entry LIMIT 64)"
                                                ).rowcount:
                break
