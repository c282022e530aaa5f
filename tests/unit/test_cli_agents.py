"""``agentmem agents``, driven with click's CliRunner against the real API handler in-process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.cli import cli
from agentmem.client import Agent, Client, InProcessTransport, Memory
from agentmem.settings import Settings
from click.testing import CliRunner, Result


class Shell:
    """Runs ``agentmem`` commands with the account key against the in-process API."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.client = Client("http://in-process", key, transport=InProcessTransport(lambda_handler))

    def __call__(self, *args: str, stdin: str | None = None) -> Result:
        obj = {"transport": InProcessTransport(lambda_handler)}
        return CliRunner().invoke(cli, ["--api-key", self.key, *args], obj=obj, input=stdin)


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Shell]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")  # metric lines would land on stdout
    monkeypatch.delenv("AGENTMEM_URL", raising=False)
    container = build_container(Settings(data_dir=tmp_path))
    set_container(container)
    key = ensure_default_account(container)
    assert key is not None
    yield Shell(key)
    set_container(None)


def test_create_then_show_and_ls(run: Shell) -> None:
    # Given two memories
    Memory.create("company", client=run.client)
    Memory.create("notes", client=run.client)
    # When an agent is created attaching one read-only and one writable, with no memory capability
    created = run(
        "agents", "create", "support", "--instructions", "Answer billing questions.", "--memory", "company",
        "--writable", "notes", "--no-memory-capability", "--window", "5",
    )
    # Then one line confirms it
    assert created.exit_code == 0, created.output
    assert created.stdout == "agent support created (version 1)\n"
    # When it is shown
    shown = run("agents", "show", "support")
    # Then the settings come first and the instructions last
    lines = shown.stdout.splitlines()
    assert "memories:          company,notes(w)" in lines
    assert "memory_capability: off" in lines
    assert "window_messages:   5" in lines
    assert lines[-1] == "Answer billing questions."
    # When the agents are listed, as a table and as JSON
    table = run("agents", "ls").stdout.splitlines()
    items = json.loads(run("agents", "ls", "--json").stdout)
    # Then both show it with its memories
    assert table[0].split() == ["NAME", "USER", "MEMORIES", "VERSION", "UPDATED_AT"]
    assert table[1].split()[:4] == ["support", "-", "company,notes(w)", "1"]
    assert items[0]["memories"] == [{"name": "company", "writable": False}, {"name": "notes", "writable": True}]
    assert items[0]["capabilities"] == {"memory": False}


def test_create_for_a_user_and_list_that_users_agents(run: Shell) -> None:
    # Given an agent made for user u1 (as JSON)
    created = run("--json", "agents", "create", "helper", "--user", "u1")
    # Then the JSON names its owner, u1's listing holds it, and the account's table says whose it is
    assert json.loads(created.stdout)["user_id"] == "u1"
    assert [a["name"] for a in json.loads(run("agents", "ls", "--user", "u1", "--json").stdout)] == ["helper"]
    assert run("agents", "ls").stdout.splitlines()[1].split()[:2] == ["helper", "u1"]


def test_creating_an_existing_agent_is_one_error_line(run: Shell) -> None:
    # Given an agent
    Agent.create("support", client=run.client)
    # When it is created again
    again = run("agents", "create", "support")
    # Then one line on stderr that says it exists, with what to do, and exit 1 (no "precondition" the user never
    # asked for)
    assert again.exit_code == 1
    assert again.stderr == ("error: agent 'support' already exists (version 1): see it with `agentmem agents show "
                            "support`, or pick another name\n")
    assert again.stdout == ""


def test_a_memory_given_both_read_only_and_writable_is_a_usage_error(run: Shell) -> None:
    # When one memory is given with --memory and --writable
    result = run("agents", "create", "support", "--memory", "company", "--writable", "company")
    # Then it exits 2 and no agent was made
    assert result.exit_code == 2
    assert "not both" in result.stderr
    assert Agent.list(client=run.client) == []


