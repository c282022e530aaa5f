"""The SDK's workspaces (agentmem.client.workspace) against the real API handler, in-process on a temp data dir,
where links are relative and go through the transport; and once over HTTP against ``agentmem serve``'s server,
where links are absolute and go through ``requests``."""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import agentmem
import pytest
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import Container, build_container, ensure_default_account, set_container
from agentmem.client import (
    Agent,
    Client,
    Forbidden,
    InProcessTransport,
    Invalid,
    NotFound,
    TooLarge,
    TransportResponse,
    UploadLink,
    Workspace,
    WorkspaceFile,
)
from agentmem.settings import Settings

MIB = 1024 * 1024


@dataclass
class Sent:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    size: int | None


class Recording:
    """The in-process transport, keeping what every request sent (its body's size, not the body)."""

    def __init__(self) -> None:
        self.inner = InProcessTransport(lambda_handler)
        self.sent: list[Sent] = []

    def request(
        self, method: str, path: str, *, params: dict[str, str] | None, headers: dict[str, str], body: bytes | None
    ) -> TransportResponse:
        self.sent.append(Sent(method, path, dict(params or {}), dict(headers), None if body is None else len(body)))
        return self.inner.request(method, path, params=params, headers=headers, body=body)

    def clear(self) -> None:
        self.sent.clear()

    def to_links(self) -> list[Sent]:
        return [sent for sent in self.sent if sent.path.startswith("/v1/links/")]


@dataclass
class Service:
    client: Client
    container: Container
    transport: Recording
    key: str
    files: list[Path] = field(default_factory=list)


@pytest.fixture(autouse=True)
def quiet_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    container = build_container(Settings(data_dir=tmp_path / "data"))
    key = ensure_default_account(container)
    assert key is not None
    set_container(container)
    transport = Recording()
    yield Service(Client("http://in-process", key, transport=transport), container, transport, key)
    set_container(None)


@pytest.fixture
def support(service: Service) -> Agent:
    return Agent.create("support", instructions="Answer billing questions.", client=service.client)


@pytest.fixture
def workspace(support: Agent) -> Workspace:
    return support.workspace("ticket-7", user="user_42")


