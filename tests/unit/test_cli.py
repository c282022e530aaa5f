"""The agentmem command, driven with click's CliRunner over a fake transport."""

from __future__ import annotations

import json
import os
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from agentmem.cli import cli, render_table
from agentmem.client import TransportResponse
from agentmem.client.errors import Unreachable
from agentmem.client.transport import HttpTransport
from click.testing import CliRunner, Result


class FakeTransport:
    """Answers with canned responses, in order, and records every request."""

    def __init__(self, *responses: TransportResponse) -> None:
        self.responses = list(responses)
        self.sent: list[dict[str, Any]] = []

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None,
        headers: dict[str, str],
        body: bytes | None,
    ) -> TransportResponse:
        self.sent.append(
            {
                "method": method,
                "path": path,
                "params": params,
                "headers": headers,
                "json": json.loads(body) if body else None,
            }
        )
        assert self.responses, f"unexpected request {method} {path}"
        return self.responses.pop(0)


def answer(
    status: int = 200, payload: Any = None, headers: Mapping[str, str] | None = None
) -> TransportResponse:
    body = b"" if payload is None else json.dumps(payload).encode()
    return TransportResponse(status, dict(headers or {}), body)


MEMORIES: list[dict[str, Any]] = [
    {
        "name": "company",
        "user_id": None,
        "entry_count": 12,
        "attached_to": ["support", "scribe"],
        "created_at": "2025-01-01T00:00:00Z",
        "deleted_at": None,
        "purge_after": None,
    },
    {
        "name": "agent:support",
        "user_id": None,
        "entry_count": 3,
        "attached_to": [],
        "created_at": "2025-01-02T00:00:00Z",
        "deleted_at": None,
        "purge_after": None,
    },
]
ENTRY = {
    "name": "refunds",
    "description": "Our refund rules",
    "version": 3,
    "updated_by": "api",
    "updated_at": "2025-01-02T00:00:00Z",
    "category": "note",
    "importance": 0.5,
    "visibility": "shared",
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTMEM_URL", raising=False)
    monkeypatch.delenv("AGENTMEM_API_KEY", raising=False)


def run(fake: FakeTransport | None, *args: str, stdin: str | None = None) -> Result:
    obj = {"transport": fake} if fake is not None else {}
    return CliRunner().invoke(cli, ["--api-key", "sk-test", *args], obj=obj, input=stdin)


# --- tables and JSON -------------------------------------------------------------------------------


def test_memories_ls_prints_an_aligned_table() -> None:
    # Given two memories
    fake = FakeTransport(answer(200, {"items": MEMORIES, "next_cursor": None}))
    # When they are listed
    result = run(fake, "memories", "ls")
    # Then each column is aligned under its header, with '-' for nothing
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "NAME           USER  ENTRIES  ATTACHED_TO     CREATED_AT",
        "company        -     12       support,scribe  2025-01-01T00:00:00Z",
        "agent:support  -     3        -               2025-01-02T00:00:00Z",
    ]
    assert fake.sent[0]["headers"]["Authorization"] == "Bearer sk-test"


def test_memories_ls_with_json_prints_the_items_as_json() -> None:
    # Given two memories
    fake = FakeTransport(answer(200, {"items": MEMORIES, "next_cursor": None}))
    # When they are listed with the global --json
    result = run(fake, "--json", "memories", "ls")
    # Then stdout is JSON holding both
    assert result.exit_code == 0, result.output
    assert [m["name"] for m in json.loads(result.stdout)] == ["company", "agent:support"]
    assert json.loads(result.stdout)[0]["attached_to"] == ["support", "scribe"]


def test_json_may_also_follow_the_command() -> None:
    # Given a trashed memory
    trashed = {**MEMORIES[0], "deleted_at": "2025-02-01T00:00:00Z", "purge_after": "2025-03-03T00:00:00Z"}
    fake = FakeTransport(answer(200, {"items": [trashed], "next_cursor": None}))
    # When the trash is listed with --json after the command
    result = run(fake, "memories", "ls", "--trash", "--json")
    # Then the trash was asked for and JSON printed
    assert fake.sent[0]["params"] == {"trash": "true"}
    assert json.loads(result.stdout)[0]["purge_after"] == "2025-03-03T00:00:00Z"


