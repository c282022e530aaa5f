"""``agentmem conversations`` and ``agentmem users``, driven with click's CliRunner against the real API
handler in-process on a temp data dir."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import Container, build_container, ensure_default_account, set_container
from agentmem.cli import cli
from agentmem.client import Agent, Client, Conversation, InProcessTransport, Message, NotFound
from agentmem.settings import Settings
from click.testing import CliRunner, Result


class Shell:
    """Runs ``agentmem`` commands with the account key against the in-process API."""

    def __init__(self, key: str, container: Container) -> None:
        self.key = key
        self.container = container
        self.client = Client("http://in-process", key, transport=InProcessTransport(lambda_handler))

    def __call__(self, *args: str, stdin: str | None = None, key: str | None = None) -> Result:
        obj = {"transport": InProcessTransport(lambda_handler)}
        return CliRunner().invoke(cli, ["--api-key", key or self.key, *args], obj=obj, input=stdin)

    def json(self, *args: str) -> Any:
        result = self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def chat(self, key: str = "ticket-7", user: str | None = "user_42") -> Conversation:
        return Agent("support", client=self.client).conversation(key, user=user)

    def wait(self, job_id: str) -> None:
        jobs = self.container.jobs()
        assert jobs is not None
        assert jobs.wait(job_id, timeout=30).state == "succeeded"  # type: ignore[attr-defined]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Shell]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # metric lines would land on stdout
    monkeypatch.delenv("AGENTMEM_URL", raising=False)
    container = build_container(Settings(data_dir=tmp_path))
    set_container(container)
    key = ensure_default_account(container)
    assert key is not None
    shell = Shell(key, container)
    Agent.create("support", instructions="Answer billing questions.", client=shell.client)
    yield shell
    set_container(None)


A_TURN_WITH_A_TOOL: list[dict[str, Any]] = [
    {"role": "user", "content": "What is my plan?"},
    {"role": "tool_call", "tool_name": "lookup_plan", "tool_call_id": "call-1", "arguments": {"customer": "user_42"}},
    {"role": "tool_result", "tool_call_id": "call-1", "result": {"plan": "Team", "billing": "yearly"}},
    {"role": "assistant", "content": "You are on the Team plan, billed yearly."},
]


def turns(count: int, start: int = 1) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for number in range(start, start + count):
        rows += [{"role": "user", "content": f"Is invoice {number} paid?"},
                 {"role": "assistant", "content": f"Invoice {number} is paid."}]
    return rows


# --- appending and reading back ------------------------------------------------------------------


def test_append_one_message_then_ls_and_show(run: Shell) -> None:
    # When a user message and an answer are appended one by one
    first = run("conversations", "append", "support", "ticket-7", "--user", "user_42", "--role", "user",
                "--content", "Hi, I'm Ana.")
    second = run("conversations", "append", "support", "ticket-7", "--user", "user_42", "--role", "assistant",
                 "--content", "Hello Ana!")
    # Then each says where it landed
    assert first.exit_code == 0, first.output
    assert first.stdout == "appended 1 message to support/ticket-7: seq 1\n"
    assert second.stdout == "appended 1 message to support/ticket-7: seq 2\n"
    # and the journal holds both, in order
    assert [(m.seq, m.role, m.content) for m in run.chat().messages()] == [
        (1, "user", "Hi, I'm Ana."), (2, "assistant", "Hello Ana!")]
    # When user_42's conversations are listed and the one shown
    table = run("conversations", "ls", "support", "--user", "user_42").stdout.splitlines()
    shown = run("conversations", "show", "support", "ticket-7", "--user", "user_42").stdout.splitlines()
    # Then the table and the fields describe it
    assert table[0].split() == ["KEY", "USER", "MESSAGES", "TURNS", "SUMMARISED", "SUMMARY_DUE", "UPDATED_AT"]
    assert table[1].split()[:6] == ["ticket-7", "user_42", "2", "1", "0", "no"]
    assert "messages:              2" in shown
    assert "summary_due:           no" in shown
    # and the account's own conversations are another list
    assert run("conversations", "ls", "support").stdout == "no conversations\n"
    assert run.json("conversations", "ls", "support", "--user", "user_42")[0]["key"] == "ticket-7"


def test_append_a_batch_from_a_file_and_read_it_as_a_table_or_json(run: Shell, tmp_path: Path) -> None:
    # Given a file holding a turn with a tool call
    batch = tmp_path / "messages.json"
    batch.write_text(json.dumps(A_TURN_WITH_A_TOOL))
    # When it is appended
    appended = run("conversations", "append", "support", "ticket-7", "--user", "user_42", "--file", str(batch))
    # Then all four are stored in order, the tool rows whole
    assert appended.stdout == "appended 4 messages to support/ticket-7: seq 1–4\n"
    journal = run.chat().messages()
    assert [m.role for m in journal] == ["user", "tool_call", "tool_result", "assistant"]
    assert journal[1].arguments == {"customer": "user_42"}
    assert journal[2].result == {"plan": "Team", "billing": "yearly"}
    # When the journal is printed
    lines = run("conversations", "messages", "support", "ticket-7", "--user", "user_42").stdout.splitlines()
    # Then one row per message, tool rows saying what they called and got
    assert lines[0].split() == ["SEQ", "TURN", "ROLE", "MESSAGE"]
    assert lines[2].split(maxsplit=3) == ["2", "1", "tool_call", 'lookup_plan(call-1) {"customer": "user_42"}']
    assert lines[3].split(maxsplit=3) == ["3", "1", "tool_result", 'call-1 → {"plan": "Team", "billing": "yearly"}']
    # and as JSON it is the page, every field of every message
    page = run.json("conversations", "messages", "support", "ticket-7", "--user", "user_42")
    assert page["next_cursor"] is None
    assert [m["seq"] for m in page["items"]] == [1, 2, 3, 4]
    assert page["items"][1]["arguments"] == {"customer": "user_42"}


def test_a_batch_may_come_on_stdin_as_an_object_with_messages(run: Shell) -> None:
    body = json.dumps({"messages": turns(2)})
    result = run("conversations", "append", "support", "c1", "--file", "-", stdin=body)
    assert result.stdout == "appended 4 messages to support/c1: seq 1–4\n"
    assert [m.content for m in run.chat("c1", None).messages()][-1] == "Invoice 2 is paid."


def test_the_same_client_id_is_stored_once(run: Shell) -> None:
    args = ("conversations", "append", "support", "c1", "--content", "Hi", "--client-id", "turn-1")
    # When the same append runs twice
    first, again = run(*args), run(*args)
    # Then the second stored nothing and says so
    assert first.stdout == "appended 1 message to support/c1: seq 1\n"
    assert again.exit_code == 0 and again.stdout == "already stored in support/c1: seq 1\n"
    assert len(run.chat("c1", None).messages()) == 1


def test_a_tool_call_and_its_result_from_options(run: Shell) -> None:
    # When a tool call and its result are appended with the tool options
    run("conversations", "append", "support", "c1", "--content", "Look it up")
    call = run("conversations", "append", "support", "c1", "--role", "tool_call", "--tool-name", "lookup",
               "--tool-call-id", "t1", "--args", '{"q": "plan"}')
    result = run("conversations", "append", "support", "c1", "--role", "tool_result", "--tool-call-id", "t1",
                 "--result", '["Team", 2]')
    assert (call.exit_code, result.exit_code) == (0, 0), call.output + result.output
    # Then the tool call view shows them whole
    shown = run("conversations", "tool-call", "support", "c1", "t1")
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert "tool_name:    lookup" in lines and "call_seq:     2" in lines and "result_seq:   3" in lines
    assert shown.stdout.index("arguments:") < shown.stdout.index('"q": "plan"') < shown.stdout.index("result:")
    assert json.loads(shown.stdout.split("result:\n")[1]) == ["Team", 2]
    assert run.json("conversations", "tool-call", "support", "c1", "t1")["arguments"] == {"q": "plan"}
    # and an unknown id is one error line, exit 1
    missing = run("conversations", "tool-call", "support", "c1", "t404")
    assert missing.exit_code == 1 and missing.stderr.startswith("error: not_found: ")


def test_messages_pages_with_after_and_limit_and_all(run: Shell) -> None:
    # Given 30 messages
    run.chat().append(turns(15))
    base = ("conversations", "messages", "support", "ticket-7", "--user", "user_42")
    # When one page of 4 is asked for after seq 10
    page = run(*base, "--after", "10", "--limit", "4")
    # Then it holds seqs 11-14 and says on stderr how to go on
    assert [line.split()[0] for line in page.stdout.splitlines()[1:]] == ["11", "12", "13", "14"]
    assert "--after 14" in page.stderr
    # When --all is given, every message comes (more than one default page would hold is fine too)
    every = run(*base, "--all")
    assert len(every.stdout.splitlines()) == 31 and every.stderr == ""
    assert run.json(*base, "--all")["next_cursor"] is None
    # and --all with --limit is a usage error
    assert run(*base, "--all", "--limit", "3").exit_code == 2


def test_append_usage_errors_exit_2_and_store_nothing(run: Shell, tmp_path: Path) -> None:
    batch = tmp_path / "m.json"
    batch.write_text(json.dumps(turns(1)))
    base = ("conversations", "append", "support", "c1")
    for args in (
        (),  # a user message needs --content
        ("--file", str(batch), "--content", "Hi"),  # one or the other
        ("--file", str(batch), "--role", "assistant"),
        ("--role", "tool_call", "--tool-name", "x", "--tool-call-id", "1", "--args", "{not json"),
        ("--role", "tool_call", "--tool-name", "x", "--tool-call-id", "1", "--args", "[1]"),
        ("--content", "Hi", "--window", "30"),
    ):
        result = run(*base, *args)
        assert result.exit_code == 2, (args, result.output)
    bad_file = tmp_path / "bad.json"
    bad_file.write_text('{"role": "user"}')
    assert run(*base, "--file", str(bad_file)).exit_code == 2
    with pytest.raises(NotFound):
        run.chat("c1", None).messages()


def test_an_append_the_service_refuses_is_one_error_line(run: Shell) -> None:
    # When a tool call without its id, and an append to an agent that does not exist, are sent
    refused = run("conversations", "append", "support", "c1", "--role", "tool_call", "--tool-name", "lookup")
    missing = run("conversations", "append", "nobody", "c1", "--content", "Hi")
    # Then each is one line on stderr, exit 1, naming the code
    assert refused.exit_code == 1 and refused.stderr.startswith("error: invalid: messages[0]")
    assert missing.exit_code == 1 and missing.stderr.startswith("error: not_found: ")
    assert refused.stderr.count("\n") == 1 and refused.stdout == ""


# --- the context, search, the summary ------------------------------------------------------------


def test_context_prints_the_parts_in_order_and_json_has_the_token_counts(run: Shell) -> None:
    # Given a pinned profile entry and a conversation with a tool call
    agent = Agent("support", client=run.client)
    agent.memory.save("profile-name", "Her name is Ana.", description="The user's name", category="user_profile",
                      importance=0.8, user="user_42")
    run.chat().append(A_TURN_WITH_A_TOOL)
    # When the context is printed
    result = run("conversations", "context", "support", "ticket-7", "--user", "user_42")
    out = result.stdout
    # Then a header sums it up, then the pinned block, the index and the window's rows, in that order
    assert result.exit_code == 0, result.output
    assert out.startswith("context of support/ticket-7 with user user_42 on agent: 6 messages, ")
    order = ["=== system: pinned (1 entry", "Her name is Ana.", "=== system: memory index (1 entry",
             "- profile-name: The user's name", "=== user · seq 1 · turn 1 ===", "What is my plan?",
             "=== tool_call lookup_plan · id call-1 · seq 2 ===", '{"customer": "user_42"}',
             "=== tool_result · id call-1 · seq 3 ===", "=== assistant · seq 4 · turn 1 ==="]
    positions = [out.index(text) for text in order]
    assert positions == sorted(positions)
    assert "summary" not in out.split("\n", 2)[2]  # no summary part before a pass has run
    # and as JSON: every part with its tokens, which add up
    context = run.json("conversations", "context", "support", "ticket-7", "--user", "user_42")
    parts = context["pinned"]["tokens"] + context["memory_index"]["tokens"] + context["window"]["tokens"]
    assert context["tokens"] == parts > 0
    assert [m["role"] for m in context["messages"]] == ["system", "system", "user", "tool_call", "tool_result",
                                                         "assistant"]
    assert context["summary"] is None


def test_search_finds_messages_and_is_refused_on_the_mcp_surface(run: Shell) -> None:
    run.chat("billing").append(Message.user("My March invoice is wrong."), Message.assistant("I will fix it."))
    run.chat("shipping").append(Message.user("The parcel with the invoice is late."))
    # When the journal is searched, everywhere and in one conversation
    everywhere = run("conversations", "search", "support", "invoice", "--user", "user_42").stdout.splitlines()
    in_one = run.json("conversations", "search", "support", "invoice", "--user", "user_42", "--conversation",
                      "shipping")
    # Then the hits name their conversation and seq
    assert everywhere[0].split() == ["CONVERSATION", "SEQ", "ROLE", "WRITTEN", "SCORE", "SNIPPET"]
    # (the answer "I will fix it." comes too, on its question's words: a message borrows from its neighbours)
    assert {tuple(line.split()[:2]) for line in everywhere[1:]} == {("billing", "1"), ("billing", "2"),
                                                                    ("shipping", "1")}
    assert [(h["conversation"], h["seq"]) for h in in_one] == [("shipping", 1)]
    assert run("conversations", "search", "support", "refund", "--user", "user_42").stdout == "no messages found\n"
    # and through the MCP surface the journal is not searchable
    refused = run("conversations", "search", "support", "invoice", "--user", "user_42", "--surface", "mcp")
    assert refused.exit_code == 1 and refused.stderr.startswith("error: forbidden: ")


def test_compact_then_checkpoint_shows_the_summary_and_what_it_covers(run: Shell) -> None:
    # Given a conversation of 13 turns whose first asks to remember something
    chat = run.chat()
    chat.append(Message.user("Remember that my door code is 4512."), Message.assistant("Noted."), turns(12))
    base = ("support", "ticket-7", "--user", "user_42")
    # Then before any pass there is no checkpoint (and JSON says null)
    assert run("conversations", "checkpoint", *base).stdout.startswith("conversation ticket-7 has no checkpoint")
    assert run.json("conversations", "checkpoint", *base) is None
    # When a pass is started, and has run
    started = run("conversations", "compact", *base)
    assert started.stdout.startswith("summary pass started: ")
    run.wait(started.stdout.split(": ", 1)[1].strip())
    # Then the checkpoint covers the rows before the window, its content last
    shown = run("conversations", "checkpoint", *base)
    lines = shown.stdout.splitlines()
    assert "covers_through_seq: 6" in lines
    assert any(line.startswith("name:               context.") for line in lines)
    assert "- my door code is 4512." in lines
    # and the context and show say the same
    assert "=== system: summary through seq 6 (" in run("conversations", "context", *base).stdout
    assert run.json("conversations", "show", *base)["covers_through_seq"] == 6
    job = run.json("conversations", "compact", *base)
    assert isinstance(job["job_id"], str) and job["job_id"]


# --- deleting and erasing ------------------------------------------------------------------------


def test_rm_keeps_the_journal_and_rm_purge_asks_then_removes_everything(run: Shell) -> None:
    run.chat().append(turns(2))
    base = ("conversations", "rm", "support", "ticket-7", "--user", "user_42")
    # When it is deleted without purge
    deleted = run(*base)
    # Then it says the journal stays, and it does
    assert deleted.stdout == "conversation ticket-7 deleted; its journal and checkpoint stay (--purge removes them)\n"
    assert run("conversations", "ls", "support", "--user", "user_42").stdout == "no conversations\n"
    assert len(run.chat().messages()) == 4
    # When a purge is not confirmed
    declined = run(*base, "--purge", stdin="n\n")
    # Then nothing went
    assert declined.exit_code == 1 and "Aborted" in declined.stderr
    assert len(run.chat().messages()) == 4
    # When it is purged with --yes
    purged = run(*base, "--purge", "--yes")
    # Then the receipt lists what went, and the journal is gone
    lines = purged.stdout.splitlines()
    assert lines[0] == "purged conversation ticket-7"
    assert lines[1].split() == ["REMOVED", "COUNT"]
    assert ["messages", "4"] in [line.split() for line in lines]
    with pytest.raises(NotFound):
        run.chat().messages()


def test_users_erase_asks_then_removes_the_users_conversations_and_entries(run: Shell) -> None:
    run.chat().append(turns(1))
    Agent("support", client=run.client).memory.save("plan", "Team.", description="Her plan", user="user_42")
    run.chat("other", "user_7").append(turns(1))
    # When the erase is not confirmed, nothing goes
    assert run("users", "erase", "user_42", stdin="n\n").exit_code == 1
    assert len(run.chat().messages()) == 2
    # When a user key tries it, it is refused
    user_key = run.client.keys.create(user="user_42").secret
    assert user_key is not None
    refused = run("users", "erase", "user_42", "--yes", key=user_key)
    assert refused.exit_code == 1 and refused.stderr.startswith("error: forbidden: ")
    # When the account key erases user_42
    receipt = run.json("users", "erase", "user_42", "--yes")
    # Then the receipt counts their conversation, messages and entries, and none of it is left
    assert receipt["user"] == "user_42"
    assert (receipt["removed"]["conversations"], receipt["removed"]["messages"], receipt["removed"]["entries"]) == (
        1, 2, 1)
    with pytest.raises(NotFound):
        run.chat().messages()
    assert Agent("support", client=run.client).memory.list(user="user_42") == []
    assert len(run.chat("other", "user_7").messages()) == 2
    # and as a table
    again = run("users", "erase", "user_7", "--yes")
    assert again.stdout.splitlines()[0] == "erased user user_7"
    assert ["conversations", "1"] in [line.split() for line in again.stdout.splitlines()]


def test_the_groups_are_registered(run: Shell) -> None:
    top = run("--help").stdout
    assert "conversations" in top and "users" in top
    listed = run("conversations", "--help").stdout
    for command in ("ls", "show", "append", "messages", "context", "search", "tool-call", "checkpoint", "compact",
                    "rm"):
        assert f"  {command} " in listed, command


# --- importing a transcript ----------------------------------------------------------------------


def test_import_a_transcript_with_a_progress_bar_then_again_adding_nothing(run: Shell, tmp_path: Path) -> None:
    # Given a JSONL transcript of 120 messages, a turn with a tool among them
    rows = [*turns(58), *A_TURN_WITH_A_TOOL]
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text("".join(json.dumps(row) + "\n" for row in rows))
    # When it is imported
    first = run("conversations", "import", "support", "ticket-7", str(transcript), "--user", "user_42")
    # Then it says what it added, with a progress bar on stderr, and the journal holds it all in order
    assert first.exit_code == 0, first.output
    assert first.stdout == ("imported 120 messages into support/ticket-7 (120 rows, seq 1–120): 120 added, "
                            "0 already there, 0 skipped\n")
    assert "importing" in first.stderr
    journal = run.chat().messages()
    assert [m.content for m in journal[:2]] == ["Is invoice 1 paid?", "Invoice 1 is paid."]
    assert journal[117].arguments == {"customer": "user_42"} and journal[118].result == {"plan": "Team",
                                                                                       "billing": "yearly"}
    # When it is imported again
    again = run.json("conversations", "import", "support", "ticket-7", str(transcript), "--user", "user_42")
    # Then nothing is added
    assert (again["added"], again["already_there"], again["rows"]) == (0, 120, 120)
    assert len(run.chat().messages()) == 120


def test_an_imported_transcript_keeps_its_dates_and_search_takes_after_and_before(run: Shell, tmp_path: Path) -> None:
    # Given a transcript whose lines carry the time each message was written
    rows = [{"role": "user", "content": "The invoice for March is wrong.", "created_at": "2026-01-03T08:00:00Z"},
            {"role": "assistant", "content": "I fixed the March invoice.", "created_at": "2026-01-03T08:01:00Z"},
            {"role": "user", "content": "The April invoice is wrong too.", "created_at": "2026-02-11T17:20:00Z"}]
    transcript = tmp_path / "dated.jsonl"
    transcript.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert run("conversations", "import", "support", "ticket-9", str(transcript), "--user", "user_42").exit_code == 0
    # Then the journal keeps them, and a search bounded in time finds only that window's, with its date
    assert [m.created_at for m in run.chat("ticket-9").messages()] == [
        "2026-01-03T08:00:00.000000Z", "2026-01-03T08:01:00.000000Z", "2026-02-11T17:20:00.000000Z"]
    found = run("conversations", "search", "support", "invoice", "--user", "user_42", "--after", "2026-02-01")
    assert [line.split()[:5] for line in found.stdout.splitlines()[1:]] == [
        ["ticket-9", "3", "user", "2026-02-11", "17:20"]]
    assert [h["seq"] for h in run.json("conversations", "search", "support", "invoice", "--user", "user_42",
                                       "--before", "2026-02-01")] in ([1, 2], [2, 1])
    refused = run("conversations", "search", "support", "invoice", "--user", "user_42", "--after", "2026-03-01",
                  "--before", "2026-02-01")
    assert refused.exit_code == 1 and "later than before" in refused.stderr
    # and a line with a time in the future names its line, and nothing is stored
    future = tmp_path / "future.jsonl"
    future.write_text(json.dumps({"role": "user", "content": "hi", "created_at": "2999-01-01T00:00:00Z"}) + "\n")
    bad = run("conversations", "import", "support", "ticket-10", str(future), "--user", "user_42")
    assert bad.exit_code == 1 and "line 1.created_at" in bad.stderr and "in the future" in bad.stderr


def test_import_an_anthropic_request_body_from_stdin_says_what_it_skipped(run: Shell) -> None:
    body = {"system": "Be brief.", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Read this"},
                                     {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]},
        {"role": "assistant", "content": "It is a receipt."}]}
    result = run("conversations", "import", "support", "scan-1", "-", "--format", "anthropic", stdin=json.dumps(body))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "imported 2 messages into support/scan-1 (2 rows, seq 1–2): 2 added, 0 already there, 2 skipped"
    assert lines[1].startswith("  skipped system: the request's system prompt is not kept")
    assert lines[2] == ("  skipped messages[0].content[1]: 'image' blocks are not kept (the journal holds text "
                        "and tool calls)")


def test_import_a_malformed_file_names_the_line_and_stores_nothing(run: Shell, tmp_path: Path) -> None:
    transcript = tmp_path / "bad.jsonl"
    transcript.write_text('{"role": "user", "content": "Hi"}\n{"role": "user", "content": "Hi again"\n')
    result = run("conversations", "import", "support", "ticket-7", str(transcript), "--user", "user_42")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: invalid: line 2 is not JSON")
    assert run("conversations", "ls", "support", "--user", "user_42").stdout == "no conversations\n"


def test_context_in_a_model_apis_shape(run: Shell) -> None:
    run.chat().append(A_TURN_WITH_A_TOOL)
    shaped = run.json("conversations", "context", "support", "ticket-7", "--user", "user_42", "--format", "bedrock")
    assert shaped["format"] == "bedrock" and shaped["system"] == []
    printed = run("conversations", "context", "support", "ticket-7", "--user", "user_42", "--format", "openai")
    assert [m["role"] for m in json.loads(printed.stdout)["messages"]] == ["user", "assistant", "tool", "assistant"]
