"""Ordered schema migrations. Append only: never edit a migration that has shipped.

``PRAGMA user_version`` records how many have run.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator

Migration = str | Callable[[sqlite3.Connection], None]


def _stemmed_journal(conn: sqlite3.Connection) -> None:
    """Migration 6's journal part: the contentless journal index again, with stems and without stop words
    (``index_text``, a function each connection has); its scope tokens are computed from each conversation's
    names, so this one is Python."""
    from ...domain.conversations import ConversationRef
    from .conversations import _scope

    conn.execute("DROP TABLE messages_fts")
    conn.execute(
        "CREATE VIRTUAL TABLE messages_fts USING fts5(scope, content, tool_name, content = '', "
        "tokenize = 'porter unicode61 remove_diacritics 0')"
    )
    for row in conn.execute("SELECT id, account_id, agent, user_key, key FROM conversations").fetchall():
        ref = ConversationRef(row[1], row[2], row[3] or None, row[4])
        conn.execute(
            "INSERT INTO messages_fts (rowid, scope, content, tool_name) "
            "SELECT id, ?, index_text(content), tool_name FROM messages WHERE conversation_id=?",
            (_scope(ref), row[0]),
        )


def statements(script: str) -> Iterator[str]:
    """A script's statements one by one (executescript() would commit the migrations' transaction)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer
            buffer = ""
    if buffer.strip():
        yield buffer


def _history_beside_the_entry(conn: sqlite3.Connection) -> None:
    """Migration 15: an entry's current version is read from the entry itself, never from a copy in
    ``entry_history`` (adapters/embedded/entries.py). The entry row learns the change that made its version and
    how long that is kept, from the history row that held them, and that row goes. (Its columns are added only
    when missing, so the migration can run again over a database that has them.)"""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
    if "operation" not in columns:
        conn.execute("ALTER TABLE entries ADD COLUMN operation TEXT NOT NULL DEFAULT 'update'")
    if "keep_until" not in columns:
        # '' sorts before every time: a current version whose history row was purged stays unlisted
        conn.execute("ALTER TABLE entries ADD COLUMN keep_until TEXT NOT NULL DEFAULT ''")
    same_version = (
        "h.account_id = entries.account_id AND h.memory = entries.memory AND h.layer_user = entries.layer_user "
        "AND h.name = entries.name AND h.version = entries.version"
    )
    conn.execute(
        f"UPDATE entries SET (operation, keep_until) = (SELECT h.operation, h.keep_until FROM entry_history h "
        f"WHERE {same_version} ORDER BY h.id DESC LIMIT 1) "
        f"WHERE EXISTS (SELECT 1 FROM entry_history h WHERE {same_version})"
    )
    conn.execute(
        f"DELETE FROM entry_history WHERE id IN (SELECT h.id FROM entry_history h JOIN entries "
        f"ON {same_version})"
    )


def _passages(conn: sqlite3.Connection) -> None:
    """Migration 20 (its comment in MIGRATIONS): ``vectors`` keyed by (kind, source, part), the removal log naming
    the part, every message queued again. It can run again over a database that has them (a part is kept).
    Statement by statement: the migrations run in one transaction, which ``executescript`` would commit."""
    part = "part" if "part" in {row[1] for row in conn.execute("PRAGMA table_info(vectors)")} else "0"
    steps = [
        "CREATE TABLE vectors_next (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, source INTEGER NOT NULL, "
        "part INTEGER NOT NULL DEFAULT 0, partition TEXT NOT NULL, embedder TEXT NOT NULL, text_hash TEXT NOT NULL, "
        "label TEXT NOT NULL, seq INTEGER, vector BLOB NOT NULL, UNIQUE (kind, source, part))",
        "INSERT INTO sqlite_sequence (name, seq) SELECT 'vectors_next', seq FROM sqlite_sequence "
        "WHERE name = 'vectors'",
        "INSERT INTO vectors_next (id, kind, source, part, partition, embedder, text_hash, label, seq, vector) "
        f"SELECT id, kind, source, {part}, partition, embedder, text_hash, label, seq, vector FROM vectors",
        "DROP TABLE vectors",
        "ALTER TABLE vectors_next RENAME TO vectors",
        "CREATE INDEX vectors_by_partition ON vectors(partition, embedder)",
    ]
    if "part" not in {row[1] for row in conn.execute("PRAGMA table_info(vector_removals)")}:
        steps.append("ALTER TABLE vector_removals ADD COLUMN part INTEGER NOT NULL DEFAULT 0")
    steps += [
        "CREATE TRIGGER vectors_removed AFTER DELETE ON vectors BEGIN INSERT INTO vector_removals (partition, source, "
        "part) VALUES (old.partition, old.source, old.part); END",
        "INSERT INTO index_queue (kind, source) SELECT 'message', id FROM messages",
    ]
    for statement in steps:
        conn.execute(statement)