def test_an_empty_list_says_so() -> None:
    # Given a memory with no entries
    fake = FakeTransport(answer(200, {"items": [], "next_cursor": None}))
    # When its entries are listed
    result = run(fake, "entries", "ls", "company")
    # Then a short line says there are none
    assert result.stdout.strip() == "no entries"


def test_entries_ls_uses_the_user_layer_and_the_encoded_memory_name() -> None:
    # Given an agent's memory with one entry in a user's layer
    fake = FakeTransport(answer(200, {"items": [ENTRY], "next_cursor": None}))
    # When the user's layer is listed
    result = run(fake, "entries", "ls", "agent:support", "--user", "user_42")
    # Then the request names the layer and the table shows the entry
    assert fake.sent[0]["path"] == "/v1/memories/agent%3Asupport/entries"
    assert fake.sent[0]["params"] == {"user": "user_42"}
    assert result.stdout.splitlines()[1].split() == [
        "refunds",
        "3",
        "api",
        "2025-01-02T00:00:00Z",
        "Our",
        "refund",
        "rules",
    ]


def test_entries_get_prints_the_fields_then_the_content() -> None:
    # Given an entry with two lines of content
    fake = FakeTransport(answer(200, {**ENTRY, "content": "Refund within 30 days.\nNo gift cards."}))
    # When it is read
    result = run(fake, "entries", "get", "company", "refunds", "--version", "3")
    # Then the version was asked for, and the content follows the fields verbatim
    assert fake.sent[0]["params"] == {"version": "3"}
    assert "version:     3" in result.stdout.splitlines()
    assert result.stdout.endswith("\nRefund within 30 days.\nNo gift cards.\n")


def test_entries_put_sends_the_options_and_prints_the_new_version() -> None:
    # Given the server stores the entry at version 4
    fake = FakeTransport(answer(200, {**ENTRY, "version": 4}))
    # When it is saved with a content, description, version and importance
    result = run(
        fake,
        "entries",
        "put",
        "company",
        "refunds",
        "--content",
        "30 days",
        "--description",
        "Our refund rules",
        "--version",
        "3",
        "--importance",
        "0.8",
    )
    # Then the body carries them and the line reports the version
    assert fake.sent[0]["json"] == {
        "content": "30 days",
        "description": "Our refund rules",
        "version": 3,
        "importance": 0.8,
    }
    assert result.stdout.strip() == "saved company/refunds at version 4"


def test_entries_put_no_expiry_sends_an_explicit_null() -> None:
    # Given a server that stores the entry
    fake = FakeTransport(answer(200, {**ENTRY, "version": 2}))
    # When it is saved with --no-expiry
    result = run(fake, "entries", "put", "company", "promo", "--content", "Always.", "--no-expiry")
    # Then the body asks to remove the expiry with an explicit null
    assert result.exit_code == 0, result.output
    assert fake.sent[0]["json"] == {"content": "Always.", "expires_at": None}


def test_entries_put_reads_the_content_from_stdin() -> None:
    # Given content piped in
    fake = FakeTransport(answer(201, {**ENTRY, "version": 1}))
    # When put is given '-' as the content
    run(fake, "entries", "put", "company", "refunds", "--content", "-", stdin="from a pipe\n")
    # Then the piped text is the content
    assert fake.sent[0]["json"]["content"] == "from a pipe\n"


def test_entries_put_reads_the_content_from_a_file(tmp_path: Path) -> None:
    # Given a Markdown file
    source = tmp_path / "refunds.md"
    source.write_text("# Refunds\n30 days.\n", encoding="utf-8")
    fake = FakeTransport(answer(201, {**ENTRY, "version": 1}))
    # When put is given the file
    run(fake, "entries", "put", "company", "refunds", "--file", str(source), "--description", "d")
    # Then its text is the content
    assert fake.sent[0]["json"]["content"] == "# Refunds\n30 days.\n"


