"""docs/conversations.md works as written.

The page's Python blocks run in order in one namespace (the page says to run them in one session) against
the real API handler in-process on a fresh data dir, with the SDK's default client pointed at it; every
`print(...)  # value` (and the comment lines right under a print) must be what the block printed, and
afterwards the test checks what the service stored, folded, forgot and removed. The curl and CLI blocks
run against `agentmem serve` in a fresh folder, as a reader would run them. The picture the page shows
must exist and say what the page says.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agentmem
import pytest
import requests
from doc_blocks import fenced_blocks, run_block
from doc_blocks import section as doc_section
from serving import served_as_make_run

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "conversations.md").read_text()
PICTURE = ROOT / "docs" / "img" / "conversation-memory.svg"
SVG = "{http://www.w3.org/2000/svg}"


# --- the service -------------------------------------------------------------------------------------


# `service` (tests/e2e/conftest.py): the SDK talking to the API handler in-process


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`agentmem serve` as `make run` starts it, in a fresh folder; the environment a reader's shell has."""
    with served_as_make_run(tmp_path_factory.mktemp("conversations")) as env:
        yield env


def section(title: str) -> str:
    return doc_section(PAGE, title)


# --- the Python blocks ---------------------------------------------------------------------------------


def test_the_page_runs_as_written_and_does_what_it_says(service: agentmem.Client) -> None:
    # Given the page's Python blocks
    blocks = fenced_blocks(PAGE, "python")
    assert len(blocks) >= 12, "the page lost its examples"
    # When each runs in order in one session
    namespace: dict[str, Any] = {"__name__": "conversations_guide"}
    for number, block in enumerate(blocks, start=1):
        run_block(block, namespace, f"docs/conversations.md python block {number}")

    # Then the checkpoint it read is named for its key, covers what the page says, and reads as the page shows
    checkpoint: agentmem.Checkpoint = namespace["checkpoint"]
    assert checkpoint.name == "context." + hashlib.sha256(b"ticket-7").hexdigest()[:16]
    assert (checkpoint.memory, checkpoint.user_id, checkpoint.conversation) == ("agent:support", "user_42", "ticket-7")
    [shown] = [b for b in fenced_blocks(section("The checkpoint"), "text") if "# Conversation summary" in b]
    assert checkpoint.content == shown.strip()
    # and the context it built carried that summary ahead of a window that did not shrink
    context: agentmem.Context = namespace["context"]
    assert context.summary is not None and context.summary.text == checkpoint.content
    assert {"role": "system", "content": checkpoint.content} == context.messages[2]
    assert context.window.seqs == list(range(23, 42))
    # and the retried append stored the remembered request once, in the 41 messages the erase removed
    first: agentmem.AppendResult = namespace["first"]
    assert first.conversation is not None and first.conversation.key == "ticket-7"

    # and afterwards: user_42 is erased, with every conversation and entry of theirs
    support = agentmem.Agent("support")
    assert support.conversations(user="user_42") == []
    assert support.memory.list(user="user_42") == []
    assert support.search_messages("email", user="user_42") == []
    for key in ("ticket-7", "research"):
        with pytest.raises(agentmem.NotFound):
            support.conversation(key, user="user_42").messages()
    # while the stranger's conversation is untouched, and kept no checkpoint (external is read-only)
    inbox = support.conversation("inbox-3", user="visitor_9")
    assert [m.content for m in inbox.messages()] == ["Do you ship to Portugal?"]
    assert inbox.checkpoint() is None
    assert inbox.info().surface == "external"


def test_the_window_examples_hold_for_the_rows_the_page_appends(service: agentmem.Client) -> None:
    # Given the page's blocks up to the summary pass (the journal and the window sections)
    blocks = fenced_blocks(PAGE, "python")[:6]
    assert "window_messages=6" in blocks[-1]
    namespace: dict[str, Any] = {"__name__": "conversations_guide"}
    for number, block in enumerate(blocks, start=1):
        run_block(block, namespace, f"docs/conversations.md python block {number}")
    chat: agentmem.Conversation = namespace["chat"]
    research: agentmem.Conversation = namespace["research"]
    # Then the journal holds 27 rows, the remembered request once, and the window is the page's
    journal = chat.messages()
    assert [m.seq for m in journal] == list(range(1, 28))
    assert [m.content for m in journal].count("Remember that I prefer email over phone.") == 1
    window = chat.context().window
    assert window.messages[0].role == "user" and journal[7].role == "assistant"  # seq 8: the trimmed answer
    # and the long turn's window starts after the dangling result of plan-1
    assert [m.tool_call_id for m in research.messages()[:3]] == [None, "plan-1", "plan-1"]
    assert research.context().window.messages[0].tool_call_id == "plan-2"
    # and the refused append stored nothing
    assert len(research.messages()) == 8


