"""Ordered schema migrations. Append only: never edit a migration that has shipped.

``PRAGMA user_version`` records how many have run.
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
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
]
