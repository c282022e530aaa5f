"""The embedded backend keeps the keys and the memory records it found in each process (adapters/embedded/
generations.py), and drops them the moment any process on the data dir changes what they were read from: a key
revoked or a user erased elsewhere is refused at once here, a memory trashed, restored, purged or made again
elsewhere is seen as it is at once, and what was not found is never kept. "Elsewhere" is another process: a
Python of its own on the same data dir, as a worker of ``agentmem serve --workers N`` or an operator command is."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from agentmem.adapters.embedded.accounts import SqliteAccountStore
from agentmem.bootstrap import Container, build_container
from agentmem.domain.errors import NotFoundError, UnauthorizedError
from agentmem.domain.models import Principal
from agentmem.services.agents import AgentSettings
from agentmem.services.entries import SaveRequest
from agentmem.settings import Settings


def elsewhere(data_dir: Path, code: str, **values: Any) -> Any:
    """Run ``code`` in another Python process with a container of its own on ``data_dir`` (``container``, the
    ``values`` given, ``Principal`` and ``SaveRequest`` in scope); what it assigns to ``result``, as JSON."""
    script = textwrap.dedent("""
        import json, sys
        from pathlib import Path
        from agentmem.bootstrap import build_container
        from agentmem.domain.models import Principal
        from agentmem.services.entries import SaveRequest
        from agentmem.settings import Settings
        values = json.loads(sys.argv[2])
        for name in ("principal", "user_principal"):
            if name in values:
                values[name] = Principal(**values[name])
        globals().update(values)
        container = build_container(Settings(data_dir=Path(sys.argv[1]), embedder="none"))
        result = None
    """) + textwrap.dedent(code) + "\nprint(json.dumps(result))\n"
    done = subprocess.run([sys.executable, "-c", script, str(data_dir), json.dumps(values)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def as_json(principal: Principal) -> dict[str, Any]:
    return {"account_id": principal.account_id, "key_id": principal.key_id, "kind": principal.kind,
            "user_id": principal.user_id}


@pytest.fixture
def here(tmp_path: Path) -> Container:
    return build_container(Settings(data_dir=tmp_path, embedder="none"))


@pytest.fixture
def account(here: Container) -> tuple[Principal, str]:
    _, secret = here.keys.create_account("acme")
    return here.keys.authenticate("Bearer " + secret), secret


def test_a_key_revoked_by_another_process_is_refused_here_at_once(
    here: Container, account: tuple[Principal, str], tmp_path: Path
) -> None:
    # Given a second key of the account that this process has authenticated (and keeps)
    principal, _ = account
    key, secret = here.keys.create_key(principal)
    assert here.keys.authenticate(f"Bearer {secret}").key_id == key.key_id
    assert here.keys.authenticate(f"Bearer {secret}").key_id == key.key_id

    # When another process revokes it
    elsewhere(tmp_path, "container.keys.delete_key(principal, key_id)", principal=as_json(principal),
              key_id=key.key_id)

    # Then this process refuses it on its next call, and still takes the account's other key
    with pytest.raises(UnauthorizedError):
        here.keys.authenticate(f"Bearer {secret}")
    assert here.keys.authenticate(f"Bearer {account[1]}") == principal


def test_a_user_erased_by_another_process_has_their_key_refused_here_at_once(
    here: Container, account: tuple[Principal, str], tmp_path: Path
) -> None:
    # Given a user's key this process has authenticated
    principal, _ = account
    _, secret = here.keys.create_key(principal, user="ana")
    assert here.keys.authenticate(f"Bearer {secret}").user_id == "ana"

    # When another process erases the user
    elsewhere(tmp_path, "container.erasure.erase_user(principal, 'ana')", principal=as_json(principal))

    # Then the key is refused here
    with pytest.raises(UnauthorizedError):
        here.keys.authenticate(f"Bearer {secret}")


def test_a_key_not_found_is_found_as_soon_as_another_process_makes_it(
    here: Container, account: tuple[Principal, str], tmp_path: Path
) -> None:
    # Given a secret this process was shown and refused (AGENTMEM_API_KEY before it was made a key)
    principal, _ = account
    secret = "am_made_elsewhere_a_moment_later"
    with pytest.raises(UnauthorizedError):
        here.keys.authenticate(f"Bearer {secret}")

    # When another process makes it one of the account's keys
    elsewhere(tmp_path, "container.keys.ensure_account('acme', secret)", secret=secret)

    # Then this process takes it on its next call
    assert here.keys.authenticate(f"Bearer {secret}").account_id == principal.account_id


def test_a_memory_trashed_restored_purged_and_made_again_by_another_process_is_seen_here_as_it_is(
    here: Container, account: tuple[Principal, str], tmp_path: Path
) -> None:
    # Given a user's memory with an entry, which this process has read (and keeps the memory's record of)
    principal, _ = account
    here.memories.create(principal, "notes", user="ana")
    here.entries.save(principal, "notes", "flat", SaveRequest(content="Ana's flat is in Lisbon.", description="Home"),
                      user="ana")
    assert here.entries.read(principal, "notes", "flat", user="ana").version == 1
    who = as_json(principal)

    # When another process trashes it, Then it is gone here
    elsewhere(tmp_path, "container.memories.delete(principal, 'notes', user='ana')", principal=who)
    with pytest.raises(NotFoundError):
        here.entries.read(principal, "notes", "flat", user="ana")

    # When another process restores it, Then it is back here
    elsewhere(tmp_path, "container.memories.restore(principal, 'notes', user='ana')", principal=who)
    assert here.entries.read(principal, "notes", "flat", user="ana").content == "Ana's flat is in Lisbon."

    # When another process erases Ana (her memory purged) and makes an account memory of the same name
    elsewhere(tmp_path, """
        container.erasure.erase_user(principal, 'ana')
        container.memories.create(principal, 'notes')
        office = SaveRequest(content='The office flat.', description='Office')
        container.entries.save(principal, 'notes', 'flat', office)
    """, principal=who)

    # Then here the name is the account's memory: its entry read from the account layer, none in Ana's
    assert here.memories.get(principal, "notes", counts=False).user_id is None
    assert here.entries.read(principal, "notes", "flat").content == "The office flat."
    with pytest.raises(NotFoundError):
        here.entries.read(principal, "notes", "flat", user="ana")


def test_an_agents_own_memory_purged_and_made_again_by_another_process_is_seen_here_as_it_is(
    here: Container, account: tuple[Principal, str], tmp_path: Path
) -> None:
    # Given an agent whose own memory holds an entry this process has read
    principal, _ = account
    here.agents.put(principal, "support", AgentSettings())
    here.entries.save(principal, "agent:support", "tone", SaveRequest(content="Be brief.", description="Tone"))
    assert here.entries.read(principal, "agent:support", "tone").version == 1
    who = as_json(principal)

    # When another process deletes the agent (its memory goes to the trash with it), Then the memory is gone here
    elsewhere(tmp_path, "container.agents.delete(principal, 'support')", principal=who)
    with pytest.raises(NotFoundError):
        here.entries.read(principal, "agent:support", "tone")

    # When another process purges it and makes the agent again, Then its new memory is here, empty
    elsewhere(tmp_path, """
        container.agents.purge(principal, 'support')
        from agentmem.services.agents import AgentSettings
        container.agents.put(principal, 'support', AgentSettings())
    """, principal=who)
    assert here.memories.get(principal, "agent:support", counts=False).deleted_at is None
    with pytest.raises(NotFoundError):
        here.entries.read(principal, "agent:support", "tone")


def test_a_write_that_rolls_back_changes_nothing_kept_and_the_next_change_is_seen(
    here: Container, account: tuple[Principal, str]
) -> None:
    # Given a key this process keeps
    principal, _ = account
    key, secret = here.keys.create_key(principal)
    assert here.keys.authenticate(f"Bearer {secret}").key_id == key.key_id
    store = here.stores.accounts
    assert isinstance(store, SqliteAccountStore)

    # When a transaction deletes it and fails before it commits
    with pytest.raises(RuntimeError), store.db.write() as conn:
        conn.execute("DELETE FROM api_keys WHERE key_id=?", (key.key_id,))
        raise RuntimeError("a failure after the delete")

    # Then the key still works (nothing changed), and once it is deleted for good it is refused
    assert here.keys.authenticate(f"Bearer {secret}").key_id == key.key_id
    here.keys.delete_key(principal, key.key_id)
    with pytest.raises(UnauthorizedError):
        here.keys.authenticate(f"Bearer {secret}")


def test_while_nothing_changes_an_entry_read_asks_the_database_for_the_entry_only(
    here: Container, account: tuple[Principal, str]
) -> None:
    # Given a memory with an entry, read once (its key and its memory looked up)
    principal, secret = account
    here.memories.create(principal, "kb")
    here.entries.save(principal, "kb", "faq", SaveRequest(content="Refunds take five days.", description="FAQ"))
    here.entries.read(here.keys.authenticate(f"Bearer {secret}"), "kb", "faq")
    store = here.stores.accounts
    assert isinstance(store, SqliteAccountStore)
    statements: list[str] = []
    conn: sqlite3.Connection = store.db.connection()
    conn.set_trace_callback(statements.append)

    # When the same key reads the entry again
    try:
        entry = here.entries.read(here.keys.authenticate(f"Bearer {secret}"), "kb", "faq")
    finally:
        conn.set_trace_callback(None)

    # Then one statement ran: the entry's (the key and the memory were not read again)
    assert entry.content == "Refunds take five days."
    assert len(statements) == 1 and "FROM entries" in statements[0], statements