def blob(size: int, seed: int = 7) -> bytes:
    """``size`` bytes that are not all alike (every byte value, in an order that depends on ``seed``)."""
    pattern = bytes((seed * 31 + i * 17) % 256 for i in range(4099))
    return (pattern * (size // len(pattern) + 1))[:size]


# --- the handle ----------------------------------------------------------------------------------


def test_a_workspace_handle_sends_nothing_and_takes_the_agents_user(service: Service, support: Agent) -> None:
    service.transport.clear()
    # When handles are made
    mine = support.workspace("ticket-7", user="user_42")
    accounts = support.workspace("ticket-7")
    users_agent = Agent("helper", user="user_9", client=service.client).workspace("chat-1")
    # Then nothing was sent, and each says whose it is
    assert service.transport.sent == []
    assert (mine.key, mine.user, accounts.user, users_agent.user) == ("ticket-7", "user_42", None, "user_9")
    assert repr(mine) == "Workspace('support', 'ticket-7', user='user_42')"
    assert mine == support.workspace("ticket-7", user="user_42") and mine != accounts
    assert mine.conversation == support.conversation("ticket-7", user="user_42")


# --- writing and reading -------------------------------------------------------------------------


def test_text_binary_and_empty_files_round_trip(workspace: Workspace) -> None:
    # When a text, a binary and an empty file are written
    text = workspace.write("notes/plan.md", "# Plan\nPay invoice 7 — in €.\n")
    binary = workspace.write("data/table.bin", bytes(range(256)) * 3)
    empty = workspace.write("empty.txt", b"")
    # Then each answer describes the stored file
    assert isinstance(text, WorkspaceFile)
    assert (text.path, text.size_bytes) == ("notes/plan.md", len("# Plan\nPay invoice 7 — in €.\n".encode()))
    assert text.modified_at and text.url
    assert (binary.size_bytes, empty.size_bytes) == (768, 0)
    # and each reads back byte for byte (the text as UTF-8)
    assert workspace.read("notes/plan.md") == "# Plan\nPay invoice 7 — in €.\n".encode()
    assert workspace.read("data/table.bin") == bytes(range(256)) * 3
    assert workspace.read("empty.txt") == b""
    # When a file is written again, it is replaced
    workspace.write("notes/plan.md", "v2")
    assert workspace.read("notes/plan.md") == b"v2"


def test_a_small_write_is_one_put_of_the_raw_bytes(service: Service, workspace: Workspace) -> None:
    service.transport.clear()
    # When a small file is written under a folder, with a name that needs encoding
    workspace.write("reports/q3 final.csv", b"a,b\n1,2\n")
    # Then one PUT carried the raw bytes, the path's slashes kept and its space encoded
    [put] = service.transport.sent
    assert put.method == "PUT"
    assert put.path == "/v1/agents/support/conversations/ticket-7/workspace/files/reports/q3%20final.csv"
    assert put.params == {"user": "user_42"}
    assert put.headers["Content-Type"] == "application/octet-stream"
    assert put.headers["Authorization"] == f"Bearer {service.key}"
    assert put.size == 8
    assert workspace.read("reports/q3 final.csv") == b"a,b\n1,2\n"


def test_a_write_over_4_mib_goes_through_an_upload_link_and_a_read_over_6_mib_through_a_download_link(
    service: Service, workspace: Workspace
) -> None:
    data = blob(7 * MIB)
    service.transport.clear()
    # When a 7 MiB file is written
    stored = workspace.write("big/archive.bin", data)
    # Then an upload link was asked for, and the bytes went to it without the key
    asked = [s for s in service.transport.sent if s.path.endswith("/workspace/links")]
    assert [s.method for s in asked] == ["POST"]
    [upload] = service.transport.to_links()
    assert upload.method == "PUT" and upload.size == len(data)
    assert "Authorization" not in upload.headers
    assert not any(s.method == "PUT" and "/workspace/files/" in s.path for s in service.transport.sent)
    assert (stored.path, stored.size_bytes) == ("big/archive.bin", len(data))
    assert stored.modified_at
    # When it is read back
    service.transport.clear()
    assert workspace.read("big/archive.bin") == data
    # Then the API sent the read on to a download link, fetched without the key
    [download] = service.transport.to_links()
    assert download.method == "GET" and "Authorization" not in download.headers
    assert workspace.info("big/archive.bin").size_bytes == len(data)


def test_a_file_of_exactly_the_api_limit_goes_through_the_api_and_one_byte_more_through_links(
    service: Service, workspace: Workspace
) -> None:
    # Given a file of exactly 4 MiB (the most the API carries) and one a byte larger
    exact, over = blob(4 * MIB, seed=3), blob(4 * MIB + 1, seed=4)
    # When the first is written and read, no link is used
    service.transport.clear()
    workspace.write("exact.bin", exact)
    assert workspace.read("exact.bin") == exact
    assert service.transport.to_links() == []
    # When the second is written and read, both go through links (an upload, then a download)
    workspace.write("over.bin", over)
    assert workspace.read("over.bin") == over
    assert [sent.method for sent in service.transport.to_links()] == ["PUT", "GET"]


def test_upload_streams_a_local_file_reporting_progress(
    service: Service, workspace: Workspace, tmp_path: Path
) -> None:
    # Given a 5 MiB local file
    local = tmp_path / "export.csv"
    data = blob(5 * MIB, seed=11)
    local.write_bytes(data)
    sent: list[int] = []
    # When it is uploaded, by name and as a path object
    stored = workspace.upload("exports/export.csv", str(local), progress=sent.append)
    again = workspace.upload("exports/copy.csv", local)
    # Then it was stored whole, and progress added up to its size
    assert stored.size_bytes == again.size_bytes == len(data)
    assert sum(sent) == len(data) and all(step > 0 for step in sent)
    assert workspace.read("exports/export.csv") == data
    assert workspace.read("exports/copy.csv") == data


def test_upload_reads_a_file_object_from_its_position_and_spools_one_that_cannot_seek(
    workspace: Workspace
) -> None:
    # A seekable file object is read from where it stands
    source = io.BytesIO(b"HEADER|the rest")
    source.seek(7)
    assert workspace.upload("rest.txt", source).size_bytes == 8
    assert workspace.read("rest.txt") == b"the rest"

    class Pipe(io.RawIOBase):
        """A stream that cannot seek, like stdin."""

        def __init__(self, data: bytes) -> None:
            self._data = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            chunk = self._data.read(len(buffer))
            buffer[: len(chunk)] = chunk
            return len(chunk)

    # A stream that cannot seek is spooled first; a large one still goes through a link
    big = blob(4 * MIB + 1, seed=5)
    sent: list[int] = []
    assert workspace.upload("piped.bin", io.BufferedReader(Pipe(big)), progress=sent.append).size_bytes == len(big)
    assert workspace.read("piped.bin") == big
    assert sum(sent) == len(big)
    assert workspace.upload("piped-empty.bin", io.BufferedReader(Pipe(b""))).size_bytes == 0


def test_download_streams_to_a_path_or_a_file_object(workspace: Workspace, tmp_path: Path) -> None:
    data = blob(7 * MIB, seed=9)
    workspace.write("big.bin", data)
    workspace.write("small.txt", "hello")
    received: list[int] = []
    # When files are downloaded to paths and to a file object
    big = tmp_path / "big.bin"
    assert workspace.download("big.bin", big, progress=received.append) == len(data)
    assert workspace.download("small.txt", str(tmp_path / "small.txt")) == 5
    sink = io.BytesIO()
    assert workspace.download("small.txt", sink) == 5
    # Then the bytes are the file's, progress added up, and no partial file is left behind
    assert big.read_bytes() == data and sum(received) == len(data)
    assert (tmp_path / "small.txt").read_bytes() == b"hello" == sink.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".part")) == []
    # When a missing file is downloaded, nothing is written and an existing file is left as it was
    with pytest.raises(NotFound):
        workspace.download("missing.txt", tmp_path / "small.txt")
    assert (tmp_path / "small.txt").read_bytes() == b"hello"
    assert not (tmp_path / "small.txt.part").exists()