_ENTRY_TOKEN_STATES = """
    CREATE TABLE IF NOT EXISTS entry_token_states (
        entry INTEGER PRIMARY KEY,
        text_hash BLOB NOT NULL,
        tokens INTEGER NOT NULL,
        states BLOB NOT NULL
    );
    CREATE INDEX IF NOT EXISTS entry_token_states_by_text ON entry_token_states(text_hash);
    CREATE TABLE IF NOT EXISTS entry_token_queue (entry INTEGER PRIMARY KEY);
    INSERT OR IGNORE INTO entry_token_queue (entry) SELECT rowid FROM entries WHERE conversation IS NULL;
    CREATE TRIGGER IF NOT EXISTS entry_token_states_held_on_insert AFTER INSERT ON entry_token_states BEGIN
        UPDATE token_reader SET tokens = tokens + new.tokens, entry_tokens = entry_tokens + new.tokens;
    END;
    CREATE TRIGGER IF NOT EXISTS entry_token_states_held_on_delete AFTER DELETE ON entry_token_states BEGIN
        UPDATE token_reader SET tokens = tokens - old.tokens, entry_tokens = entry_tokens - old.tokens;
    END;
    CREATE TRIGGER IF NOT EXISTS entry_token_queued_on_insert AFTER INSERT ON entries
    WHEN new.conversation IS NULL BEGIN
        INSERT OR IGNORE INTO entry_token_queue (entry) VALUES (new.rowid);
    END;
    CREATE TRIGGER IF NOT EXISTS entry_token_states_on_update
    AFTER UPDATE OF name, description, content, conversation ON entries BEGIN
        DELETE FROM entry_token_states WHERE entry = old.rowid;
        INSERT OR IGNORE INTO entry_token_queue (entry) SELECT new.rowid WHERE new.conversation IS NULL;
    END;
    CREATE TRIGGER IF NOT EXISTS entry_token_states_on_delete AFTER DELETE ON entries BEGIN
        DELETE FROM entry_token_states WHERE entry = old.rowid;
        DELETE FROM entry_token_queue WHERE entry = old.rowid;
    END;
"""


def _entry_token_states(conn: sqlite3.Connection) -> None:
    """Migration 22 (its comment in MIGRATIONS): entries' token states, their queue and their triggers. (The
    counter's column is added only when missing, so the migration can run again over a database that has it.)"""
    if "entry_tokens" not in {row[1] for row in conn.execute("PRAGMA table_info(token_reader)")}:
        conn.execute("ALTER TABLE token_reader ADD COLUMN entry_tokens INTEGER NOT NULL DEFAULT 0")
    for statement in statements(_ENTRY_TOKEN_STATES):
        conn.execute(statement)


