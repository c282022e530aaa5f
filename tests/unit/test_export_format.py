"""Reading an export file (``agentmem.client.exports.read_export``): the whole file is checked before anything is
written, and a file that is not an export this version reads is refused with the number of the line at fault."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agentmem.client.exports import (
    FORMAT,
    FORMAT_VERSION,
    ExportFileError,
    content_hash,
    entry_line,
    header_line,
    memory_line,
    read_export,
)

HEADER = header_line({"url": "http://127.0.0.1:8787", "backend": "embedded", "version": "0.1.0"}, None,
                     "2026-12-06T09:00:00Z")
ENTRY: dict[str, Any] = {"name": "tone", "description": "How we write", "content": "Warm — ü ✓", "category": "note",
                         "importance": 0.5, "visibility": "shared", "version": 3, "expires_at": None}


def lines(*records: dict[str, Any] | str) -> list[str]:
    return [HEADER, *(r if isinstance(r, str) else json.dumps(r) + "\n" for r in records)]


def entry(**changes: Any) -> dict[str, Any]:
    return {"type": "entry", "memory": "company", "layer": None, **ENTRY, **changes}


MEMORY = {"type": "memory", "memory": "company", "owner": None}


def test_an_export_reads_back_as_it_was_written() -> None:
    written = [HEADER, memory_line("company", None), entry_line("company", None, ENTRY),
               entry_line("company", "ana", {**ENTRY, "visibility": "private", "content": "Tea\r\nno sugar"})]
    read = read_export(written)
    assert read.header["format"] == FORMAT and read.header["format_version"] == FORMAT_VERSION
    assert [(m.memory, m.owner) for m in read.memories] == [("company", None)]
    assert [(e.layer, e.name, e.content, e.version, e.line) for e in read.entries] == [
        (None, "tone", "Warm — ü ✓", 3, 3), ("ana", "tone", "Tea\r\nno sugar", 3, 4)]
    # and each line is one line of compact JSON, Unicode as is
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in written)
    assert "Warm — ü ✓" in written[2]


def test_the_content_hash_is_the_one_the_service_keeps() -> None:
    from agentmem.adapters.embedded.entries import content_hash as stored_hash

    assert content_hash("Warm — ü") == stored_hash("Warm — ü")


@pytest.mark.parametrize(("written", "line", "says"), [
    ([], 1, "empty"),
    (["not json at all\n"], 1, "not an agentmem export"),
    (['{"format": "something-else", "format_version": 1}\n'], 1, "not an agentmem export"),
    (['["agentmem-export"]\n'], 1, "not an agentmem export"),
    ([json.dumps({"format": FORMAT, "format_version": 2}) + "\n"], 1, "format version 2"),
    ([json.dumps({"format": FORMAT}) + "\n"], 1, "format version None"),
    (lines(MEMORY, entry(), "{not json\n"), 4, "not JSON"),
    (lines(MEMORY, "[1, 2]\n"), 3, "not a JSON object"),
    (lines(MEMORY, "[" * 100_000 + "\n"), 3, "not JSON (nested too deep)"),
    (lines(MEMORY, {"type": "agent", "name": "x"}), 3, "unknown record type"),
    (lines(entry()), 2, "before its memory line"),
    (lines(MEMORY, entry(), entry()), 4, "appears twice"),
    (lines(MEMORY, entry(content=None)), 3, "without 'content'"),
    (lines(MEMORY, {k: v for k, v in entry().items() if k != "version"}), 3, "without 'version'"),
    (lines(MEMORY, entry(version="3")), 3, "'version' has the wrong type"),
    (lines(MEMORY, entry(version=True)), 3, "'version' has the wrong type"),
    (lines(MEMORY, entry(version=0)), 3, "'version' must be 1 or more"),
    (lines(MEMORY, entry(importance="high")), 3, "'importance' has the wrong type"),
    (lines(MEMORY, entry(visibility="public")), 3, "visibility 'public'"),
    (lines(MEMORY, entry(layer=7)), 3, "'layer' has the wrong type"),
    (lines({"type": "memory"}), 2, "without 'memory'"),
])
def test_a_file_that_is_not_an_export_is_refused_naming_the_line(written: list[str], line: int, says: str) -> None:
    with pytest.raises(ExportFileError) as refused:
        read_export(written)
    assert refused.value.line == line
    assert str(refused.value).startswith(f"line {line}: ")
    assert says in str(refused.value)


def test_a_users_conversations_are_read_and_counted() -> None:
    read = read_export(lines(MEMORY, entry(), {"type": "conversation", "agent": "support", "user": "ana", "key": "t1"},
                             {"type": "message", "agent": "support", "user": "ana", "conversation": "t1", "seq": 1,
                              "role": "user", "content": "Hi"}))
    assert (len(read.entries), read.conversations, read.messages) == (1, 1, 1)
    with pytest.raises(ExportFileError, match="line 3: a message line without 'seq'"):
        read_export(lines(MEMORY, {"type": "message", "agent": "support", "conversation": "t1", "role": "user"}))


def test_blank_lines_after_the_header_are_skipped() -> None:
    read = read_export(lines(MEMORY, "\n", entry(), "   \n"))
    assert [e.line for e in read.entries] == [4]


def test_a_walk_waits_out_a_429_and_gives_up_on_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmem.client import RateLimited, ServerError
    from agentmem.client.exports import drive
    from agentmem.client.rules import Call, Op

    waits: list[float] = []
    monkeypatch.setattr("agentmem.client.exports.time.sleep", waits.append)
    answers: list[Any] = [RateLimited("slow down", 429, "rate_limited", {"retry_after": 2}), "page",
                          ServerError("boom", 500, "internal")]

    def run(op: Op[Any]) -> Any:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def steps() -> Any:
        got = yield Op(Call("GET", "/memories"), lambda response: None)
        yield f"got {got}"
        try:
            yield Op(Call("GET", "/memories"), lambda response: None)
        except ServerError as error:
            yield f"gave up: {error.code}"

    # a 429 is sent again after the wait the service asked for; a 500 comes back to the walk at once
    assert list(drive(steps(), run)) == ["got page", "gave up: internal"]
    assert waits == [2.0]
