"""Conversations and their journals on SQLite (SPEC §4.1).

An append is one ``BEGIN IMMEDIATE`` transaction: the record is read, numbered from and written back
under the database's write lock, so concurrent appends (threads or processes) can neither reuse nor
skip a seq. Messages are immutable once stored; a purge is the only thing that removes them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ...domain.clock import TimeRange
from ...domain.conversations import (
    AppendResult,
    CheckpointWritten,
    ConversationRecord,
    ConversationRef,
    Message,
    MessageDraft,
)
from ...domain.errors import NotFoundError, VersionConflictError
from ...domain.models import ACCOUNT_LAYER
from ...domain.search import PREFIX_WEIGHT
from ...domain.text import stem
from ...ports.conversations import ConversationStore, MessageHit
from .database import Database
from .entries import exact_terms, prefix_terms

SEARCH_TERM_SHARE = 0.01  # a query word held by more of the messages than this is not worth scoring ...
SEARCH_TERM_MIN_MESSAGES = 20_000  # ... once the journal index is this large
SEARCH_UNSCOPED_SHARE = 0.5  # a pair holding this share of the journal index is searched without its token
HELD_COUNTS_KEPT = 20_000  # stems whose message counts a store keeps in memory
READ_PAIRS = 5_000  # (conversation, seq) pairs one statement of messages_of reads
SEARCH_SCORED = 12_000  # messages one pass of a journal search scores by BM25, at most (about 15 ms)
# ... and a stem shorter than this is matched as itself only, not as the start of longer words: "m" (from "MS") or
# "7" starts a large part of the vocabulary (at 1,010,000 messages, "m" starts words of 2.1 million postings: their
# count took 79 ms to read and the prefix pass 600 ms), and as evidence it tells nothing
PREFIX_MIN_CHARS = 3

_MESSAGE_COLUMNS = (
    "m.seq, m.turn, m.role, m.content, m.created_at, m.tool_name, m.tool_call_id, m.arguments, m.result, "
    "m.client_id, m.tokens"
)
_REF_WHERE = "account_id=? AND agent=? AND user_key=? AND key=?"


@dataclass(frozen=True)
class _PairShare:
    key: tuple[str, str, str]  # account, agent, user key
    share: float  # of the messages in the journal index


def _user_key(user_id: str | None) -> str:
    return user_id if user_id is not None else ACCOUNT_LAYER


def _ref_params(ref: ConversationRef) -> tuple[str, str, str, str]:
    return ref.account_id, ref.agent, _user_key(ref.user_id), ref.key


def _token(prefix: str, *parts: str) -> str:
    # one FTS token per scope, so a search only walks its own scope's postings
    return prefix + hashlib.blake2b("\x1f".join(parts).encode(), digest_size=10).hexdigest()


def _pair_token(account_id: str, agent: str, user_id: str | None) -> str:
    return _token("u", account_id, agent, _user_key(user_id))


def _conversation_token(ref: ConversationRef) -> str:
    return _token("c", *_ref_params(ref))


def _scope(ref: ConversationRef) -> str:
    return f"{_pair_token(ref.account_id, ref.agent, ref.user_id)} {_conversation_token(ref)}"


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _unjson(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _message(row: sqlite3.Row) -> Message:
    return Message(
        seq=row["seq"], turn=row["turn"], role=row["role"], content=row["content"], created_at=row["created_at"],
        tool_name=row["tool_name"], tool_call_id=row["tool_call_id"], arguments=_unjson(row["arguments"]),
        result=_unjson(row["result"]), client_id=row["client_id"], tokens=row["tokens"],
    )


def _record(row: sqlite3.Row) -> ConversationRecord:
    user_key = row["user_key"]
    return ConversationRecord(
        ref=ConversationRef(row["account_id"], row["agent"], user_key if user_key != ACCOUNT_LAYER else None,
                            row["key"]),
        created_at=row["created_at"], updated_at=row["updated_at"], last_seq=row["last_seq"],
        last_turn=row["last_turn"], folded_through=row["folded_through"], forgotten_through=row["forgotten_through"],
        unfolded_tokens=row["unfolded_tokens"], unfolded_messages=row["unfolded_messages"],
        window_messages=row["window_messages"], surface=row["surface"], due_since=row["due_since"],
        deleted_at=row["deleted_at"], passes=row["passes"], checkpoint_version=row["checkpoint_version"],
        lines_by_hand=tuple(row["lines_by_hand"].split()),
    )


def _time_where(when: TimeRange | None) -> tuple[str, list[str]]:
    """The condition (and its parameters) keeping the FTS rows whose message's time is within ``when``."""
    clauses: list[str] = []
    params: list[str] = []
    for op, bound in ((">", None if when is None else when.after), ("<", None if when is None else when.before)):
        if bound is not None:
            clauses.append(f"AND (SELECT created_at FROM messages WHERE id = messages_fts.rowid) {op} ?")
            params.append(bound)
    return " ".join(clauses), params