MIGRATIONS: list[Migration] = [
    # 1: accounts, keys, memories, entries, history, usage
    """
    CREATE TABLE accounts (
        account_id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL
    );
    CREATE TABLE api_keys (
        key_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(account_id),
        kind TEXT NOT NULL,
        user_id TEXT,
        secret_hash TEXT NOT NULL UNIQUE,
        last4 TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX api_keys_by_account ON api_keys(account_id, created_at);
    CREATE TABLE memories (
        account_id TEXT NOT NULL,
        name TEXT NOT NULL,
        user_id TEXT,
        created_at TEXT NOT NULL,
        deleted_at TEXT,
        purge_after TEXT,
        PRIMARY KEY (account_id, name)
    );
    CREATE TABLE attachments (
        account_id TEXT NOT NULL,
        memory TEXT NOT NULL,
        agent TEXT NOT NULL,
        writable INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (account_id, memory, agent)
    );
    CREATE TABLE entries (
        account_id TEXT NOT NULL,
        memory TEXT NOT NULL,
        layer_user TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        category TEXT NOT NULL,
        importance REAL NOT NULL,
        visibility TEXT NOT NULL,
        version INTEGER NOT NULL,
        updated_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        expires_at TEXT,
        conversation TEXT,
        content_hash TEXT NOT NULL,
        content TEXT NOT NULL,
        PRIMARY KEY (account_id, memory, layer_user, name)
    );
    CREATE INDEX entries_newest ON entries(account_id, memory, layer_user, updated_at DESC, name);
    CREATE VIRTUAL TABLE entries_fts USING fts5(
        scope, name, description, content, tokenize = 'unicode61 remove_diacritics 0'
    );
    CREATE TABLE entry_history (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        account_id TEXT NOT NULL,
        memory TEXT NOT NULL,
        layer_user TEXT NOT NULL,
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        operation TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        updated_by TEXT NOT NULL,
        changed_at TEXT NOT NULL,
        description TEXT NOT NULL,
        content TEXT NOT NULL,
        keep_until TEXT NOT NULL
    );
    CREATE INDEX entry_history_by_entry ON entry_history(account_id, memory, layer_user, name, id);
    CREATE INDEX entry_history_by_age ON entry_history(keep_until);
    CREATE TABLE usage (
        account_id TEXT NOT NULL,
        day TEXT NOT NULL,
        operation TEXT NOT NULL,
        billable INTEGER NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (account_id, day, operation, billable)
    );
    """,
    # 2: a history row is a whole snapshot of its version, so an old version reads as it was
    """
    ALTER TABLE entry_history ADD COLUMN category TEXT NOT NULL DEFAULT 'note';
    ALTER TABLE entry_history ADD COLUMN importance REAL NOT NULL DEFAULT 0.5;
    ALTER TABLE entry_history ADD COLUMN visibility TEXT NOT NULL DEFAULT 'shared';
    ALTER TABLE entry_history ADD COLUMN created_at TEXT;
    ALTER TABLE entry_history ADD COLUMN expires_at TEXT;
    """,
    # 3: counting a layer's live entries (the 500 limit, entry_count) and the whole-query match of
    # search read this index alone, never the rows with their content
    """
    CREATE INDEX entries_live ON entries(account_id, memory, layer_user, expires_at, name, description)
        WHERE conversation IS NULL;
    """,
    # 4: agents. Their attachments are also rows of ``attachments`` (what a memory's attached_to reads);
    # ``settings`` is the JSON document of adapters/agent_settings.py, attachments in their order
    """
    CREATE TABLE agents (
        account_id TEXT NOT NULL,
        name TEXT NOT NULL,
        user_id TEXT,
        version INTEGER NOT NULL,
        settings TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deleted_at TEXT,
        purge_after TEXT,
        PRIMARY KEY (account_id, name)
    );
    CREATE INDEX agents_by_due ON agents(purge_after) WHERE purge_after IS NOT NULL;
    CREATE INDEX attachments_by_agent ON attachments(account_id, agent);
    """,
    # 5: conversations and their journals. A message's ``arguments`` / ``result`` are JSON text; its client id
    # is unique in its conversation (idempotent appends). ``messages_fts`` is contentless (the text lives
    # once, in ``messages``): its rowid is the message's id, and rows leave it by the FTS 'delete' command.
    # ``scope`` holds two tokens, the (agent, user) pair's and the conversation's (adapters/embedded/conversations.py)
    """
    CREATE TABLE conversations (
        id INTEGER PRIMARY KEY,
        account_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        user_key TEXT NOT NULL,
        key TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0,
        last_turn INTEGER NOT NULL DEFAULT 0,
        folded_through INTEGER NOT NULL DEFAULT 0,
        forgotten_through INTEGER NOT NULL DEFAULT 0,
        unfolded_tokens INTEGER NOT NULL DEFAULT 0,
        unfolded_messages INTEGER NOT NULL DEFAULT 0,
        window_messages INTEGER,
        surface TEXT NOT NULL,
        due_since TEXT,
        deleted_at TEXT,
        UNIQUE (account_id, agent, user_key, key)
    );
    CREATE INDEX conversations_newest ON conversations(account_id, agent, user_key, updated_at DESC);
    CREATE INDEX conversations_by_user ON conversations(account_id, user_key);
    CREATE INDEX conversations_due ON conversations(due_since) WHERE due_since IS NOT NULL;
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id),
        seq INTEGER NOT NULL,
        turn INTEGER NOT NULL,
        role TEXT NOT NULL,
        content TEXT NOT NULL,
        tool_name TEXT,
        tool_call_id TEXT,
        arguments TEXT,
        result TEXT,
        client_id TEXT,
        tokens INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (conversation_id, seq)
    );
    CREATE UNIQUE INDEX messages_by_client_id ON messages(conversation_id, client_id) WHERE client_id IS NOT NULL;
    CREATE INDEX messages_by_tool_call ON messages(conversation_id, tool_call_id, seq) WHERE tool_call_id IS NOT NULL;
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        scope, content, tool_name, content = '', tokenize = 'unicode61 remove_diacritics 0'
    );
    """,
    # 6: keyword search by stems (SPEC §6.1, domain/text.py): FTS5's porter tokenizer, the same algorithm as
    # the ranking's, so "refunding" finds "refund". The entry index keeps its content: copied across.
    """
    CREATE VIRTUAL TABLE entries_terms USING fts5(
        scope, name, description, content, tokenize = 'porter unicode61 remove_diacritics 0'
    );
    INSERT INTO entries_terms (rowid, scope, name, description, content)
        SELECT rowid, scope, name, description, content FROM entries_fts;
    DROP TABLE entries_fts;
    ALTER TABLE entries_terms RENAME TO entries_fts;
    """,
    _stemmed_journal,
    # 7: the semantic index (adapters/embedded/vector_index.py). Every change of an entry or a message queues
    # its row (triggers: no write path can forget), and the indexer brings ``vectors`` up to date from the
    # queue, reading each row as it is then: replays are harmless and an older version never wins.
    """
    CREATE TABLE index_queue (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        source INTEGER NOT NULL
    );
    CREATE TRIGGER entries_queued_on_insert AFTER INSERT ON entries BEGIN
        INSERT INTO index_queue (kind, source) VALUES ('entry', new.rowid);
    END;
    CREATE TRIGGER entries_queued_on_update AFTER UPDATE ON entries BEGIN
        INSERT INTO index_queue (kind, source) VALUES ('entry', new.rowid);
    END;
    CREATE TRIGGER entries_queued_on_delete AFTER DELETE ON entries BEGIN
        INSERT INTO index_queue (kind, source) VALUES ('entry', old.rowid);
    END;
    CREATE TRIGGER messages_queued_on_insert AFTER INSERT ON messages BEGIN
        INSERT INTO index_queue (kind, source) VALUES ('message', new.id);
    END;
    CREATE TRIGGER messages_queued_on_delete AFTER DELETE ON messages BEGIN
        INSERT INTO index_queue (kind, source) VALUES ('message', old.id);
    END;
    INSERT INTO index_queue (kind, source) SELECT 'entry', rowid FROM entries WHERE conversation IS NULL;
    INSERT INTO index_queue (kind, source) SELECT 'message', id FROM messages;
    CREATE TABLE vectors (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        kind TEXT NOT NULL,
        source INTEGER NOT NULL,
        partition TEXT NOT NULL,
        embedder TEXT NOT NULL,
        text_hash TEXT NOT NULL,
        label TEXT NOT NULL,
        seq INTEGER,
        vector BLOB NOT NULL,
        UNIQUE (kind, source)
    );
    CREATE INDEX vectors_by_partition ON vectors(partition, embedder);
    """,
    # 8: how many messages hold each term of the journal's index: a search leaves out terms so common that
    # scoring them would cost more than they tell (SEARCH_TERM_SHARE in adapters/embedded/conversations.py)
    """
    CREATE VIRTUAL TABLE messages_vocab USING fts5vocab(messages_fts, 'row');
    """,
    # 9: what the summary passes wrote (ConversationRecord): how many, the checkpoint version of the latest,
    # and the marks ("<line id>@<when>", space-separated) of the checkpoint's lines a person wrote, which passes carry
    """
    ALTER TABLE conversations ADD COLUMN passes INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE conversations ADD COLUMN checkpoint_version INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE conversations ADD COLUMN lines_by_hand TEXT NOT NULL DEFAULT '';
    """,
    # 10: the last version of each name whose entry is gone (deleted or expired), so that one created again
    # continues after it (versions of a name never repeat); a purge or an erasure forgets it with the layer
    """
    CREATE TABLE entry_last_versions (
        account_id TEXT NOT NULL,
        memory TEXT NOT NULL,
        layer_user TEXT NOT NULL,
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (account_id, memory, layer_user, name)
    ) WITHOUT ROWID;
    """,
    # 11: the context's pinned block reads its candidates from this index, best first, never the whole layer
    # (the terms of its WHERE are the ones entries.py's _PINNABLE queries with, word for word)
    """
    CREATE INDEX entries_pinnable ON entries(account_id, memory, layer_user, importance DESC, updated_at DESC, name)
        WHERE conversation IS NULL AND (visibility = 'read_only' OR (category = 'user_profile' AND importance >= 0.7));
    """,
    # 12: every vector removed, logged as it goes (a trigger: no path can forget), so that each server process
    # drops it from the partitions it holds in memory, as it adds new vectors by id (vector_index.py _refresh)
    """
    CREATE TABLE vector_removals (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        partition TEXT NOT NULL,
        source INTEGER NOT NULL
    );
    CREATE TRIGGER vectors_removed AFTER DELETE ON vectors BEGIN
        INSERT INTO vector_removals (partition, source) VALUES (old.partition, old.source);
    END;
    """,
    # 13: how many entries each layer holds (checkpoints left out), kept by triggers in the write's own
    # transaction (no path can forget), so that the layer limit and the context's memory index count in one
    # read, not a walk of every entry; the expired ones are subtracted by an index range (entries.py)
    """
    CREATE TABLE layer_entry_counts (
        account_id TEXT NOT NULL,
        memory TEXT NOT NULL,
        layer_user TEXT NOT NULL,
        entries INTEGER NOT NULL,
        PRIMARY KEY (account_id, memory, layer_user)
    ) WITHOUT ROWID;
    INSERT INTO layer_entry_counts (account_id, memory, layer_user, entries)
        SELECT account_id, memory, layer_user, count(*) FROM entries WHERE conversation IS NULL
        GROUP BY account_id, memory, layer_user;
    CREATE TRIGGER entries_counted_on_insert AFTER INSERT ON entries WHEN new.conversation IS NULL BEGIN
        INSERT INTO layer_entry_counts (account_id, memory, layer_user, entries)
            VALUES (new.account_id, new.memory, new.layer_user, 1)
            ON CONFLICT (account_id, memory, layer_user) DO UPDATE SET entries = entries + 1;
    END;
    CREATE TRIGGER entries_counted_on_delete AFTER DELETE ON entries WHEN old.conversation IS NULL BEGIN
        UPDATE layer_entry_counts SET entries = entries - 1
            WHERE account_id = old.account_id AND memory = old.memory AND layer_user = old.layer_user;
    END;
    CREATE TRIGGER entries_counted_on_update AFTER UPDATE OF conversation ON entries
        WHEN (old.conversation IS NULL) <> (new.conversation IS NULL) BEGIN
        UPDATE layer_entry_counts SET entries = entries + (CASE WHEN new.conversation IS NULL THEN 1 ELSE -1 END)
            WHERE account_id = new.account_id AND memory = new.memory AND layer_user = new.layer_user;
    END;
    """,
    # 14: the entries' keyword index holds their words without a copy of the text (FTS5 contentless): a save
    # writes the text once in the entry row. Rows leave it by the 'delete' command with the values they were
    # indexed with (adapters/embedded/entry_words.py); ``entry_scope`` is a function each connection has
    """
    DROP TABLE entries_fts;
    CREATE VIRTUAL TABLE entries_fts USING fts5(
        scope, name, description, content, content = '', tokenize = 'porter unicode61 remove_diacritics 0'
    );
    INSERT INTO entries_fts (rowid, scope, name, description, content)
        SELECT rowid, entry_scope(account_id, memory, layer_user), name, description, content FROM entries
        WHERE conversation IS NULL;
    """,
    _history_beside_the_entry,
    # 16: one newest-first index serves what entries_live served, so a save writes one index less: the layer's
    # listing, the memory index's pages, the whole-query scan of search and the counts read only this index
    # (it holds name, description, importance, expiry and whether the row is a checkpoint), and the few entries
    # with an expiry have an index of their own, for the layer limit's count of those expired (written so that it
    # can run again over a database that has them)
    """
    DROP INDEX IF EXISTS entries_live;
    DROP INDEX IF EXISTS entries_newest;
    CREATE INDEX entries_newest ON entries(
        account_id, memory, layer_user, updated_at DESC, name, conversation, expires_at, importance, description
    );
    CREATE INDEX IF NOT EXISTS entries_expiring ON entries(account_id, memory, layer_user, expires_at)
        WHERE expires_at IS NOT NULL AND conversation IS NULL;
    """,
    # 17: a save no longer writes sqlite_sequence: the vector index's queue and the history number their rows
    # without AUTOINCREMENT (the largest id + 1), so neither keeps a counter there. A queue id can be used again
    # once the queue has emptied, which no reader can mistake: vector_index.py reads a batch and deletes it up to
    # its last id under the data dir's catch-up lock, and every id it read is still there until then, so a row
    # queued meanwhile gets a larger one. A history id only orders its name's rows, which are never renumbered.
    # (Both tables are copied under their names; the queue's triggers are made again as migration 7 made them.)
    """
    DROP TRIGGER entries_queued_on_insert;
    DROP TRIGGER entries_queued_on_update;
    DROP TRIGGER entries_queued_on_delete;
    DROP TRIGGER messages_queued_on_insert;
    DROP TRIGGER messages_queued_on_delete;
    CREATE TABLE index_queue_next (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        source INTEGER NOT NULL
    );
    INSERT INTO index_queue_next (id, kind, source) SELECT id, kind, source FROM index_queue;
    DROP TABLE index_queue;
    ALTER TABLE index_queue_next RENAME TO index_queue;
    CREATE TRIGGER entries_queued_on_insert AFTER INSERT ON entries BEGIN
        INSERT INTO index_queue (kind, source) VALUES ('entry', new.rowid);
    END;
    CREATE TRIGGER entries_queued_on_update AFTER UPDATE ON entries BEGIN
        INSERT INTO index_queue (kind, source) VALUES ('entry', new.rowid);
    END;
    CREATE TRIGGER entries_queued_on_delete AFTER DELETE ON entries BEGIN
        INSERT INTO index_queue (kind, source) VALUES ('entry', old.rowid);
    END;
    CREATE TRIGGER messages_queued_on_insert AFTER INSERT ON messages BEGIN
        INSERT INTO index_queue (kind, source) VALUES ('message', new.id);
    END;
    CREATE TRIGGER messages_queued_on_delete AFTER DELETE ON messages BEGIN
        INSERT INTO index_queue (kind, source) VALUES ('message', old.id);
    END;
    CREATE TABLE entry_history_next (
        id INTEGER PRIMARY KEY,
        account_id TEXT NOT NULL,
        memory TEXT NOT NULL,
        layer_user TEXT NOT NULL,
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        operation TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        updated_by TEXT NOT NULL,
        changed_at TEXT NOT NULL,
        description TEXT NOT NULL,
        content TEXT NOT NULL,
        keep_until TEXT NOT NULL,
        category TEXT NOT NULL DEFAULT 'note',
        importance REAL NOT NULL DEFAULT 0.5,
        visibility TEXT NOT NULL DEFAULT 'shared',
        created_at TEXT,
        expires_at TEXT
    );
    INSERT INTO entry_history_next SELECT id, account_id, memory, layer_user, name, version, operation, content_hash,
        updated_by, changed_at, description, content, keep_until, category, importance, visibility, created_at,
        expires_at FROM entry_history;
    DROP TABLE entry_history;
    ALTER TABLE entry_history_next RENAME TO entry_history;
    CREATE INDEX entry_history_by_entry ON entry_history(account_id, memory, layer_user, name, id);
    CREATE INDEX entry_history_by_age ON entry_history(keep_until);
    """,
    # 18: the generations of what each process keeps in memory of the keys and of the memories (generations.py):
    # moved by triggers in the change's own transaction (no path can forget), so a key or a memory remembered
    # with the generation read in the same statement is as the database holds it while the generation stays
    # (it can run again over a database that has them, as the layer-count test's replay of migrations asks)
    """
    CREATE TABLE IF NOT EXISTS cache_generation (
        id INTEGER PRIMARY KEY CHECK (id = 0),
        keys INTEGER NOT NULL,
        memories INTEGER NOT NULL
    );
    INSERT OR IGNORE INTO cache_generation (id, keys, memories) VALUES (0, 0, 0);
    CREATE TRIGGER IF NOT EXISTS api_keys_generation_on_delete AFTER DELETE ON api_keys BEGIN
        UPDATE cache_generation SET keys = keys + 1;
    END;
    CREATE TRIGGER IF NOT EXISTS api_keys_generation_on_update AFTER UPDATE ON api_keys BEGIN
        UPDATE cache_generation SET keys = keys + 1;
    END;
    CREATE TRIGGER IF NOT EXISTS memories_generation_on_insert AFTER INSERT ON memories BEGIN
        UPDATE cache_generation SET memories = memories + 1;
    END;
    CREATE TRIGGER IF NOT EXISTS memories_generation_on_update AFTER UPDATE ON memories BEGIN
        UPDATE cache_generation SET memories = memories + 1;
    END;
    CREATE TRIGGER IF NOT EXISTS memories_generation_on_delete AFTER DELETE ON memories BEGIN
        UPDATE cache_generation SET memories = memories + 1;
    END;
    """,
    # 19: the entries' keyword index writes leaves of at most 2,000 bytes (FTS5's 'pgsz', 4,050 by default, a
    # whole page each): a save appends about a page less to the WAL (adapters/embedded/entry_words.py has the
    # figures). A setting kept in entries_fts_config: the leaves written before keep their size until a merge
    # rewrites them, and readers read either (so it can run again, and over a database that has entries)
    """
    INSERT INTO entries_fts (entries_fts, rank) VALUES ('pgsz', 2000);
    """,
    # 20: a long journal message is searched by its passages too (domain/passages.py): beside the vector of its
    # whole text (``part`` 0, as an entry's and a short message's), one for each passage (parts 1, 2, ...). Every
    # vector is kept as part 0 and every message is queued again, so a journal indexed whole moves to passages as
    # the indexer catches up, embedding only the long messages' passages (this migration is the index's version:
    # it runs once, on the first start after an upgrade). The counter of vector ids goes on from where it was,
    # and the removal log names the part that left.
    _passages,
    # 21: all-MiniLM-L6-v2's token states of journal messages, read by the indexer for mode=deep
    # (adapters/embedded/minilm_states.py): one row per text the re-ranking stage reads of a message (part 0 the
    # message, 1, 2, ... a long one's passages), int8; ``token_reader`` the newest message read and the rows
    # held (kept by triggers). A message deleted or changed loses its rows in the same transaction; when the
    # newest messages go, the reader goes back to read the ids given again.
    """
    CREATE TABLE IF NOT EXISTS token_states (
        message INTEGER NOT NULL,
        part INTEGER NOT NULL,
        text_hash BLOB NOT NULL,
        tokens INTEGER NOT NULL,
        states BLOB NOT NULL,
        PRIMARY KEY (message, part)
    );
    CREATE INDEX IF NOT EXISTS token_states_by_text ON token_states(text_hash);
    CREATE TABLE IF NOT EXISTS token_reader (
        id INTEGER PRIMARY KEY CHECK (id = 0),
        after INTEGER NOT NULL,
        tokens INTEGER NOT NULL
    );
    INSERT OR IGNORE INTO token_reader (id, after, tokens) VALUES (0, 0, 0);
    CREATE TRIGGER IF NOT EXISTS token_states_held_on_insert AFTER INSERT ON token_states BEGIN
        UPDATE token_reader SET tokens = tokens + new.tokens;
    END;
    CREATE TRIGGER IF NOT EXISTS token_states_held_on_delete AFTER DELETE ON token_states BEGIN
        UPDATE token_reader SET tokens = tokens - old.tokens;
    END;
    CREATE TRIGGER IF NOT EXISTS token_states_on_message_delete AFTER DELETE ON messages BEGIN
        DELETE FROM token_states WHERE message = old.id;
        UPDATE token_reader SET after = min(after, (SELECT coalesce(max(id), 0) FROM messages));
    END;
    CREATE TRIGGER IF NOT EXISTS token_states_on_message_update
    AFTER UPDATE OF content, tool_name, arguments, result ON messages BEGIN
        DELETE FROM token_states WHERE message = old.id;
        UPDATE token_reader SET after = min(after, old.id - 1);
    END;
    """,
    # 22: the token states of entries too (minilm_states.py), so that an agent's first deep recall over a memory
    # reads no model: one row per entry, of the text recall reads it by (domain/text.py entry_index_text), its
    # rows counted in ``token_reader.tokens`` with the journal's (one bound) and in ``entry_tokens``. Every entry
    # saved, changed or created before is queued (``entry_token_queue``), by triggers in the write's own
    # transaction; a change or a deletion drops the entry's rows at once (an erasure leaves nothing of it here)
    _entry_token_states,
    # 23: the queue by what it names, so that the indexer finds a searched conversation's queued messages among a
    # large import's without reading the whole queue (vector_index.py, ``asked_first``), and a search's
    # ``index_lag`` is counted from its own messages when they are the fewer (``_queued_in``)
    """
    CREATE INDEX IF NOT EXISTS index_queue_by_source ON index_queue(kind, source);
    """,
]