# --- the picture ---------------------------------------------------------------------------------------


def test_the_picture_is_on_the_page_and_shows_the_context_in_order() -> None:
    # Given the page's image reference and the SVG it points at
    assert "](img/conversation-memory.svg)" in PAGE
    root = ElementTree.parse(PICTURE).getroot()
    # Then it is an SVG with a title and a description for screen readers
    assert root.tag == f"{SVG}svg" and root.get("viewBox")
    assert root.find(f"{SVG}title") is not None and root.find(f"{SVG}desc") is not None
    texts = {(element.text or "").strip(): float(element.get("y", "0")) for element in root.iter(f"{SVG}text")}
    # and it names the three parts of the journal and what the summary covers
    assert "covers_through_seq = 22" in texts
    assert any(text.startswith("recent window: the last 20 rows") for text in texts)
    # and stacks the context's four parts top to bottom in the order of SPEC §5
    stack = ["1 · Pinned block", "2 · Memory index", "3 · Summary", "4 · Recent window"]
    assert [texts[name] for name in stack] == sorted(texts[name] for name in stack)


# --- over HTTP and from the command line ----------------------------------------------------------


def _bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60,
                          cwd=env["WORKDIR"])


def test_the_curl_example_runs(served: dict[str, str]) -> None:
    # Given the page's curl block
    [block] = [b for b in fenced_blocks(section("Over HTTP"), "bash") if "curl" in b]
    # When bash runs it, one JSON answer per line
    result = _bash("set -euo pipefail\n" + block.replace("curl -s ", "curl -s -w '\\n' "), served)
    assert result.returncode == 0, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    agent, appended, page, context, hits, listed, compacted, checkpoint, purged, erased = answers
    # Then each call answered as the page says
    assert agent["name"] == "support"
    assert (appended["added"], [m["seq"] for m in appended["items"]]) == (2, [1, 2])
    assert ([m["content"] for m in page["items"]], page["next_cursor"]) == (
        ["Is my last invoice paid?", "Yes, it was paid on the 3rd."], None)
    assert set(context) >= {"pinned", "memory_index", "summary", "window", "messages", "tokens"}
    assert [m["role"] for m in context["messages"]][-2:] == ["user", "assistant"]
    assert [(h["conversation"], h["seq"], h["role"]) for h in hits["items"]] == [("ticket-9", 1, "user"),
                                                                                 ("ticket-9", 2, "assistant")]
    assert [c["key"] for c in listed["items"]] == ["ticket-9"]
    assert compacted["job_id"]
    assert checkpoint["error"]["code"] == "not_found"
    assert purged["purged"] is True and purged["removed"]["messages"] == 2
    assert erased["user"] == "user_42"
    # and the append sent again with the same client ids answers 200 and adds nothing
    body = re.search(r"-d '(\{\"messages\".*?)'$", block, flags=re.S | re.M)
    assert body is not None
    url = f"{served['AGENTMEM_URL']}/v1/agents/support/conversations/ticket-9b/messages"
    auth = {"Authorization": f"Bearer {served['AGENTMEM_API_KEY']}"}
    first = requests.post(url, params={"user": "user_42"}, headers=auth, data=body[1], timeout=10)
    again = requests.post(url, params={"user": "user_42"}, headers=auth, data=body[1], timeout=10)
    assert (first.status_code, first.json()["added"]) == (201, 2)
    assert (again.status_code, again.json()["added"]) == (200, 0)


def test_the_cli_examples_run(served: dict[str, str]) -> None:
    # Given the page's CLI block, and the agent it talks to
    [block] = [b for b in fenced_blocks(section("From the command line"), "bash") if ".venv/bin/agentmem" in b]
    auth = {"Authorization": f"Bearer {served['AGENTMEM_API_KEY']}"}
    requests.put(f"{served['AGENTMEM_URL']}/v1/agents/support", headers=auth, json={}, timeout=10)
    commands = [line.split("  #")[0].strip().replace(".venv/bin/agentmem", "agentmem") for line in block.splitlines()]
    # When each command runs
    outputs: list[str] = []
    for command in filter(None, commands):
        result = _bash(command, served)
        # Then each succeeds
        assert result.returncode == 0, f"{command}: {result.stderr}"
        outputs.append(result.stdout)
    appended, listed, messages, context, search, compacted, checkpoint, removed, erased = outputs
    assert appended.startswith("appended 1 message to support/ticket-9: seq ")
    assert "ticket-9" in listed.splitlines()[1]
    assert "Is my last invoice paid?" in messages
    assert context.startswith("context of support/ticket-9 with user user_42 on agent: ")
    assert "ticket-9" in search
    assert compacted.startswith("summary pass started: ")
    assert "has no checkpoint" in checkpoint
    assert removed.startswith("purged conversation ticket-9")
    assert erased.startswith("erased user user_42")