# --- listing -------------------------------------------------------------------------------------


def test_files_lists_in_path_order_follows_every_page_and_filters_by_prefix(
    service: Service, workspace: Workspace
) -> None:
    # Given 105 files in one folder and two elsewhere
    for number in range(105):
        workspace.write(f"logs/{number:03d}.log", f"line {number}")
    workspace.write("a.txt", "a")
    workspace.write("z/deep/b.txt", "bb")
    service.transport.clear()
    # When every file is listed
    every = workspace.files()
    # Then all come back, in path order, over two pages
    assert [f.path for f in every] == ["a.txt", *[f"logs/{n:03d}.log" for n in range(105)], "z/deep/b.txt"]
    listings = [s for s in service.transport.sent if s.path.endswith("/workspace/files")]
    assert len(listings) == 2 and "cursor" in listings[1].params
    assert all(f.url for f in every) and every[-1].size_bytes == 2
    # and a prefix narrows the list
    assert [f.path for f in workspace.files("z/")] == ["z/deep/b.txt"]
    assert len(workspace.files(prefix="logs/10")) == 5
    assert workspace.files("nothing/") == []
    assert [f.path for f in workspace.iter_files("a")] == ["a.txt"]


def test_info_finds_the_exact_path(workspace: Workspace) -> None:
    workspace.write("report.csv", "1")
    workspace.write("report.csv.bak", "22")
    assert workspace.info("report.csv").size_bytes == 1
    assert workspace.info("report.csv.bak").size_bytes == 2
    with pytest.raises(NotFound):
        workspace.info("report")


# --- links ---------------------------------------------------------------------------------------


def test_url_is_a_signed_link_that_works_without_a_key(service: Service, workspace: Workspace) -> None:
    workspace.write("notes/plan.md", "# Plan")
    # When a link is asked for
    link = workspace.url("notes/plan.md", expires_in_s=600)
    # Then it is the in-process server's signed, expiring link
    assert link.startswith("/v1/links/")
    assert "signature=" in link and "expires=" in link and "method=GET" in link
    # and it answers the bytes to anyone, no key sent
    path, _, query = link.partition("?")
    answer = InProcessTransport(lambda_handler).request(
        "GET", path, params=dict(pair.split("=", 1) for pair in query.split("&")), headers={}, body=None)
    assert (answer.status, answer.body) == (200, b"# Plan")
    # and a link for a missing file, or one that lasts more than a day, is refused
    with pytest.raises(NotFound):
        workspace.url("notes/missing.md")
    with pytest.raises(Invalid) as refused:
        workspace.url("notes/plan.md", expires_in_s=86_401)
    assert refused.value.field == "expires_in_s"


def test_upload_url_says_how_to_upload(service: Service, workspace: Workspace) -> None:
    link = workspace.upload_url("incoming/data.bin", 11, expires_in_s=120)
    assert isinstance(link, UploadLink)
    assert link.url.startswith("/v1/links/") and link.headers == {"Content-Length": "11"}
    assert link.method == "PUT" and link.expires_at and link.expires_in_s == 120
    # When exactly those bytes are PUT to it, without a key
    path, _, query = link.url.partition("?")
    answer = InProcessTransport(lambda_handler).request(
        "PUT", path, params=dict(pair.split("=", 1) for pair in query.split("&")), headers=dict(link.headers),
        body=b"hello world")
    # Then the file is stored
    assert answer.status < 300, answer.body
    assert workspace.read("incoming/data.bin") == b"hello world"
    # and a file over 100 MB gets no link
    with pytest.raises(TooLarge):
        workspace.upload_url("huge.bin", 100 * MIB + 1)


# --- deleting ------------------------------------------------------------------------------------