def test_rm_restore_and_the_trash(run: Shell) -> None:
    # Given an agent
    Agent.create("support", client=run.client)
    # When it is removed
    removed = run("agents", "rm", "support")
    # Then the line says until when it can be restored, and it is in the trash
    assert removed.stdout.startswith("agent support moved to the trash (restorable until ")
    assert run("agents", "ls", "--trash").stdout.splitlines()[1].split()[0] == "support"
    # When it is restored
    restored = run("agents", "restore", "support")
    # Then it is live again
    assert restored.stdout == "agent support restored\n"
    assert run("agents", "ls", "--trash").stdout.strip() == "the trash is empty"


def test_purge_asks_first_and_prints_the_receipt(run: Shell) -> None:
    # Given an agent with one entry in its own memory
    support = Agent.create("support", client=run.client)
    support.memory.save("tone", "Warm.", description="How we write")
    # When purge is answered "no"
    declined = run("agents", "purge", "support", stdin="n\n")
    # Then it aborts and the agent is still there
    assert declined.exit_code == 1
    assert "Aborted" in declined.stderr
    assert support.info().name == "support"
    # When purge is confirmed with --yes
    purged = run("agents", "purge", "support", "--yes")
    # Then the receipt lists what went, and the agent is gone
    assert purged.exit_code == 0, purged.output
    lines = purged.stdout.splitlines()
    assert lines[0] == "purged agent support"
    assert ["entries", "1"] in [line.split() for line in lines]
    assert run("agents", "show", "support").exit_code == 1


def test_purge_with_json_prints_the_receipt_as_json(run: Shell) -> None:
    # Given an agent
    Agent.create("support", client=run.client)
    # When it is purged with --yes --json
    result = run("agents", "purge", "support", "--yes", "--json")
    # Then the receipt is JSON
    receipt = json.loads(result.stdout)
    assert receipt["agent"] == "support" and receipt["removed"]["agents"] == 1


def test_show_of_an_absent_agent_is_one_error_line(run: Shell) -> None:
    # When an absent agent is shown
    result = run("agents", "show", "absent")
    # Then one line names the problem, exit 1
    assert result.exit_code == 1
    assert result.stderr.startswith("error: not_found: ")


def test_tools_prints_the_definitions_as_json(run: Shell) -> None:
    # Given an agent
    Agent.create("support", client=run.client)
    # When its tools are printed in the noorle dialect for Anthropic
    result = run("agents", "tools", "support", "--dialect", "noorle", "--format", "anthropic")
    # Then stdout is a JSON list of tool definitions
    assert result.exit_code == 0, result.output
    tools = json.loads(result.stdout)
    assert {"memory_recall", "memory_store", "memory_forget"} <= {t["name"] for t in tools}


def test_call_prints_the_text_or_the_whole_result(run: Shell) -> None:
    # Given an agent
    Agent.create("support", client=run.client)
    save = json.dumps({"name": "tone", "content": "Warm, brief.", "description": "How we write"})
    # When it saves through its tool, then reads with --json
    saved = run("agents", "call", "support", "memory__save", "--args", save, "--conversation", "c1")
    read = run("agents", "call", "support", "memory__read", "--args", '{"name": "tone"}', "--json")
    # Then the first prints the tool's text, the second the result as JSON
    assert saved.exit_code == 0, saved.output
    assert saved.stdout.strip()
    result = json.loads(read.stdout)
    assert (result["tool"], result["operation"]) == ("memory__read", "read")
    assert result["result"]["entry"]["content"] == "Warm, brief."


def test_call_refused_on_a_surface_is_one_error_line(run: Shell) -> None:
    # Given an agent
    Agent.create("support", client=run.client)
    save = json.dumps({"name": "tone", "content": "Warm.", "description": "How we write"})
    # When an external caller's save is tried
    result = run("agents", "call", "support", "memory__save", "--args", save, "--surface", "external")
    # Then it is refused with one line, exit 1
    assert result.exit_code == 1
    assert result.stderr.startswith("error: forbidden: ")


def test_call_with_arguments_that_are_not_a_json_object_is_a_usage_error(run: Shell) -> None:
    # When --args is not JSON, or not an object
    not_json = run("agents", "call", "support", "memory__read", "--args", "{name: tone}")
    not_object = run("agents", "call", "support", "memory__read", "--args", "[1, 2]")
    # Then each exits 2 naming --args, before any request
    assert (not_json.exit_code, not_object.exit_code) == (2, 2)
    assert "--args" in not_json.stderr and "JSON object" in not_object.stderr