def test_entries_put_without_content_is_a_usage_error() -> None:
    # Given nothing on stdin and no --content or --file
    fake = FakeTransport()
    # When put is run
    result = run(fake, "entries", "put", "company", "refunds", stdin="")
    # Then it exits 2 without sending anything
    assert result.exit_code == 2
    assert "--content" in result.stderr
    assert fake.sent == []


def test_entries_search_shows_whose_entry_each_hit_is() -> None:
    # Given one hit in a user's layer and one in the account's
    hits = [
        {**ENTRY, "content": "c", "memory": "company", "user_id": "user_42", "score": 3.0},
        {**ENTRY, "name": "tone", "content": "c", "memory": "company", "user_id": None, "score": 1.25},
    ]
    fake = FakeTransport(answer(200, {"items": hits, "next_cursor": None, "mode": "keyword"}))
    # When the memory is searched
    result = run(fake, "entries", "search", "company", "refund", "--limit", "5")
    # Then the query and limit were sent and the table shows user and score
    assert fake.sent[0]["params"] == {"q": "refund", "limit": "5"}
    assert result.stdout.splitlines() == [
        "NAME     USER     SCORE  DESCRIPTION",
        "refunds  user_42  3.00   Our refund rules",
        "tone     -        1.25   Our refund rules",
    ]


def test_entries_search_says_on_stderr_when_it_found_less_than_it_could() -> None:
    # Given a search answered by words past the semantic deadline, then one while the index is behind
    hit = {**ENTRY, "content": "c", "memory": "company", "user_id": None, "score": 0.5}
    fake = FakeTransport(
        answer(200, {"items": [hit], "next_cursor": None, "mode": "keyword", "fallback": "timeout",
                     "stages": ["keyword"], "index_lag": None}),
        answer(200, {"items": [hit], "next_cursor": None, "mode": "hybrid", "stages": ["keyword", "semantic",
                     "fusion"], "index_lag": 32}),
        answer(200, {"items": [hit], "next_cursor": None, "mode": "hybrid", "index_lag": 0}),
    )
    # When the memory is searched three times
    fell_back, behind, caught_up = (run(fake, "entries", "search", "company", "refund") for _ in range(3))
    # Then the table is on stdout as always, and stderr says why the first answered by words and how far behind
    # the index was for the second; the third says nothing more
    for result in (fell_back, behind, caught_up):
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[1].startswith("refunds")
    assert fell_back.stderr == "answered in keyword mode (timeout)\n"
    assert behind.stderr == ("the semantic index has not caught up with 32 entries yet: until it does, those are "
                             "found by their words only\n")
    assert caught_up.stderr == ""


def test_entries_history_lists_versions_newest_first() -> None:
    # Given two versions
    items = [
        {"version": 2, "operation": "update", "updated_by": "agent", "changed_at": "t2", "description": "d"},
        {"version": 1, "operation": "create", "updated_by": "api", "changed_at": "t1", "description": "d"},
    ]
    fake = FakeTransport(answer(200, {"items": items, "next_cursor": None}))
    # When the history is shown
    result = run(fake, "entries", "history", "company", "refunds")
    # Then the rows keep the server's order
    assert [line.split()[:2] for line in result.stdout.splitlines()[1:]] == [["2", "update"], ["1", "create"]]


def test_entries_rm_sends_the_version() -> None:
    # Given an entry to delete
    fake = FakeTransport(answer(204))
    # When it is removed at a version
    result = run(fake, "entries", "rm", "company", "old-pricing", "--version", "2")
    # Then the DELETE carries it and a line confirms
    assert (fake.sent[0]["method"], fake.sent[0]["params"]) == ("DELETE", {"version": "2"})
    assert result.stdout.strip() == "deleted company/old-pricing"


