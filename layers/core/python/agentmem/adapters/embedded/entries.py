"""Entries on SQLite: versions are checked inside the write transaction.

Versions of a name never repeat: when an entry goes (deleted, or removed once expired) its last version is
kept in ``entry_last_versions``, in the same transaction, and the name's next entry continues after it. A
purge of the layer or the memory forgets it with everything else.

History holds no copy of what the entry row holds (migration 15): the current version is the entry itself
(its row keeps the change that made it, ``operation``, and how long it is kept, ``keep_until``), and
``entry_history`` gets a version's snapshot only when a save replaces it, a delete removes it (then beside the
delete's own row) or it expires. A create writes no history row at all. ``history`` reads the two together.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, cast

from ...domain.cursor import decode_cursor, encode_cursor
from ...domain.errors import InvalidError, LayerFullError, NotFoundError, VersionConflictError
from ...domain.models import ACCOUNT_LAYER, Entry, EntryDraft, HistoryItem, Layer, Page
from ...domain.rules import DEFAULT_CATEGORY, DEFAULT_IMPORTANCE
from ...domain.search import FIELD_WEIGHTS
from ...ports.entries import EntryStore
from .database import Database
from .entry_words import forget_words, forget_words_where, index_words, scope_token

_LIVE = "(expires_at IS NULL OR expires_at > ?)"
_NAME_KEY = "account_id=? AND memory=? AND layer_user=? AND name=?"
_LIVE_E = "(e.expires_at IS NULL OR e.expires_at > ?)"
_LAYERS_A_STATEMENT = 100  # layers (or keys) one compound SELECT reads (SQLite allows 500 terms)
# what qualifies for the pinned block (domain.context.qualifies_for_pinning), as migration 11's index says it
_PINNABLE = ("conversation IS NULL AND (visibility = 'read_only' OR (category = 'user_profile' AND importance >= 0.7))")
_KEY_COLUMNS = frozenset({"account_id", "memory", "layer_user", "name"})  # equal in a row and its update
_HISTORY_COLUMNS = (
    "account_id, memory, layer_user, name, version, operation, content_hash, updated_by, changed_at, description, "
    "content, keep_until, category, importance, visibility, created_at, expires_at"
)
# an entry as the reads give it, in this order (``_row_to_entry`` reads the columns by position); a listing
# leaves out the content, the last column
_META_COLUMNS = (
    "name, description, category, importance, visibility, version, updated_by, created_at, updated_at, "
    "expires_at, conversation, content_hash, memory, layer_user"
)
_ENTRY_COLUMNS = _META_COLUMNS + ", content"
_ENTRY_COLUMNS_E = ", ".join("e." + column for column in _ENTRY_COLUMNS.split(", "))
# the columns a save writes, in the order of its INSERT, and the row a write reads first (with its rowid)
_SAVE_COLUMNS = (
    "account_id", "memory", "layer_user", "name", "description", "category", "importance", "visibility", "version",
    "updated_by", "created_at", "updated_at", "expires_at", "conversation", "content_hash", "content", "operation",
    "keep_until",
)
_INSERT_ENTRY = (f"INSERT INTO entries ({', '.join(_SAVE_COLUMNS)}) "
                 f"VALUES ({', '.join(':' + c for c in _SAVE_COLUMNS)})")
_ROW_KEYS = ("rowid", *_SAVE_COLUMNS)
_LIVE_ROW = f"SELECT {', '.join(_ROW_KEYS)} FROM entries WHERE account_id=? AND memory=? AND layer_user=? AND name=?"
_GET = f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE account_id=? AND memory=? AND layer_user=? AND name=? AND {_LIVE}"


def content_hash(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()


def exact_terms(words: Sequence[str], joined: str = " OR ") -> str:
    """An FTS5 expression matching a token equal to any of ``words`` (by the index's stems), each quoted;
    ``joined=" AND "`` asks for all of them."""
    return joined.join('"' + w.replace('"', '""') + '"' for w in words)


def prefix_terms(words: Sequence[str], joined: str = " OR ") -> str:
    """An FTS5 expression matching a token that starts with any of ``words`` (each quoted, so no word
    is read as FTS syntax): the prefix rule of domain/search.py."""
    return joined.join('"' + w.replace('"', '""') + '"*' for w in words)


def _scope_token(layer: Layer) -> str:
    return scope_token(layer.account_id, layer.memory, layer.user_key)


def _stored_entry(values: dict[str, Any]) -> Entry:
    """The entry a save stored, from the values it wrote (without content, as a save answers; ``importance`` as
    its REAL column gives it back)."""
    return Entry(
        name=values["name"], description=values["description"], content=None, category=values["category"],
        importance=float(values["importance"]), visibility=values["visibility"], version=values["version"],
        updated_by=values["updated_by"], created_at=values["created_at"], updated_at=values["updated_at"],
        expires_at=values["expires_at"], conversation=values["conversation"], content_hash=values["content_hash"],
        memory=values["memory"], user_id=values["layer_user"] or None,
    )


def _place(row: Sequence[Any]) -> tuple[str, str, str]:
    """(memory, layer_user, name) of a row of ``_ENTRY_COLUMNS``: where the entry is, as the rows' key."""
    return row[12], row[13], row[0]


def _row_to_entry(row: Sequence[Any], *, with_content: bool) -> Entry:
    """An entry from a row of ``_ENTRY_COLUMNS`` (or ``_META_COLUMNS`` without content), read by position."""
    return Entry(
        name=row[0], description=row[1], content=row[14] if with_content else None, category=row[2],
        importance=row[3], visibility=row[4], version=row[5], updated_by=row[6], created_at=row[7],
        updated_at=row[8], expires_at=row[9], conversation=row[10], content_hash=row[11], memory=row[12],
        user_id=row[13] or None,
    )


def _encode_cursor(updated_at: str, name: str) -> str:
    return encode_cursor([updated_at, name])


def _decode_cursor(cursor: str) -> tuple[str, str]:
    value = decode_cursor(cursor)
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise InvalidError("cursor is not one this service gave out", field="cursor")
    return value[0], value[1]


class SqliteEntryStore(EntryStore):
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- writes -----------------------------------------------------------------------------------------
    def save(
        self,
        layer: Layer,
        draft: EntryDraft,
        *,
        expected_version: int | None,
        now: str,
        keep_history_until: str,
        layer_limit: int,
    ) -> tuple[Entry, bool]:
        key = (layer.account_id, layer.memory, layer.user_key, draft.name)
        with self.db.write() as conn:
            found = self._live_row(conn, key, now)
            # the row as a dict, read by name below (a dict lookup costs a fraction of sqlite3.Row's by name)
            row = dict(zip(_ROW_KEYS, found, strict=True)) if found is not None else None
            current = row["version"] if row is not None else 0
            if expected_version is not None and expected_version != current:
                raise VersionConflictError(
                    _conflict_message(draft.name, current, expected_version), current_version=current
                )
            gone = None
            if row is None:
                if draft.description is None:
                    raise InvalidError("description is required when the entry is new", field="description")
                # the name's last version (when its entries went) and the layer's count, in one statement (a
                # checkpoint, which the limit does not count, reads the count too and leaves it)
                gone, count = _last_version_and_count(conn, key, now)
                if draft.conversation is None and count >= layer_limit:
                    raise LayerFullError(
                        f"this layer already holds {count} entries, the most it may; "
                        "delete one or use another layer",
                        limit=layer_limit,
                    )
            values: dict[str, Any] = {
                "account_id": layer.account_id,
                "memory": layer.memory,
                "layer_user": layer.user_key,
                "name": draft.name,
                # a new entry without a description was refused above, so a missing one comes from the row
                "description": draft.description if draft.description is not None or row is None
                else row["description"],
                "category": draft.category or (row["category"] if row is not None else DEFAULT_CATEGORY),
                "importance": draft.importance
                if draft.importance is not None
                else (row["importance"] if row is not None else DEFAULT_IMPORTANCE),
                "visibility": draft.visibility_over(row["visibility"] if row is not None else None),
                "version": (current if row is not None else (gone or 0)) + 1,
                "updated_by": draft.updated_by,
                "created_at": row["created_at"] if row is not None else now,
                "updated_at": now,
                "expires_at": draft.expires_at
                if draft.expires_at is not None or draft.clear_expiry or row is None
                else row["expires_at"],
                "conversation": draft.conversation if draft.conversation is not None
                else (row["conversation"] if row is not None else None),
                "content_hash": content_hash(draft.content),
                "content": draft.content,
                "operation": "create" if row is None else "update",
                "keep_until": keep_history_until,
            }
            scope = _scope_token(layer)
            if row is None:
                rowid = cast(int, conn.execute(_INSERT_ENTRY, values).lastrowid)
                if gone is not None:
                    conn.execute(f"DELETE FROM entry_last_versions WHERE {_NAME_KEY}", key)  # the entry holds it now
                if values["conversation"] is None:
                    index_words(conn, rowid, scope, draft.name, values["description"], draft.content)
            else:
                rowid = row["rowid"]
                self._keep_replaced(conn, rowid, now)
                # only what changed is set: an index none of whose columns changed keeps its pages (a save
                # rewrites the row and the newest-first index, never the key)
                changed = {c: v for c, v in values.items() if c not in _KEY_COLUMNS and row[c] != v}
                changed["rowid"] = rowid
                assignments = ", ".join(f"{c}=:{c}" for c in changed if c != "rowid")
                conn.execute(f"UPDATE entries SET {assignments} WHERE rowid=:rowid", changed)
                # the index is rewritten only when its words changed (or whether the entry is indexed)
                if changed.keys() & {"description", "content", "conversation"}:
                    if row["conversation"] is None:
                        forget_words(conn, rowid, scope, row["name"], row["description"], row["content"])
                    if values["conversation"] is None:
                        index_words(conn, rowid, scope, draft.name, values["description"], draft.content)
        return _stored_entry(values), row is None

    def delete(
        self,
        layer: Layer,
        name: str,
        *,
        expected_version: int | None,
        now: str,
        keep_history_until: str,
        updated_by: str,
        memory_live: bool = False,
    ) -> Entry:
        key = (layer.account_id, layer.memory, layer.user_key, name)
        with self.db.write() as conn:
            if memory_live and conn.execute(
                "SELECT 1 FROM memories WHERE account_id=? AND name=? AND deleted_at IS NULL", key[:2]
            ).fetchone() is None:
                raise NotFoundError(f"no memory named {layer.memory!r}")
            row = self._live_row(conn, key, now)
            if row is None:
                raise NotFoundError(f"no entry named {name!r} in this layer")
            if expected_version is not None and expected_version != row["version"]:
                raise VersionConflictError(
                    _conflict_message(name, row["version"], expected_version), current_version=row["version"]
                )
            self._keep_replaced(conn, row["rowid"], now)
            # the delete is a version of its own, carrying what it removed
            conn.execute(
                f"INSERT INTO entry_history ({_HISTORY_COLUMNS}) SELECT account_id, memory, layer_user, name, "
                "version + 1, 'delete', content_hash, ?, ?, description, content, ?, category, importance, visibility, "
                "created_at, expires_at FROM entries WHERE rowid=?",
                (updated_by, now, keep_history_until, row["rowid"]),
            )
            self._remove_row(conn, row)
            self._keep_last_version(conn, key, row["version"] + 1)
        return _stored_entry(dict(row))

    def forget_history(self, layer: Layer, name: str) -> int:
        with self.db.write() as conn:
            return int(conn.execute(
                "DELETE FROM entry_history WHERE account_id=? AND memory=? AND layer_user=? AND name=?",
                (layer.account_id, layer.memory, layer.user_key, name),
            ).rowcount)

    def purge_layer(self, layer: Layer) -> int:
        """The layer's entries (checkpoints and expired ones too), their FTS rows and the layer's history, in
        one write transaction, as ``purge_memory_rows`` does for a whole memory. The layer's counts are
        counted from its rows (the embedded store keeps no counter), so nothing else needs resetting."""
        key = (layer.account_id, layer.memory, layer.user_key)
        with self.db.write() as conn:
            forget_words_where(conn, "account_id=? AND memory=? AND layer_user=?", key)
            removed = conn.execute(
                "DELETE FROM entries WHERE account_id=? AND memory=? AND layer_user=?", key
            ).rowcount
            conn.execute("DELETE FROM entry_history WHERE account_id=? AND memory=? AND layer_user=?", key)
            conn.execute("DELETE FROM entry_last_versions WHERE account_id=? AND memory=? AND layer_user=?", key)
            # the layer's count (0 now) goes too: an erased user's id is left in no row of the layer's
            conn.execute("DELETE FROM layer_entry_counts WHERE account_id=? AND memory=? AND layer_user=?", key)
        return removed

    def _live_row(self, conn: sqlite3.Connection, key: tuple[str, str, str, str], now: str) -> sqlite3.Row | None:
        """The entry's row inside a write transaction; an expired one is removed first (the store's TTL)."""
        row: sqlite3.Row | None = conn.execute(_LIVE_ROW, key).fetchone()
        if row is not None and row["expires_at"] is not None and row["expires_at"] <= now:
            self._remove_expired(conn, row, now)
            return None
        return row

    def _remove_expired(self, conn: sqlite3.Connection, row: sqlite3.Row, now: str) -> None:
        # its version stays in the history, expired, so that its run stays hidden there (domain/history.py)
        self._keep_replaced(conn, row["rowid"], now)
        self._remove_row(conn, row)
        self._keep_last_version(conn, (row["account_id"], row["memory"], row["layer_user"], row["name"]),
                                row["version"])

    @staticmethod
    def _keep_replaced(conn: sqlite3.Connection, rowid: int, now: str) -> None:
        """The entry's current version into the history, as it is, before a save replaces it or it goes; read
        inside SQLite (no second trip of the content through Python), and only while it is kept at all."""
        conn.execute(
            f"INSERT INTO entry_history ({_HISTORY_COLUMNS}) SELECT account_id, memory, layer_user, name, version, "
            "operation, content_hash, updated_by, updated_at, description, content, keep_until, category, importance, "
            "visibility, created_at, expires_at FROM entries WHERE rowid=? AND keep_until > ?",
            (rowid, now),
        )

    @staticmethod
    def _keep_last_version(conn: sqlite3.Connection, key: tuple[str, str, str, str], version: int) -> None:
        conn.execute(
            "INSERT INTO entry_last_versions (account_id, memory, layer_user, name, version) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (account_id, memory, layer_user, name) DO UPDATE SET version = max(version, excluded.version)",
            (*key, version),
        )

    @staticmethod
    def _remove_row(conn: sqlite3.Connection, row: sqlite3.Row) -> None:
        """An entry's row (read whole in this transaction) and its words in the keyword index."""
        if row["conversation"] is None:
            forget_words(conn, row["rowid"], scope_token(row["account_id"], row["memory"], row["layer_user"]),
                         row["name"], row["description"], row["content"])
        conn.execute("DELETE FROM entries WHERE rowid=?", (row["rowid"],))

    # -- reads ------------------------------------------------------------------------------------------
    def get(self, layer: Layer, name: str, now: str) -> Entry | None:
        row = self.db.connection().execute(
            _GET, (layer.account_id, layer.memory, layer.user_key, name, now)
        ).fetchone()
        return _row_to_entry(row, with_content=True) if row is not None else None

    def get_many(self, keys: Sequence[tuple[Layer, str]], now: str) -> dict[tuple[Layer, str], Entry]:
        """Many ``get``s in few statements (each a primary-key lookup, joined by UNION ALL)."""
        found: dict[tuple[Layer, str], Entry] = {}
        wanted = {(layer.account_id, layer.memory, layer.user_key, name): (layer, name) for layer, name in keys}
        one = (f"SELECT {_ENTRY_COLUMNS}, account_id FROM entries WHERE account_id=? AND memory=? AND layer_user=? "
               f"AND name=? AND {_LIVE}")
        for row in _union_all(self.db.connection(), one, [(*key, now) for key in wanted]):
            key = (row[15], *_place(row))  # (account_id is the column after the entry's)
            found[wanted[key]] = _row_to_entry(row, with_content=True)
        return found

    def layers(self, account_id: str, memory: str) -> list[tuple[str | None, int]]:
        rows = self.db.connection().execute(
            "SELECT layer_user, entries FROM layer_entry_counts WHERE account_id=? AND memory=? AND entries > 0 "
            "ORDER BY layer_user", (account_id, memory),
        ).fetchall()
        return [(None if row[0] == ACCOUNT_LAYER else str(row[0]), int(row[1])) for row in rows]

    def list_layer(self, layer: Layer, now: str, *, limit: int, cursor: str | None) -> Page:
        params: list[Any] = [layer.account_id, layer.memory, layer.user_key, now]
        after = ""
        if cursor:
            updated_at, name = _decode_cursor(cursor)
            after = "AND (updated_at < ? OR (updated_at = ? AND name > ?))"
            params += [updated_at, updated_at, name]
        rows = self.db.connection().execute(
            f"SELECT {_META_COLUMNS} FROM entries WHERE account_id=? AND memory=? AND layer_user=? AND {_LIVE} "
            f"{after} ORDER BY updated_at DESC, name ASC LIMIT ?",
            (*params, limit + 1),
        ).fetchall()
        items = [_row_to_entry(r, with_content=False) for r in rows[:limit]]
        next_cursor = _encode_cursor(items[-1].updated_at, items[-1].name) if len(rows) > limit else None
        return Page(items=items, next_cursor=next_cursor)

    def index_page(
        self, layer: Layer, now: str, *, limit: int, cursor: str | None, shadowed_by: Layer | None = None
    ) -> Page:
        where, params = _index_where(layer, now, shadowed_by)
        if cursor:
            updated_at, name = _decode_cursor(cursor)
            where += " AND (updated_at < ? OR (updated_at = ? AND name > ?))"
            params += [updated_at, updated_at, name]
        rows = self.db.connection().execute(
            f"SELECT {_META_COLUMNS} FROM entries WHERE {where} ORDER BY updated_at DESC, name ASC LIMIT ?",
            (*params, limit + 1),
        ).fetchall()
        items = [_row_to_entry(r, with_content=False) for r in rows[:limit]]
        next_cursor = _encode_cursor(items[-1].updated_at, items[-1].name) if len(rows) > limit else None
        return Page(items=items, next_cursor=next_cursor)

    def index_count(self, layer: Layer, now: str, *, shadowed_by: Layer | None = None) -> int:
        """The layer's live entries (``_live_count``), less those the shadowing layer holds too (a user's copies,
        looked up one by one from that layer's side): never a walk of every entry."""
        key = (layer.account_id, layer.memory, layer.user_key)
        conn = self.db.connection()
        live = _live_count(conn, key, now)
        shadowed = 0
        if shadowed_by is not None and live > 0:
            shadowed = conn.execute(
                f"SELECT count(*) FROM entries s JOIN entries e ON e.account_id=? AND e.memory=? AND e.layer_user=? "
                f"AND e.name=s.name AND e.conversation IS NULL AND {_LIVE_E} "
                "WHERE s.account_id=? AND s.memory=? AND s.layer_user=? AND s.conversation IS NULL "
                "AND (s.expires_at IS NULL OR s.expires_at > ?)",
                (*key, now, shadowed_by.account_id, shadowed_by.memory, shadowed_by.user_key, now),
            ).fetchone()[0]
        return live - shadowed

    def pinning_candidates(self, layer: Layer, now: str, *, limit: int) -> list[Entry]:
        rows = self.db.connection().execute(  # the terms of entries_pinnable's WHERE, word for word
            f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE account_id=? AND memory=? AND layer_user=? AND {_PINNABLE} "
            f"AND {_LIVE} "
            "ORDER BY importance DESC, updated_at DESC, name ASC LIMIT ?",
            (layer.account_id, layer.memory, layer.user_key, now, limit),
        ).fetchall()
        return [_row_to_entry(r, with_content=True) for r in rows]

    def history(self, layer: Layer, name: str, now: str, *, limit: int | None = None) -> list[HistoryItem]:
        """The kept versions, newest first: the entry's own (its current version) and ``entry_history``'s."""
        key = (layer.account_id, layer.memory, layer.user_key, name, now)
        rows = self.db.connection().execute(
            f"SELECT name, version, operation, content_hash, updated_by, updated_at AS changed_at, description, "
            f"content, keep_until, category, importance, visibility, created_at, expires_at FROM entries "
            f"WHERE {_NAME_KEY} AND keep_until > ? "
            f"UNION ALL SELECT name, version, operation, content_hash, updated_by, changed_at, description, content, "
            f"keep_until, category, importance, visibility, created_at, expires_at FROM entry_history "
            f"WHERE {_NAME_KEY} AND keep_until > ? ORDER BY version DESC LIMIT ?",
            (*key, *key, -1 if limit is None else limit),
        ).fetchall()
        return [
            HistoryItem(
                name=r["name"], version=r["version"], operation=r["operation"], content_hash=r["content_hash"],
                updated_by=r["updated_by"], changed_at=r["changed_at"], description=r["description"],
                content=r["content"], keep_until=r["keep_until"], category=r["category"],
                importance=r["importance"], visibility=r["visibility"], created_at=r["created_at"],
                expires_at=r["expires_at"],
            )
            for r in rows
        ]

    def existing_names(self, layer: Layer, names: Sequence[str], now: str) -> set[str]:
        marks = ",".join("?" * len(names))
        rows = self.db.connection().execute(
            f"SELECT name FROM entries WHERE account_id=? AND memory=? AND layer_user=? AND name IN ({marks}) "
            f"AND {_LIVE}",
            (layer.account_id, layer.memory, layer.user_key, *names, now),
        ).fetchall()
        return {r[0] for r in rows}

    def search_candidates(
        self, layers: Sequence[Layer], words: Sequence[str], whole: str, now: str, *, limit: int | None = None
    ) -> list[Entry]:
        if not layers:
            return []
        conn = self.db.connection()
        found: dict[tuple[str, str, str], Entry] = {}
        if words:
            scopes = " OR ".join(_scope_token(layer) for layer in layers)
            terms = prefix_terms(words)
            match = f"scope : ({scopes}) AND {{name description content}} : ({terms})"
            # by relevance when a limit is asked: FTS5's BM25 with the domain's field weights (the scope weighs 0)
            best = (f"ORDER BY bm25(entries_fts, 0.0, {FIELD_WEIGHTS['name']}, {FIELD_WEIGHTS['description']}, "
                    f"{FIELD_WEIGHTS['content']}) LIMIT {int(limit)}" if limit is not None else "")
            rows = conn.execute(
                f"SELECT {_ENTRY_COLUMNS_E} FROM (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? {best}) f "
                f"JOIN entries e ON e.rowid = f.rowid WHERE e.conversation IS NULL AND {_LIVE_E}",
                (match, now),
            ).fetchall()
            for r in rows:
                found[_place(r)] = _row_to_entry(r, with_content=True)
        # the whole query found inside a word: such an entry holds no query word, so it ranks below every one
        # that does, and is worth reading only when the words did not fill the candidates
        if whole and (limit is None or len(found) < limit):
            cap = None if limit is None else limit + len(found)  # (the scan finds those the words found too)
            held = [r for r in self._holding_whole(conn, layers, whole, now, cap)
                    if (r["memory"], r["layer_user"], r["name"]) not in found]
            for r in self._rows([r["rowid"] for r in held]):
                found.setdefault(_place(r), _row_to_entry(r, with_content=True))
        return list(found.values())

    def _rows(self, rowids: Sequence[int]) -> list[Any]:
        if not rowids:
            return []
        return self.db.connection().execute(
            f"SELECT {_ENTRY_COLUMNS} FROM entries WHERE rowid IN ({','.join('?' * len(rowids))})", tuple(rowids)
        ).fetchall()

    def _holding_whole(
        self, conn: sqlite3.Connection, layers: Sequence[Layer], whole: str, now: str, limit: int | None = None
    ) -> list[Any]:
        """(rowid, memory, layer_user, name) of the layers' entries whose name or description holds ``whole``
        (lower-cased), even inside a word: one statement for many layers, each read from ``entries_newest`` alone;
        at most ``limit`` of each statement, in the ranking's order for them (importance, newest, name)."""
        # SQLite's lower() folds ASCII letters only, which is all an ASCII query can match; otherwise Python
        # compares ("HEIZÖL" must hold "zöl")
        ascii_only = whole.isascii()
        columns = "rowid, memory, layer_user, name, importance, updated_at" + ("" if ascii_only else ", description")
        test = " AND instr(lower(name || char(10) || description), ?) > 0" if ascii_only else ""
        one = (f"SELECT {columns} FROM entries WHERE account_id=? AND memory=? AND layer_user=? "
               f"AND conversation IS NULL AND {_LIVE}{test}")
        per_layer = [(layer.account_id, layer.memory, layer.user_key, now) + ((whole,) if ascii_only else ())
                     for layer in layers]
        best = (f" ORDER BY importance DESC, updated_at DESC, name LIMIT {int(limit)}"
                if limit is not None and ascii_only else "")
        rows: list[Any] = list(_union_all(conn, one, per_layer, best))
        if not ascii_only:
            rows = [m for m in rows if whole in f"{m['name']}\n{m['description']}".lower()]
            if limit is not None:
                rows.sort(key=lambda m: m["name"])  # stable sorts, least significant first
                rows.sort(key=lambda m: m["updated_at"], reverse=True)
                rows.sort(key=lambda m: -m["importance"])
                rows = rows[:limit]
        return rows

    def purge_expired(self, now: str) -> int:
        """The embedded store's TTL: drop expired entries and history past its keep time."""
        with self.db.write() as conn:
            expired = conn.execute(
                "SELECT rowid, * FROM entries WHERE expires_at IS NOT NULL AND expires_at <= ?", (now,)
            ).fetchall()
            for row in expired:
                self._remove_expired(conn, row, now)
            conn.execute("DELETE FROM entry_history WHERE keep_until <= ?", (now,))
        return len(expired)


def _union_all(
    conn: sqlite3.Connection, one: str, params: Sequence[Sequence[Any]], after: str = ""
) -> Iterator[Any]:
    """The rows of the statement ``one`` for each set of ``params``, a compound SELECT (UNION ALL) of up to
    ``_LAYERS_A_STATEMENT`` of them at a time, each compound ending with ``after`` (its ORDER BY, LIMIT)."""
    for start in range(0, len(params), _LAYERS_A_STATEMENT):
        chunk = params[start:start + _LAYERS_A_STATEMENT]
        yield from conn.execute(" UNION ALL ".join([one] * len(chunk)) + after, [v for p in chunk for v in p])


def _live_count_sql(now: str) -> str:
    """The layer's live entries (checkpoints left out) as one SQL expression, the layer being parameters ?1, ?2 and
    ?3 (account, memory, user key) and the time ``now`` (a parameter's name): its count (``layer_entry_counts``,
    kept by triggers) less the expired ones not swept yet (a range of ``entries_expiring``, which holds only
    entries with an expiry)."""
    return (
        "coalesce((SELECT entries FROM layer_entry_counts WHERE account_id=?1 AND memory=?2 AND layer_user=?3), 0) "
        "- (SELECT count(*) FROM entries WHERE account_id=?1 AND memory=?2 AND layer_user=?3 "
        f"AND conversation IS NULL AND expires_at IS NOT NULL AND expires_at <= {now})"
    )


_LIVE_COUNT = "SELECT " + _live_count_sql("?4")
# what a create reads besides the row, the key being ?1 to ?4 and the time ?5: the name's last version (when its
# entries went) and the layer's live entries
_LAST_VERSION_AND_COUNT = (
    "SELECT (SELECT version FROM entry_last_versions WHERE account_id=?1 AND memory=?2 AND layer_user=?3 "
    "AND name=?4), " + _live_count_sql("?5")
)


def _live_count(conn: sqlite3.Connection, key: Sequence[str], now: str) -> int:
    """How many live entries (checkpoints left out) the layer ``key`` (account, memory, user key) holds, in one
    statement (``_live_count_sql``): never a walk of every entry."""
    return int(conn.execute(_LIVE_COUNT, (*key, now)).fetchone()[0])


def _last_version_and_count(
    conn: sqlite3.Connection, key: tuple[str, str, str, str], now: str
) -> tuple[int | None, int]:
    """What a create reads besides the row, in one statement: the last version of the name's entries that are gone
    (None: it never had one, or it was forgotten) and the layer's live entries (``_live_count``)."""
    row = conn.execute(_LAST_VERSION_AND_COUNT, (*key, now)).fetchone()
    return (int(row[0]) if row[0] is not None else None), int(row[1])


def _index_where(layer: Layer, now: str, shadowed_by: Layer | None) -> tuple[str, list[Any]]:
    """A layer's live entries, checkpoints left out, and with ``shadowed_by`` none whose name is live there."""
    where = f"account_id=? AND memory=? AND layer_user=? AND conversation IS NULL AND {_LIVE}"
    params: list[Any] = [layer.account_id, layer.memory, layer.user_key, now]
    if shadowed_by is not None:
        where += (" AND NOT EXISTS (SELECT 1 FROM entries s WHERE s.account_id=? AND s.memory=? AND s.layer_user=? "
                  "AND s.name=entries.name AND s.conversation IS NULL AND (s.expires_at IS NULL OR s.expires_at > ?))")
        params += [shadowed_by.account_id, shadowed_by.memory, shadowed_by.user_key, now]
    return where, params


def _conflict_message(name: str, current: int, sent: int) -> str:
    if current == 0:
        return f"entry {name!r} does not exist (you sent version {sent})"
    if sent == 0:
        return f"entry {name!r} already exists at version {current} (you asked that it must not exist)"
    return f"entry {name!r} is at version {current} (you sent {sent}); read it again and retry"