def _over(tokens: int, messages: int, thresholds: tuple[int, int]) -> bool:
    return tokens > thresholds[0] or messages > thresholds[1]


def _kept_count(kept: dict[str, tuple[int, int]], term: str, newest: int, count: Callable[[str], Any]) -> int:
    """A stem's count of messages from the journal index's vocabulary (``count`` reads it), kept in ``kept`` with
    the newest message id it was read at and read again once the journal has grown by a tenth: it only weighs
    and chooses words. ``kept`` starts again past ``HELD_COUNTS_KEPT`` stems."""
    known = kept.get(term)
    if known is None or newest > known[1] * 1.1:
        return _keep(kept, term, int(count(term)), newest)
    return known[0]


def _keep(kept: dict[str, tuple[int, int]], term: str, value: int, newest: int) -> int:
    """``value`` kept in ``kept`` as ``term``'s count at ``newest`` (``_kept_count``), which starts again past
    ``HELD_COUNTS_KEPT`` stems."""
    if len(kept) >= HELD_COUNTS_KEPT:
        kept.clear()
    kept[term] = (value, newest)
    return value


class SqliteConversationStore(ConversationStore):
    def __init__(self, db: Database) -> None:
        self.db = db
        # how many messages hold each stem (or a longer word it starts), and the journal's newest id then: a
        # count is read again once the journal grew by a tenth (it only chooses words and sizes windows)
        self._held_counts: dict[str, tuple[int, int]] = {}
        self._word_counts: dict[str, tuple[int, int]] = {}  # a stem's messages, exactly, at a newest id
        self._pair_messages: dict[str, tuple[int, int]] = {}  # an (account, agent, user) pair's, the same way

    @staticmethod
    def _row(conn: sqlite3.Connection, ref: ConversationRef) -> sqlite3.Row | None:
        row: sqlite3.Row | None = conn.execute(
            f"SELECT * FROM conversations WHERE {_REF_WHERE}", _ref_params(ref)
        ).fetchone()
        return row

    def _existing(self, conn: sqlite3.Connection, ref: ConversationRef) -> sqlite3.Row:
        row = self._row(conn, ref)
        if row is None:
            raise NotFoundError(f"no conversation {ref.key!r}", conversation=ref.key)
        return row

    # -- writes -----------------------------------------------------------------------------------------
    def append(
        self, ref: ConversationRef, drafts: Sequence[MessageDraft], *, now: str, surface: str,
        thresholds: tuple[int, int], window_messages: int | None = None,
    ) -> AppendResult:
        with self.db.write() as conn:
            row = self._row(conn, ref)
            if row is None:
                conn.execute(
                    "INSERT INTO conversations (account_id, agent, user_key, key, created_at, updated_at, surface) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (*_ref_params(ref), now, now, surface),
                )
                row = self._row(conn, ref)
                assert row is not None
            conversation_id = row["id"]
            seq, turn = row["last_seq"], row["last_turn"]
            tokens, count = row["unfolded_tokens"], row["unfolded_messages"]
            scope = _scope(ref)
            stored: list[Message] = []
            added = 0
            for draft in drafts:
                if draft.client_id is not None:
                    old = conn.execute(
                        f"SELECT {_MESSAGE_COLUMNS} FROM messages m WHERE m.conversation_id=? AND m.client_id=?",
                        (conversation_id, draft.client_id),
                    ).fetchone()
                    if old is not None:
                        stored.append(_message(old))
                        continue
                seq += 1
                # a user message opens the next turn; a conversation that starts otherwise starts in turn 1
                turn = turn + 1 if draft.role == "user" else max(turn, 1)
                created_at = draft.created_at or now  # its original time, when the append carried one
                message = Message(
                    seq=seq, turn=turn, role=draft.role, content=draft.content, created_at=created_at,
                    tool_name=draft.tool_name, tool_call_id=draft.tool_call_id, arguments=draft.arguments,
                    result=draft.result, client_id=draft.client_id, tokens=draft.tokens,
                )
                cursor = conn.execute(
                    "INSERT INTO messages (conversation_id, seq, turn, role, content, tool_name, tool_call_id, "
                    "arguments, result, client_id, tokens, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (conversation_id, seq, turn, draft.role, draft.content, draft.tool_name, draft.tool_call_id,
                     _json(draft.arguments), _json(draft.result), draft.client_id, draft.tokens, created_at),
                )
                conn.execute(
                    "INSERT INTO messages_fts (rowid, scope, content, tool_name) VALUES (?, ?, index_text(?), ?)",
                    (cast(int, cursor.lastrowid), scope, draft.content, draft.tool_name),
                )
                stored.append(message)
                tokens += draft.tokens
                count += 1
                added += 1
            if added:
                # an append to a deleted conversation brings it back into the listing
                conn.execute(
                    "UPDATE conversations SET last_seq=?, last_turn=?, unfolded_tokens=?, unfolded_messages=?, "
                    "surface=?, window_messages=coalesce(?, window_messages), updated_at=?, deleted_at=NULL, "
                    "due_since=CASE WHEN ? THEN coalesce(due_since, ?) ELSE due_since END WHERE id=?",
                    (seq, turn, tokens, count, surface, window_messages, now, _over(tokens, count, thresholds),
                     now, conversation_id),
                )
            record = self._row(conn, ref)
        assert record is not None
        return AppendResult(record=_record(record), messages=stored, added=added)

    def mark_folded(
        self, ref: ConversationRef, *, expected_folded_through: int, folded_through: int, folded_tokens: int,
        folded_messages: int, now: str, thresholds: tuple[int, int], written: CheckpointWritten | None = None,
    ) -> ConversationRecord:
        with self.db.write() as conn:
            row = self._existing(conn, ref)
            current = row["folded_through"]
            if current != expected_folded_through:
                raise VersionConflictError(
                    f"conversation {ref.key!r} is folded through {current} (expected {expected_folded_through}): "
                    "another pass moved it",
                    current_version=current,
                )
            tokens = max(0, row["unfolded_tokens"] - folded_tokens)
            count = max(0, row["unfolded_messages"] - folded_messages)
            due = (row["due_since"] or now) if _over(tokens, count, thresholds) else None
            conn.execute(
                "UPDATE conversations SET folded_through=?, unfolded_tokens=?, unfolded_messages=?, due_since=?, "
                "updated_at=? WHERE id=?",
                (folded_through, tokens, count, due, now, row["id"]),
            )
            if written is not None:
                conn.execute(
                    "UPDATE conversations SET passes=passes+1, checkpoint_version=?, lines_by_hand=? WHERE id=?",
                    (written.version, " ".join(written.lines_by_hand), row["id"]),
                )
            return _record(self._existing(conn, ref))

    def forget_through(self, ref: ConversationRef, seq: int, *, now: str) -> ConversationRecord:
        with self.db.write() as conn:
            row = self._existing(conn, ref)
            # what was neither folded nor forgotten yet, up to seq (never past the newest message)
            start = max(row["folded_through"], row["forgotten_through"])
            through = min(seq, row["last_seq"])
            if through > start:
                gone_tokens, gone = conn.execute(
                    "SELECT coalesce(sum(tokens), 0), count(*) FROM messages "
                    "WHERE conversation_id=? AND seq>? AND seq<=?",
                    (row["id"], start, through),
                ).fetchone()
                conn.execute(
                    "UPDATE conversations SET forgotten_through=?, unfolded_tokens=max(0, unfolded_tokens-?), "
                    "unfolded_messages=max(0, unfolded_messages-?), updated_at=? WHERE id=?",
                    (through, gone_tokens, gone, now, row["id"]),
                )
            elif through > row["forgotten_through"]:
                conn.execute(
                    "UPDATE conversations SET forgotten_through=?, updated_at=? WHERE id=?", (through, now, row["id"])
                )
            conn.execute(
                "UPDATE conversations SET passes=0, checkpoint_version=0, lines_by_hand='' WHERE id=?", (row["id"],)
            )
            return _record(self._existing(conn, ref))

    def delete(self, ref: ConversationRef, *, now: str) -> ConversationRecord:
        with self.db.write() as conn:
            row = self._row(conn, ref)
            if row is None or row["deleted_at"] is not None:
                raise NotFoundError(f"no conversation {ref.key!r}", conversation=ref.key)
            conn.execute("UPDATE conversations SET deleted_at=? WHERE id=?", (now, row["id"]))
            return _record(self._existing(conn, ref))

    def purge(self, ref: ConversationRef) -> int:
        with self.db.write() as conn:
            row = self._row(conn, ref)
            if row is None:
                return 0
            # a contentless FTS table forgets a row when told the values it indexed
            conn.execute(
                "INSERT INTO messages_fts (messages_fts, rowid, scope, content, tool_name) "
                "SELECT 'delete', id, ?, index_text(content), tool_name FROM messages WHERE conversation_id=?",
                (_scope(ref), row["id"]),
            )
            removed = conn.execute("DELETE FROM messages WHERE conversation_id=?", (row["id"],)).rowcount
            conn.execute("DELETE FROM conversations WHERE id=?", (row["id"],))
        return removed

    # -- reads ------------------------------------------------------------------------------------------
    def get(self, ref: ConversationRef) -> ConversationRecord | None:
        row = self._row(self.db.connection(), ref)
        return _record(row) if row is not None else None

    def list_conversations(
        self, account_id: str, agent: str, user_id: str | None, *, include_deleted: bool = False
    ) -> list[ConversationRecord]:
        live = "" if include_deleted else "AND deleted_at IS NULL"
        rows = self.db.connection().execute(
            f"SELECT * FROM conversations WHERE account_id=? AND agent=? AND user_key=? {live} "
            "ORDER BY updated_at DESC, id DESC",
            (account_id, agent, _user_key(user_id)),
        ).fetchall()
        return [_record(r) for r in rows]

    def _messages(self, ref: ConversationRef, where: str, params: Sequence[Any], order: str = "ASC",
                  limit: int = -1) -> list[Message]:
        rows = self.db.connection().execute(
            f"SELECT {_MESSAGE_COLUMNS} FROM conversations c JOIN messages m ON m.conversation_id = c.id "
            f"WHERE c.account_id=? AND c.agent=? AND c.user_key=? AND c.key=? AND {where} "
            f"ORDER BY m.seq {order} LIMIT ?",
            (*_ref_params(ref), *params, limit),
        ).fetchall()
        return [_message(r) for r in rows]

    def messages(self, ref: ConversationRef, *, after: int, limit: int) -> list[Message]:
        if limit <= 0:
            return []
        return self._messages(ref, "m.seq > ?", (after,), limit=limit)

    def tail(self, ref: ConversationRef, count: int) -> list[Message]:
        if count <= 0:
            return []
        return self._messages(ref, "1", (), order="DESC", limit=count)[::-1]

    def tool_messages(self, ref: ConversationRef, tool_call_id: str) -> list[Message]:
        return self._messages(ref, "m.tool_call_id = ? AND m.role IN ('tool_call', 'tool_result')",
                              (tool_call_id,))

    def search_candidates(
        self, account_id: str, agent: str, user_id: str | None, words: Sequence[str], *,
        conversation: str | None = None, limit: int = 200, when: TimeRange | None = None,
    ) -> list[MessageHit]:
        """The best ``limit`` messages by BM25 over stems (FTS5's, the scope column weighing nothing); with
        ``when``, only messages whose time is within it (each match's time read by its id as it is scored).

        Scoring is what a large journal pays for (about a microsecond a message held), so the words' pass scores
        at most ``SEARCH_SCORED`` messages: when its words are held by more, it scores the newest of them, its
        *window* (scores stay comparable: BM25's idf is the whole index's), and a pass for the messages holding
        every telling word at once (AND: few, even when each word is common) brings the best evidence of any age.
        Then the words as the start of longer words, at half weight (the prefix rule), when that left room.
        When every word is common: the messages holding the three rarest, else those holding the rarest, each
        pass over its newest window too (holding them all, a scan of most of the journal: 108,000 messages of a
        million, 300 ms, for two words the template journal says together).
        """
        if not words or limit <= 0:
            return []
        scope = (_pair_token(account_id, agent, user_id) if conversation is None
                 else _conversation_token(ConversationRef(account_id, agent, user_id, conversation)))
        telling, common, held, newest = self._telling(words)
        # (terms, weight, how many messages hold them at most (0: score them all), widen the window while it
        # holds too few, when to stop after it: "full" with ``limit`` found, "any" with one)
        passes: list[tuple[str, float, int, bool, str]] = []
        if common:  # (messages holding them all are at most as many as hold the rarest: the window's bound)
            passes += [(exact_terms(telling, " AND "), 1.0, min(held[w] for w in telling), True, "any"),
                       (exact_terms(telling[:1]), 1.0, held[telling[0]], True, "any")]
        else:
            every = sum(held[w] for w in telling)
            if len(telling) > 1 and every > SEARCH_SCORED:  # the words' pass will score only its newest window
                passes.append((exact_terms(telling, " AND "), 1.0, 0, False, "never"))
            passes.append((exact_terms(telling), 1.0, every, True, "full"))
            starts = [w for w in telling if newest < SEARCH_TERM_MIN_MESSAGES or len(stem(w)) >= PREFIX_MIN_CHARS]
            if starts:
                passes.append((prefix_terms(starts), PREFIX_WEIGHT, every, False, "full"))
        found: dict[int, tuple[float, Any]] = {}
        pair = None if conversation is not None else self._pair_share(account_id, agent, user_id, newest)
        for terms, weight, bound, widen, stop in passes:
            words_match = f"{{content tool_name}} : ({terms})"
            spread = newest if pair is not None else 0
            for r in self._scored(words_match, scope, pair, limit, bound, spread, widen=widen,
                                  when=_time_where(when)):
                score = weight * float(r["score"])
                if r["id"] not in found or found[r["id"]][0] < score:
                    found[r["id"]] = (score, r)
            if (stop == "full" and len(found) >= limit) or (stop == "any" and found):
                break
        best = sorted(found.items(), key=lambda item: (-item[1][0], -item[0]))[:limit]
        return [MessageHit(conversation=r["key"], message=_message(r), score=score) for _, (score, r) in best]

    def _scored(
        self, words_match: str, scope: str, pair: _PairShare | None, limit: int, bound: int, newest: int, *,
        widen: bool = True, when: tuple[str, list[str]] = ("", []),
    ) -> list[Any]:
        """The best ``limit`` messages of the scope matching ``words_match``, by BM25, scoring at most about
        ``SEARCH_SCORED`` of them: the newest window of ids that holds that many of the ``bound`` messages the
        words are held by (spread over ids 1..``newest``), widened (when ``widen``) while it holds fewer than
        ``limit``.

        FTS5's ``bm25()`` first counts the messages holding each phrase of the query, the scope's token too: a
        pair (agent, user) that holds most of the journal would cost a count of all of it, every search. Such a
        pair is asked for without its token, a few more rows, and its own kept (the scores are the same: the
        token weighs nothing); when that leaves too few, the scoped query answers."""
        share = 1.0 if bound <= SEARCH_SCORED or newest <= 0 else SEARCH_SCORED / bound
        conn = self.db.connection()
        while True:
            since = 0 if share >= 1.0 else int(newest * (1.0 - share))
            if pair is not None and pair.share >= SEARCH_UNSCOPED_SHARE:
                asked = min(int(limit / pair.share) + limit // 4 + 1, 4 * limit)
                rows = self._best(words_match, since, asked, keep=(pair.key, limit), when=when)
                if len(rows) < limit and conn.execute(  # others' rows took the places: ask with the token
                    "SELECT count(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid > ? "
                    f"{when[0]} LIMIT ?)", (words_match, since, *when[1], asked),
                ).fetchone()[0] >= asked:
                    rows = self._best(f"scope : {scope} AND {words_match}", since, limit, when=when)
            else:
                rows = self._best(f"scope : {scope} AND {words_match}", since, limit, when=when)
            if len(rows) >= limit or since == 0 or not widen:
                return rows
            share = min(1.0, share * 4)

    def _best(
        self, match: str, since: int, asked: int, *, keep: tuple[tuple[str, str, str], int] | None = None,
        when: tuple[str, list[str]] = ("", []),
    ) -> list[Any]:
        """The ``asked`` best messages of ``match`` by BM25 with ids above ``since``, and their conversations'
        keys; ``keep`` (a pair's key, how many): only that pair's, at most that many of them. (CROSS JOIN: the
        best rows first, then their conversations, never the pair's every message.)"""
        where, params = "", [match, since, *when[1], asked]
        if keep is not None:
            where = " WHERE c.account_id=? AND c.agent=? AND c.user_key=? ORDER BY f.score, f.rowid DESC LIMIT ?"
            params += [*keep[0], keep[1]]
        return self.db.connection().execute(
            f"SELECT f.rowid AS id, c.key, -f.score AS score, {_MESSAGE_COLUMNS} FROM "
            "(SELECT rowid, bm25(messages_fts, 0.0, 1.0, 0.5) AS score FROM messages_fts "
            f" WHERE messages_fts MATCH ? AND rowid > ? {when[0]} ORDER BY score, rowid DESC LIMIT ?) f "
            "CROSS JOIN messages m ON m.id = f.rowid CROSS JOIN conversations c ON c.id = m.conversation_id" + where,
            params,
        ).fetchall()

    def _pair_share(self, account_id: str, agent: str, user_id: str | None, newest: int) -> _PairShare:
        """How much of the journal index one pair's messages are (from its conversations' last seqs), read again
        once the journal has grown by a tenth (``_kept_count``): it only chooses how the words are asked for, and
        the sum took 2–3 ms a search over a pair of 5,000 conversations."""
        key = (account_id, agent, _user_key(user_id))
        held = _kept_count(self._pair_messages, "\x1f".join(key), newest, lambda _: self.db.connection().execute(
            "SELECT coalesce(sum(last_seq), 0) FROM conversations WHERE account_id=? AND agent=? AND user_key=?", key,
        ).fetchone()[0])
        return _PairShare(key, min(1.0, held / newest) if newest > 0 else 0.0)

    def _telling(self, words: Sequence[str]) -> tuple[list[str], bool, dict[str, int], int]:
        """The query words worth scoring, whether they are all common, how many messages hold each (as a word
        or the start of one: an upper bound), and the newest message id. In a large journal, a word held by more
        than ``SEARCH_TERM_SHARE`` of the messages adds almost nothing to BM25 (its idf is near zero) and costs a
        scan of all of them, so it is left out while rarer words remain; when every word is that common, the three
        rarest stay, rarest first."""
        conn = self.db.connection()
        newest = int(conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])
        if newest < SEARCH_TERM_MIN_MESSAGES:
            return list(words), False, {w: 0 for w in words}, newest
        counts = {word: _kept_count(self._held_counts, stem(word), newest,
                                    lambda term: self._vocabulary(term, newest)[1]) for word in words}
        rare = sorted((w for w in words if counts[w] <= SEARCH_TERM_SHARE * newest), key=lambda w: counts[w])
        if rare or len(words) < 2:
            return rare or list(words), False, counts, newest
        return sorted(words, key=lambda w: counts[w])[:3], True, counts, newest

    def word_counts(self, words: Sequence[str]) -> tuple[int, dict[str, int]]:
        """From the journal index's vocabulary (each stem's message count, ``_kept_count``);
        the messages counted up to the newest id (a bound: deleted ones count)."""
        conn = self.db.connection()
        newest = int(conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])
        counts = {}
        for word in dict.fromkeys(words):
            held = _kept_count(self._word_counts, stem(word), newest, lambda term: (
                self._vocabulary(term, newest)[0] if newest >= SEARCH_TERM_MIN_MESSAGES else (conn.execute(
                    "SELECT doc FROM messages_vocab WHERE term = ?", (term,)).fetchone() or (0,))[0]))
            counts[word] = min(held, newest)
        return newest, counts

    def _vocabulary(self, term: str, newest: int) -> tuple[int, int]:
        """How many messages hold the stem ``term`` as a word, and as the start of a word (itself or a longer one),
        from one read of the journal index's vocabulary, kept for both (``_kept_count``). The vocabulary counts a
        term's messages by walking its list (a common stem's, in a journal of a million, takes milliseconds), so
        the search that asks for one count (``word_counts``, then ``_telling``) reads the lists once, not twice.
        A stem shorter than ``PREFIX_MIN_CHARS`` is searched as itself only, and counted so."""
        exact = prefix = 0
        read: tuple[str, tuple[str, ...]] = (
            ("SELECT term, doc FROM messages_vocab WHERE term = ?", (term,)) if len(term) < PREFIX_MIN_CHARS else
            ("SELECT term, doc FROM messages_vocab WHERE term >= ? AND term < ?", (term, term + "\U0010ffff")))
        for found, held in self.db.connection().execute(*read):
            prefix += held
            exact = held if found == term else exact
        _keep(self._word_counts, term, exact, newest)
        _keep(self._held_counts, term, prefix, newest)
        return exact, prefix

    def messages_at(self, ref: ConversationRef, seqs: Sequence[int]) -> dict[int, Message]:
        wanted = sorted({s for s in seqs if s > 0})
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        rows = self.db.connection().execute(
            f"SELECT {_MESSAGE_COLUMNS} FROM messages m JOIN conversations c ON c.id = m.conversation_id "
            f"WHERE c.account_id=? AND c.agent=? AND c.user_key=? AND c.key=? AND m.seq IN ({marks})",
            (*_ref_params(ref), *wanted),
        ).fetchall()
        return {int(r["seq"]): _message(r) for r in rows}

    def messages_of(self, account_id: str, agent: str, user_id: str | None,
                    wanted: Mapping[str, Sequence[int]]) -> dict[tuple[str, int], Message]:
        """One statement for them all (a search reads back its candidates of tens of conversations): the
        (conversation, seq) pairs as a JSON list, each looked up by the conversation's key and the seq."""
        pairs = sorted({(key, s) for key, seqs in wanted.items() for s in seqs if s > 0})
        found: dict[tuple[str, int], Message] = {}
        conn = self.db.connection()
        for begin in range(0, len(pairs), READ_PAIRS):
            rows = conn.execute(
                f"SELECT c.key, {_MESSAGE_COLUMNS} FROM json_each(?) j "
                "CROSS JOIN conversations c ON c.account_id=? AND c.agent=? AND c.user_key=? "
                "AND c.key = json_extract(j.value, '$[0]') "
                "CROSS JOIN messages m ON m.conversation_id = c.id AND m.seq = json_extract(j.value, '$[1]')",
                (json.dumps(pairs[begin : begin + READ_PAIRS]), account_id, agent, _user_key(user_id)),
            ).fetchall()
            found.update(((r["key"], int(r["seq"])), _message(r)) for r in rows)
        return found

    def refs_of_user(self, account_id: str, user_id: str) -> list[ConversationRef]:
        return self._refs("account_id=? AND user_key=?", (account_id, user_id))

    def refs_of_agent(self, account_id: str, agent: str) -> list[ConversationRef]:
        return self._refs("account_id=? AND agent=?", (account_id, agent))

    def _refs(self, where: str, params: tuple[str, str]) -> list[ConversationRef]:
        rows = self.db.connection().execute(
            f"SELECT account_id, agent, user_key, key FROM conversations WHERE {where} ORDER BY agent, user_key, key",
            params,
        ).fetchall()
        return [ConversationRef(r[0], r[1], r[2] if r[2] != ACCOUNT_LAYER else None, r[3]) for r in rows]

    def due_conversations(self, before: str, *, limit: int = 100) -> list[ConversationRecord]:
        rows = self.db.connection().execute(
            "SELECT * FROM conversations WHERE due_since IS NOT NULL AND due_since < ? ORDER BY due_since, id LIMIT ?",
            (before, limit),
        ).fetchall()
        return [_record(r) for r in rows]