def test_delete_removes_the_file(workspace: Workspace) -> None:
    workspace.write("tmp/scratch.txt", "x")
    workspace.delete("tmp/scratch.txt")
    with pytest.raises(NotFound):
        workspace.read("tmp/scratch.txt")
    assert workspace.files() == []
    with pytest.raises(NotFound):
        workspace.delete("tmp/scratch.txt")


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../escape.txt", "a/../../b", "./a", "/etc/passwd", "a//b", "a/", "a\\b",
                                  "nul\x00byte", "tab\there", "x" * 256, "a/" * 512 + "b"])
def test_a_path_the_service_refuses_is_invalid_naming_the_path(workspace: Workspace, path: str) -> None:
    for action in (lambda: workspace.write(path, b"x"), lambda: workspace.read(path),
                   lambda: workspace.delete(path), lambda: workspace.url(path)):
        with pytest.raises(Invalid) as refused:
            action()
        assert refused.value.status == 400 and refused.value.field == "path", (path, refused.value)
    assert workspace.files() == []


def test_an_empty_path_is_refused_before_anything_is_sent(service: Service, workspace: Workspace) -> None:
    service.transport.clear()
    with pytest.raises(Invalid) as refused:
        workspace.read("")
    assert refused.value.field == "path"
    assert service.transport.sent == []


def test_workspaces_are_per_user_and_per_conversation(service: Service, support: Agent) -> None:
    support.workspace("ticket-7", user="user_42").write("secret.txt", "for user_42")
    # Another user's, another conversation's and the account's workspaces do not hold it
    for other in (support.workspace("ticket-7", user="user_7"), support.workspace("ticket-8", user="user_42"),
                  support.workspace("ticket-7")):
        assert other.files() == []
        with pytest.raises(NotFound):
            other.read("secret.txt")
    # A user key reaches its own user's workspace; another user's is refused, as their conversation is
    secret = service.client.keys.create(user="user_42").secret
    assert secret is not None
    as_user = Client("http://in-process", secret, transport=InProcessTransport(lambda_handler))
    mine = Agent("support", client=as_user).workspace("ticket-7")
    assert mine.read("secret.txt") == b"for user_42"
    with pytest.raises(Forbidden):
        Agent("support", client=as_user).conversation("ticket-7", user="user_7").messages()
    with pytest.raises(Forbidden):
        Agent("support", client=as_user).workspace("ticket-7", user="user_7").files()
    # An unknown agent answers 404
    with pytest.raises(NotFound):
        Agent("nobody", client=service.client).workspace("ticket-7").write("a.txt", "x")


def test_a_tampered_link_is_refused(workspace: Workspace) -> None:
    workspace.write("a.txt", "x")
    path, _, query = workspace.url("a.txt").partition("?")
    params = dict(pair.split("=", 1) for pair in query.split("&"))
    signature = params["signature"]
    params["signature"] = ("1" if signature[0] == "0" else "0") + signature[1:]
    answer = InProcessTransport(lambda_handler).request("GET", path, params=params, headers={}, body=None)
    assert answer.status == 403


def test_the_names_are_exported_from_the_package() -> None:
    assert agentmem.Workspace is Workspace
    assert agentmem.WorkspaceFile is WorkspaceFile
    assert agentmem.UploadLink is UploadLink
    assert WorkspaceFile.from_dict({"path": "a", "size_bytes": "3", "later": 1}) == WorkspaceFile("a", 3)


# --- over HTTP: absolute links ---------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Client]:
    """``agentmem serve``'s HTTP server on a free port, and an SDK client talking to it over HTTP."""
    from agentmem.local.server import make_server

    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    container = build_container(Settings(data_dir=tmp_path / "served"))
    key = ensure_default_account(container)
    assert key is not None
    server = make_server(container, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = Client(f"http://127.0.0.1:{server.server_address[1]}", key)
    try:
        yield client
    finally:
        client.close()
        server.shutdown()
        server.server_close()
        set_container(None)


def test_over_http_large_files_go_through_absolute_links_with_requests(served: Client, tmp_path: Path) -> None:
    workspace = Agent.create("support", client=served).workspace("ticket-7", user="user_42")
    data = blob(9 * MIB, seed=1)
    local = tmp_path / "big.bin"
    local.write_bytes(data)
    sent: list[int] = []
    # When a 9 MiB file is uploaded and a small one written
    assert workspace.upload("big.bin", local, progress=sent.append).size_bytes == len(data)
    workspace.write("small.txt", "hi")
    # Then the links are absolute, and both files come back
    assert sum(sent) == len(data)
    assert workspace.url("small.txt").startswith(served.url + "/v1/links/")
    assert workspace.read("small.txt") == b"hi"
    assert workspace.read("big.bin") == data
    out = tmp_path / "out.bin"
    assert workspace.download("big.bin", out) == len(data)
    assert out.read_bytes() == data
    # and an empty file goes over the wire too
    assert workspace.upload("empty.bin", io.BytesIO(b"")).size_bytes == 0
    assert workspace.read("empty.bin") == b""