def test_keys_create_prints_the_secret_once_with_a_warning() -> None:
    # Given a new user key
    fake = FakeTransport(
        answer(201, {"id": "key_1", "kind": "user", "user": "u1", "last4": "abcd", "secret": "sk-secret"})
    )
    # When it is created
    result = run(fake, "keys", "create", "--user", "u1")
    # Then stdout shows the secret and stderr the warning
    assert fake.sent[0]["json"] == {"user": "u1"}
    assert result.stdout.strip() == "key key_1 (user u1): sk-secret"
    assert "not shown again" in result.stderr


def test_memories_rm_says_until_when_it_can_be_restored() -> None:
    # Given the memory goes to the trash
    trashed = {**MEMORIES[0], "deleted_at": "2025-02-01T00:00:00Z", "purge_after": "2025-03-03T00:00:00Z"}
    fake = FakeTransport(answer(200, trashed))
    # When it is removed
    result = run(fake, "memories", "rm", "company")
    # Then the memory itself was deleted and the line names the purge time
    assert (fake.sent[0]["method"], fake.sent[0]["path"]) == ("DELETE", "/v1/memories/company")
    assert (
        result.stdout.strip() == "memory company moved to the trash (restorable until 2025-03-03T00:00:00Z)"
    )


def test_memories_create_with_json_prints_the_memory_from_the_single_put() -> None:
    # Given a new memory for a user
    fake = FakeTransport(answer(201, {**MEMORIES[0], "name": "notes", "user_id": "u1", "entry_count": 0}))
    # When it is created with --json
    result = run(fake, "--json", "memories", "create", "notes", "--user", "u1")
    # Then one PUT was sent and its answer printed
    assert [(s["method"], s["params"]) for s in fake.sent] == [("PUT", {"user": "u1"})]
    assert json.loads(result.stdout)["user_id"] == "u1"


# --- errors ---------------------------------------------------------------------------------------


def test_an_api_error_prints_one_line_with_the_server_message_and_exits_1() -> None:
    # Given the entry moved on to version 3
    fake = FakeTransport(
        answer(
            409,
            {
                "error": {
                    "code": "conflict",
                    "current_version": 3,
                    "message": "entry 'refunds' is at version 3 (you sent 2)",
                }
            },
        )
    )
    # When a put at version 2 is refused
    result = run(fake, "entries", "put", "company", "refunds", "--content", "x", "--version", "2")
    # Then stderr holds exactly one line with the code and the server's message, and the exit code is 1
    assert result.exit_code == 1
    assert result.stderr == "error: conflict: entry 'refunds' is at version 3 (you sent 2)\n"
    assert result.stdout == ""


def test_an_unreachable_server_says_how_to_start_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given nothing listens at the URL (every connection is refused)
    def refuse(self: HttpTransport, method: str, path: str, **kwargs: Any) -> None:
        raise Unreachable(self.base_url, "Connection refused")

    monkeypatch.setattr(HttpTransport, "request", refuse)
    # When any command talks to the service
    result = run(None, "--url", "http://127.0.0.1:8787", "memories", "ls")
    # Then one helpful line names the URL and the command to run, and the exit code is 1
    assert result.exit_code == 1
    assert result.stderr == (
        "error: cannot reach agentmem at http://127.0.0.1:8787 — is `agentmem serve` running?\n"
    )


def test_the_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given AGENTMEM_URL names another server, which refuses connections
    monkeypatch.setenv("AGENTMEM_URL", "http://mem.internal:9000")
    urls: list[str] = []

    def refuse(self: HttpTransport, method: str, path: str, **kwargs: Any) -> None:
        urls.append(self.base_url + path)
        raise Unreachable(self.base_url, "Connection refused")

    monkeypatch.setattr(HttpTransport, "request", refuse)
    # When a command runs without --url
    result = run(None, "keys", "ls")
    # Then it went to that server
    assert urls == ["http://mem.internal:9000/v1/keys"]
    assert "http://mem.internal:9000" in result.stderr


