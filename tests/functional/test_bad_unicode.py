"""Text that is not Unicode, times no store can hold, and link requests bent out of shape (SPEC §10, §12: never a
5xx for bad input): each is a 4xx in the API's shape naming the culprit, nothing is stored, and the server logs
no error.

A lone surrogate (``"\\ud800"``, half of a UTF-16 pair, as a JSON escape) is read by every JSON body's one reading
(``api/json_body.py``) and refused there, whatever the route: a REST body, MCP over HTTP (``/v1/mcp``, its id,
method, tool name and arguments), a tool's execution. A query value whose percent-escapes are not UTF-8
(``%ED%A0%80``, an encoded surrogate; ``%FF``) is refused naming the parameter rather than searched for, and
one in the path naming the path (rather than storing a file under a name with replacement characters). An
``expires_at`` that is outside the years 1–9999 once in UTC (a leap second or an offset takes it there) is a 400
naming it. The REST, MCP and tool cases run on both backends (the module's ``target`` server); the links (served
by ``agentmem serve`` on the embedded backend) on the session's server: a ``Range`` of thousands of digits is
answered, a method a link does not take is a 405 with ``Allow``, and a link's numbers verify only as they were
signed (digits only: ``+N``, ``0N`` and ``N_N`` are the same integer, not the same link).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

import pytest
import requests
from functional_support import Server, auth

JSON = {"Content-Type": "application/json"}
MCP_JSON = {**JSON, "Accept": "application/json, text/event-stream"}
MODERN_MCP = {**MCP_JSON, "MCP-Protocol-Version": "2026-07-28"}
SURROGATE = "\\ud800"  # as JSON escapes it: six characters of the body, half of a pair once read
LOW_SURROGATE = "\\udfff"
ENCODED_SURROGATE = "%ED%A0%80"  # U+D800 written as UTF-8 would write it, which UTF-8 forbids
NOT_UTF8 = "%FF"


@dataclass(frozen=True)
class World:
    agent: str  # attaches `memory`, writable; its conversation `c1` holds a tool call `call-1` and its result
    memory: str


@pytest.fixture(scope="module")
def world(target: Server) -> World:
    run = uuid.uuid4().hex[:8]
    agent, memory = f"uni-agent-{run}", f"uni-{run}"
    with requests.Session() as s:
        s.headers.update(auth(target.key))
        assert s.put(target.url(f"/v1/memories/{memory}")).status_code == 201
        saved = s.put(target.url(f"/v1/memories/{memory}/entries/note"),
                      json={"content": "refunds", "description": "d"})
        assert saved.status_code == 201, saved.text
        made = s.put(target.url(f"/v1/agents/{agent}"),
                     json={"instructions": "Answer.", "memories": [{"name": memory, "writable": True}]})
        assert made.status_code == 201, made.text
        appended = s.post(target.url(f"/v1/agents/{agent}/conversations/c1/messages"), json={"messages": [
            {"role": "user", "content": "refunds?"},
            {"role": "tool_call", "tool_name": "memory__search", "tool_call_id": "call-1", "arguments": {"q": "x"}},
            {"role": "tool_result", "tool_call_id": "call-1", "result": "none"},
        ]})
        assert appended.status_code == 201, appended.text
    return World(agent=agent, memory=memory)


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # {a}: the agent, {m}: its memory
    field: str  # what the error names
    body: str | None = None  # the body's text as sent (JSON escapes and all)
    query: str = ""  # the query string as sent (percent-escapes and all)
    headers: dict[str, str] = field(default_factory=lambda: dict(JSON))


def _save(extra: str) -> str:
    return '{"content": "c", "description": "d", ' + extra + "}"


def _mcp_call(params: str, request_id: str = "1", method: str = "tools/call") -> str:
    return '{"jsonrpc": "2.0", "id": ' + request_id + ', "method": "' + method + '", "params": ' + params + "}"


def _tool(arguments: str) -> str:
    return '{"arguments": ' + arguments + "}"


MCP = ("POST", "/v1/mcp", "agent={a}")
CASES: dict[str, Case] = {
    # REST bodies
    "agent-instructions": Case("PUT", "/v1/agents/{a}", "instructions", '{"instructions": "' + SURROGATE + '"}'),
    "new-agent-instructions": Case("PUT", "/v1/agents/{a}-new", "instructions",
                                   '{"instructions": "Answer ' + LOW_SURROGATE + '"}'),
    "anthropic-tool_use-id": Case(
        "POST", "/v1/agents/{a}/conversations/c2/messages", "messages[0].content[0].id",
        '{"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "' + SURROGATE
        + '", "name": "t", "input": {}}]}]}', query="format=anthropic"),
    # MCP over HTTP: the id, the method, the tool's name and its arguments (both eras)
    "mcp-id": Case(*MCP[:2], "id", '{"jsonrpc": "2.0", "id": "' + SURROGATE + '", "method": "tools/list"}',
                   query=MCP[2], headers=MCP_JSON),
    "mcp-method": Case(*MCP[:2], "method", '{"jsonrpc": "2.0", "id": 1, "method": "' + SURROGATE + '"}',
                       query=MCP[2], headers=MCP_JSON),
    "mcp-notification-method": Case(*MCP[:2], "method", '{"jsonrpc": "2.0", "method": "notifications/' + SURROGATE
                                    + '"}', query=MCP[2], headers=MCP_JSON),
    "mcp-tool-name": Case(*MCP[:2], "params.name", _mcp_call('{"name": "' + SURROGATE + '", "arguments": {}}'),
                          query=MCP[2], headers=MCP_JSON),
    "mcp-tool-argument": Case(*MCP[:2], "params.arguments.query",
                              _mcp_call('{"name": "memory__search", "arguments": {"query": "' + SURROGATE + '"}}'),
                              query=MCP[2], headers=MCP_JSON),
    "mcp-modern-tool-name": Case(
        *MCP[:2], "params.name",
        _mcp_call('{"name": "' + SURROGATE + '", "arguments": {}, "_meta": {"io.modelcontextprotocol/protocolVersion":'
                  ' "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}'),
        query=MCP[2], headers={**MODERN_MCP, "Mcp-Method": "tools/call", "Mcp-Name": "x"}),
    # a tool's execution
    "tool-search-query": Case("POST", "/v1/agents/{a}/tools/memory__search", "arguments.query",
                              _tool('{"query": "refunds ' + SURROGATE + '"}')),
    "tool-argument-name": Case("POST", "/v1/agents/{a}/tools/memory__search", "arguments",
                               _tool('{"' + SURROGATE + '": "x"}')),
    # query parameters whose percent-escapes are not UTF-8
    "entries-search-encoded-surrogate": Case("GET", "/v1/memories/{m}/search", "q", query=f"q={ENCODED_SURROGATE}"),
    "entries-search-not-utf8": Case("GET", "/v1/memories/{m}/search", "q", query=f"q=refunds{NOT_UTF8}"),
    "agent-search-encoded-surrogate": Case("GET", "/v1/agents/{a}/search", "q", query=f"q={ENCODED_SURROGATE}"),
    "journal-search-not-utf8": Case("GET", "/v1/agents/{a}/messages/search", "q", query=f"q=refunds{NOT_UTF8}"),
    # paths whose percent-escapes are not UTF-8 (a file's name was stored with replacement characters)
    "path-file-not-utf8": Case("PUT", "/v1/agents/{a}/conversations/c1/workspace/files/a%FFb.txt", "path", "x"),
    "path-file-encoded-surrogate": Case("PUT", f"/v1/agents/{{a}}/conversations/c1/workspace/files/{ENCODED_SURROGATE}",
                                        "path", "x"),
    "path-memory-not-utf8": Case("PUT", "/v1/memories/{m}%FF", "path"),
    "path-conversation-encoded-surrogate": Case("GET", f"/v1/agents/{{a}}/conversations/c{ENCODED_SURROGATE}/messages",
                                                "path"),
    # times outside the years 1-9999 in UTC
    "expires_at-leap-second-of-9999": Case("PUT", "/v1/memories/{m}/entries/fresh", "expires_at",
                                           _save('"expires_at": "9999-12-31T23:59:60Z"')),
    "expires_at-offset-past-9999": Case("PUT", "/v1/memories/{m}/entries/fresh", "expires_at",
                                        _save('"expires_at": "9999-12-31T23:59:59-23:59"')),
    "expires_at-a-microsecond-past-9999": Case("PUT", "/v1/memories/{m}/entries/note", "expires_at",
                                               _save('"expires_at": "9999-12-31T23:59:59.999999-00:01"')),
    "expires_at-offset-before-year-1": Case("PUT", "/v1/memories/{m}/entries/fresh", "expires_at",
                                            _save('"expires_at": "0001-01-01T00:00:00+01:00"')),
    "tool-expires_at-leap-second-of-9999": Case(
        "POST", "/v1/agents/{a}/tools/memory__save", "arguments.expires_at",
        _tool('{"name": "fresh", "content": "c", "description": "d", "expires_at": "9999-12-31T23:59:60Z"}')),
}


def _log_errors(server: Server, since: int) -> str:
    """What the server logged as an error (a traceback, an ERROR line) after ``since`` bytes of its log."""
    text = server.log.read_bytes()[since:].decode("utf-8", "replace")
    return "\n".join(line[:500] for line in text.splitlines() if "Traceback" in line or '"level":"ERROR"' in line)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_text_that_is_not_unicode_and_times_out_of_range_are_refused_naming_the_field(
    target: Server, world: World, case: Case
) -> None:
    # Given the store as it is, and the server's log
    before = target.snapshot()
    logged = target.log.stat().st_size
    path = case.path.replace("{a}", world.agent).replace("{m}", world.memory)
    query = case.query.replace("{a}", world.agent)
    # When the request is sent
    response = requests.request(case.method, target.url(path) + (f"?{query}" if query else ""),
                                data=None if case.body is None else case.body.encode("ascii"),
                                headers={**auth(target.key), **case.headers}, timeout=30)
    # Then it is a 400 in the API's shape naming the field, in a message that names it too (a tool's argument as
    # the model knows it: `query`, for the field `arguments.query`)
    assert response.status_code == 400, f"{response.status_code}: {response.text[:300]}"
    error = response.json()["error"]
    assert error["code"] == "invalid", error
    assert error["field"] == case.field, error
    assert case.field.removeprefix("arguments.") in error["message"], error
    # And nothing is stored, nor logged as an error
    assert target.snapshot() == before
    assert _log_errors(target, logged) == ""


@pytest.mark.parametrize("body", [
    '{"instructions": "a whole pair: \\ud83d\\ude00"}',  # an emoji as ensure_ascii writes it
    '{"instructions": "not an escape: \\\\ud800"}',  # a backslash, then the letters
], ids=["pair", "escaped-backslash"])
def test_a_surrogate_pair_and_an_escaped_backslash_are_text(target: Server, world: World, body: str) -> None:
    # When an agent's instructions hold a whole surrogate pair, or the six characters \ud800
    response = requests.put(target.url(f"/v1/agents/{world.agent}"), data=body.encode("ascii"),
                            headers={**auth(target.key), **JSON}, timeout=30)
    # Then they are saved as the text they are
    assert response.status_code == 200, response.text
    assert response.json()["instructions"] in ("a whole pair: \U0001f600", "not an escape: \\ud800")


# --- links (agentmem serve, the embedded backend) -------------------------------------------------------


@pytest.fixture(scope="module")
def link(server: Server) -> str:
    """A download link to a 5-byte file."""
    agent = f"uni-link-{uuid.uuid4().hex[:8]}"
    with requests.Session() as s:
        s.headers.update(auth(server.key))
        assert s.put(server.url(f"/v1/agents/{agent}")).status_code == 201
        workspace = server.url(f"/v1/agents/{agent}/conversations/ws/workspace")
        assert s.put(f"{workspace}/files/notes.txt", data=b"hello").status_code == 200
        made = s.post(f"{workspace}/links", json={"path": "notes.txt"})
        assert made.status_code == 201, made.text
        return str(made.json()["url"])


@pytest.fixture(scope="module")
def upload_link(server: Server) -> str:
    """An upload link for UPLOAD's bytes."""
    agent = f"uni-up-{uuid.uuid4().hex[:8]}"
    with requests.Session() as s:
        s.headers.update(auth(server.key))
        assert s.put(server.url(f"/v1/agents/{agent}")).status_code == 201
        made = s.post(server.url(f"/v1/agents/{agent}/conversations/ws/workspace/links"),
                      json={"path": "up.bin", "method": "PUT", "size_bytes": len(UPLOAD)})
        assert made.status_code == 201, made.text
        return str(made.json()["url"])