def test_a_missing_api_key_is_a_usage_error_naming_the_variable() -> None:
    # Given no key in flags or environment
    fake = FakeTransport()
    # When a command needs one
    result = CliRunner().invoke(cli, ["memories", "ls"], obj={"transport": fake})
    # Then it exits 2 naming AGENTMEM_API_KEY, without sending anything
    assert result.exit_code == 2
    assert "AGENTMEM_API_KEY" in result.stderr
    assert fake.sent == []


def test_a_missing_argument_is_click_usage_error() -> None:
    # Given no memory name
    # When entries ls runs
    result = run(FakeTransport(), "entries", "ls")
    # Then click reports a usage error
    assert result.exit_code == 2
    assert "Missing argument" in result.stderr


# --- serve and accounts ---------------------------------------------------------------------------


def test_serve_builds_settings_from_the_flags_and_starts_the_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a stand-in server module that records how it was started
    started: list[tuple[Any, str, int, int]] = []
    server = types.ModuleType("agentmem.local.server")
    server.serve = lambda settings, host, port, create_resources, workers: started.append(  # type: ignore[attr-defined]
        (settings, host, port, workers)
    )
    monkeypatch.setitem(sys.modules, "agentmem.local.server", server)
    # When serve runs with a data dir and a port
    result = run(None, "serve", "--data-dir", str(tmp_path / "data"), "--port", "9999")
    # Then the server got settings for that dir and the embedded backend, on the default host, one worker a core
    assert result.exit_code == 0, result.output
    settings, host, port, workers = started[0]
    assert (settings.data_dir, settings.backend, host, port, workers) == (
        tmp_path / "data",
        "embedded",
        "127.0.0.1",
        9999,
        os.cpu_count() or 1,
    )
    # And --workers chooses how many
    assert run(None, "serve", "--data-dir", str(tmp_path / "data"), "--workers", "3").exit_code == 0
    assert started[1][3] == 3


def test_accounts_create_prints_the_key_as_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given a stand-in bootstrap that creates accounts
    made: list[tuple[Any, str]] = []

    def create_account(settings: Any, name: str) -> tuple[str, str]:
        made.append((settings, name))
        return ("acct_1", "sk-first")

    bootstrap = types.ModuleType("agentmem.bootstrap")
    bootstrap.create_account = create_account  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agentmem.bootstrap", bootstrap)
    # When an account is created with --json
    result = run(None, "accounts", "create", "acme", "--data-dir", str(tmp_path), "--json")
    # Then the account was made in that dir and the key printed once as JSON
    assert result.exit_code == 0, result.output
    assert made[0][1] == "acme" and made[0][0].data_dir == tmp_path
    assert json.loads(result.stdout) == {"account": "acct_1", "key": "sk-first"}


def test_accounts_create_of_a_taken_name_is_one_error_line(tmp_path: Path) -> None:
    # Given a real embedded data dir that already has the account "acme"
    first = run(None, "accounts", "create", "acme", "--data-dir", str(tmp_path), "--json")
    assert first.exit_code == 0, first.output
    # When "acme" is created again, and a name with a space is tried
    again = run(None, "accounts", "create", "acme", "--data-dir", str(tmp_path))
    spaced = run(None, "accounts", "create", "two words", "--data-dir", str(tmp_path))
    # Then each fails with one line naming the problem and no traceback
    assert again.exit_code == 1 and spaced.exit_code == 1
    assert again.stderr.strip() == "error: conflict: an account named 'acme' already exists"
    assert spaced.stderr.startswith("error: invalid: ") and "Traceback" not in spaced.output


# --- the table renderer ---------------------------------------------------------------------------


def test_render_table_keeps_cells_on_one_line_and_leaves_no_trailing_blanks() -> None:
    # Given a cell with a newline and a short last column
    rows = [("a", "two\nlines", None)]
    # When the table is rendered
    text = render_table(rows, ["x", "text", "z"])
    # Then the newline becomes a space, None a dash, and no line ends in a blank
    assert text.splitlines() == ["X  TEXT       Z", "a  two lines  -"]