UPLOAD = b"hello, world"  # twelve bytes: a size of two digits, to write otherwise
MANY_DIGITS = "9" * 4_301  # one more than Python reads as an integer


@pytest.mark.parametrize(("range_header", "status", "body"), [
    (f"bytes={MANY_DIGITS}-", 416, None),  # from past any file
    (f"bytes=0-{MANY_DIGITS}", 206, b"hello"),  # to past its end: the whole of it
    (f"bytes=-{MANY_DIGITS}", 206, b"hello"),  # its last N bytes, N more than it has: the whole of it
], ids=["first", "last", "suffix"])
def test_a_range_of_thousands_of_digits_is_answered(server: Server, link: str, range_header: str, status: int,
                                                    body: bytes | None) -> None:
    logged = server.log.stat().st_size
    # When a download link is asked for a range whose number has 4,301 digits
    response = requests.get(link, headers={"Range": range_header}, timeout=30)
    # Then it is answered, as a range past the file is
    assert response.status_code == status, response.text
    if body is not None:
        assert response.content == body
        assert response.headers["Content-Range"] == "bytes 0-4/5"
    else:
        assert response.headers["Content-Range"] == "bytes */5"
    assert _log_errors(server, logged) == ""


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND", "DELETE", "POST", "PATCH", "OPTIONS"])
def test_a_method_a_link_does_not_take_is_405_with_allow(server: Server, link: str, upload_link: str,
                                                         method: str) -> None:
    before = server.snapshot()
    for url in (link, upload_link):
        # When a link is used with a method it does not take
        response = requests.request(method, url, data=b"hello" if method in ("POST", "PATCH") else None, timeout=30)
        # Then it is a 405 naming the methods it does take, as the API's are
        assert response.status_code == 405, response.text
        assert response.headers["Allow"] == "GET, HEAD, PUT"
        error = response.json()["error"]
        assert error["code"] == "method_not_allowed" and error["allowed"] == ["GET", "HEAD", "PUT"], error
        assert method in error["message"]
    assert server.snapshot() == before


def _bent(url: str, name: str, rewrite: str) -> str:
    """``url`` with its ``name`` number rewritten: ``rewrite`` is a template of the number's digits, ``{}``."""
    found = re.search(rf"([?&]{name}=)([0-9]+)", url)
    assert found is not None, url
    digits = found.group(2)
    value = rewrite.format(digits) if "{}" in rewrite else rewrite.format(first=digits[0], rest=digits[1:])
    return url[: found.start(2)] + value + url[found.end(2):]


NOT_AS_SIGNED = {"plus": "%2B{}", "leading-zero": "0{}", "underscore": "{first}_{rest}", "space": "%20{}",
                 "arabic-digits": "%D9%A0{}"}


@pytest.mark.parametrize("rewrite", NOT_AS_SIGNED.values(), ids=NOT_AS_SIGNED.keys())
def test_a_download_links_expiry_verifies_only_as_it_was_signed(server: Server, link: str, rewrite: str) -> None:
    # Given a link that works
    assert requests.get(link, timeout=30).content == b"hello"
    # When its expiry is written otherwise, the same integer as Python reads it
    response = requests.get(_bent(link, "expires", rewrite), timeout=30)
    # Then the link is refused, as an altered one is
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "forbidden"


@pytest.mark.parametrize("rewrite", NOT_AS_SIGNED.values(), ids=NOT_AS_SIGNED.keys())
@pytest.mark.parametrize("name", ["expires", "size"])
def test_an_upload_links_numbers_verify_only_as_they_were_signed(server: Server, upload_link: str, name: str,
                                                                  rewrite: str) -> None:
    before = server.snapshot()
    # When an upload link's expiry or size is written otherwise
    response = requests.put(_bent(upload_link, name, rewrite), data=UPLOAD, timeout=30)
    # Then it is refused, and nothing is stored
    assert response.status_code == 403, response.text
    assert server.snapshot() == before


def test_a_links_query_that_is_not_utf8_is_refused_naming_it(server: Server, link: str) -> None:
    logged = server.log.stat().st_size
    # When a link's file name is sent with a byte that is not UTF-8
    response = requests.get(link.replace("filename=", f"filename={NOT_UTF8}"), timeout=30)
    # Then it is a 400 naming it
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid" and error["field"] == "filename", error
    assert _log_errors(server, logged) == ""
