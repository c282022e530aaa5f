"""Workspaces over real HTTP (SPEC §8, §10.1): a conversation's files, written and read through the API, and
the links that reach them with no key, followed the way a user's browser follows them (a plain
``requests.get``, no Authorization header), against a real ``agentmem serve`` on both backends.

On the embedded backend the links are HMAC-signed URLs served by ``agentmem serve`` itself, so every rule of a
link is checked end to end (expiry, signature, method, size, Range, HEAD). On the AWS backend they are S3
presigned URLs; moto's S3 server checks neither expiry nor signatures, so there the URL's terms are read
from its query instead, and the bytes are still moved through it.

Bad input on the workspace endpoints (paths, link bodies, listing parameters) is in ``test_bad_input.py``.
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit, urlunsplit

import pytest
import requests
from functional_support import Server, auth, bucket_snapshot, create_account, running_aws_server

MIB = 1024 * 1024
API_FILE_LIMIT = 4 * MIB  # 4,194,304: the most a file written or read through the API may be
FILE_LIMIT = 100 * MIB  # 104,857,600: the most a file holds
DEFAULT_EXPIRES_S = 3600
MAX_EXPIRES_S = 86_400
TIMEOUT = 30
BIG_TIMEOUT = 300
# the longest paths there are: 1,024 bytes, and 1,023 whose last name is 255 bytes (on both backends too long
# for a storage key as it is, so kept under a hash of the path, with the path beside it)
PATH_1024 = "/".join(("a" * 255, "b" * 255, "c" * 255, "d" * 254, "e"))
PATH_LONG_NAME = "/".join(c * 255 for c in "wxyz")
assert len(PATH_1024.encode()) == 1024 and len(PATH_LONG_NAME.encode()) == 1023

BACKENDS = ("embedded", "aws")


# --- the servers -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def aws_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``agentmem serve --backend aws`` on DynamoDB Local and moto's S3, for this module."""
    with running_aws_server(tmp_path_factory.mktemp("functional-workspaces-aws") / "data") as server:
        assert requests.get(server.url("/v1/health"), timeout=10).json()["backend"] == "aws"
        yield server


@pytest.fixture(scope="module", params=BACKENDS)
def target(request: pytest.FixtureRequest) -> Server:
    """The server of a test that runs on both backends: the session's embedded one, or the module's AWS one."""
    server: Server = request.getfixturevalue("server" if request.param == "embedded" else "aws_server")
    return server


# --- a workspace, spoken to over HTTP --------------------------------------------------------------


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@dataclass
class Workspace:
    """One conversation's workspace, asked for with ``key`` (and ``user=`` when ``user`` is set)."""

    server: Server
    key: str
    agent: str
    conversation: str
    user: str | None = None
    session: requests.Session = field(default_factory=requests.Session, repr=False)

    def url(self, tail: str = "") -> str:
        return self.server.url(f"/v1/agents/{self.agent}/conversations/{self.conversation}/workspace{tail}")

    def request(self, method: str, tail: str, **kwargs: Any) -> requests.Response:
        params = dict(kwargs.pop("params", None) or {})
        if self.user is not None:
            params.setdefault("user", self.user)
        headers = {**auth(self.key), **(kwargs.pop("headers", None) or {})}
        kwargs.setdefault("timeout", TIMEOUT)
        return self.session.request(method, self.url(tail), params=params, headers=headers, **kwargs)

    def put(self, path: str, data: bytes) -> requests.Response:
        return self.request("PUT", f"/files/{quote(path)}", data=data,
                            headers={"Content-Type": "application/octet-stream"})

    def write(self, path: str, data: bytes) -> dict[str, Any]:
        response = self.put(path, data)
        assert response.status_code == 200, response.text[:300]
        written: dict[str, Any] = response.json()
        return written

    def get(self, path: str, **kwargs: Any) -> requests.Response:
        return self.request("GET", f"/files/{quote(path)}", **kwargs)

    def delete(self, path: str) -> requests.Response:
        return self.request("DELETE", f"/files/{quote(path)}")

    def files(self, **params: Any) -> requests.Response:
        return self.request("GET", "/files", params=params)

    def listing(self, **params: Any) -> list[dict[str, Any]]:
        """Every file, page after page."""
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            response = self.files(**params, **({"cursor": cursor} if cursor else {}))
            assert response.status_code == 200, response.text[:300]
            page = response.json()
            items += page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                return items

    def link_response(self, **body: Any) -> requests.Response:
        return self.request("POST", "/links", json=body)

    def link(self, **body: Any) -> dict[str, Any]:
        response = self.link_response(**body)
        assert response.status_code == 201, response.text[:300]
        made: dict[str, Any] = response.json()
        return made

    def paths(self) -> set[str]:
        return {item["path"] for item in self.listing()}

    def other(self, **changes: Any) -> Workspace:
        """The workspace of another conversation, user or key (a session of its own)."""
        values = {"server": self.server, "key": self.key, "agent": self.agent, "conversation": self.conversation,
                  "user": self.user, **changes}
        return Workspace(**values)


def make_agent(server: Server, key: str, name: str | None = None) -> str:
    name = name or unique("ws-agent")
    made = requests.put(server.url(f"/v1/agents/{name}"), headers=auth(key), timeout=TIMEOUT,
                        json={"instructions": "Keep the user's files in the workspace."})
    assert made.status_code == 201, made.text
    return name


def user_key(server: Server, user: str) -> str:
    made = requests.post(server.url("/v1/keys"), headers=auth(server.key), json={"user": user}, timeout=TIMEOUT)
    assert made.status_code == 201, made.text
    secret: str = made.json()["secret"]
    return secret


def append_message(workspace: Workspace, text: str = "Here is the report.") -> None:
    """A message in the workspace's conversation, so the conversation has a record (and a journal)."""
    params = {"user": workspace.user} if workspace.user else {}
    posted = requests.post(
        workspace.server.url(f"/v1/agents/{workspace.agent}/conversations/{workspace.conversation}/messages"),
        headers=auth(workspace.key), params=params, json={"messages": [{"role": "user", "content": text}]},
        timeout=TIMEOUT,
    )
    assert posted.status_code in (200, 201), posted.text


@pytest.fixture
def ws(target: Server) -> Iterator[Workspace]:
    """A fresh agent's workspace in a fresh conversation with the account, on the test's backend."""
    workspace = Workspace(target, target.key, make_agent(target, target.key), unique("conv"))
    with workspace.session:
        yield workspace


@pytest.fixture
def local_ws(server: Server) -> Iterator[Workspace]:
    """The same on the embedded backend only (whose links ``agentmem serve`` checks itself)."""
    workspace = Workspace(server, server.key, make_agent(server, server.key), unique("conv"))
    with workspace.session:
        yield workspace


# --- reading what comes back ------------------------------------------------------------------------


def terms(url: str) -> dict[str, str]:
    """A link's query, decoded (one value each)."""
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}


def with_query(url: str, **changes: str | None) -> str:
    """``url`` with query parameters replaced (None removes one), everything else as it was."""
    parts = urlsplit(url)
    pairs = [pair.split("=", 1) for pair in parts.query.split("&") if pair]
    query = {name: value for name, value in pairs}
    for name, value in changes.items():
        if value is None:
            query.pop(name, None)
        else:
            query[name] = quote(value, safe="")
    return urlunsplit(parts._replace(query="&".join(f"{name}={value}" for name, value in query.items())))


def with_path(url: str, donor: str) -> str:
    """``url``'s query (its signature) on ``donor``'s path: a link re-pathed to another file."""
    return urlunsplit(urlsplit(donor)._replace(query=urlsplit(url).query))


def error_of(response: requests.Response, status: int, code: str) -> dict[str, Any]:
    """The §10 error shape, with this status and code."""
    assert response.status_code == status, f"{response.status_code}: {response.text[:300]}"
    assert response.headers["Content-Type"].startswith("application/json"), response.headers
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and len(error["message"]) >= 10, error
    return error


def when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp()


def assert_link_terms(server: Server, url: str, *, method: str, expires_in_s: int, filename: str | None = None,
                      size: int | None = None) -> None:
    """What a link says about itself: on AWS an S3 SigV4 presigned URL, on the embedded backend a signed
    link of ``agentmem serve``."""
    found = terms(url)
    if server.backend == "aws":
        assert found["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256", found
        assert found["X-Amz-Expires"] == str(expires_in_s), found
        assert found["X-Amz-Signature"], found
        signed = found["X-Amz-SignedHeaders"].split(";")
        if method == "PUT":
            assert "content-length" in signed, found  # S3 takes exactly the signed size
            assert "response-content-disposition" not in found
        else:
            assert filename is not None
            disposition = found["response-content-disposition"]
            assert disposition.startswith("attachment;"), disposition
            assert filename in unquote(disposition), disposition
        assert url.startswith(server.aws_env["AWS_ENDPOINT_URL_S3"] if server.aws_env else ""), url
        return
    assert url.startswith(server.url("/v1/links/")), url
    assert found["method"] == method, found
    assert abs(int(found["expires"]) - (time.time() + expires_in_s)) < 60, found
    assert len(found["signature"]) == 64, found
    if size is not None:
        assert found["size"] == str(size), found
    if filename is not None:
        assert found["filename"] == filename, found


def lifetime_s(server: Server, url: str) -> int:
    """How long a link works from now, as it says."""
    found = terms(url)
    if server.backend == "aws":
        return int(found["X-Amz-Expires"])
    return int(found["expires"]) - int(time.time())


def download(url: str) -> requests.Response:
    """What a browser does with a link: a GET with no key."""
    return requests.get(url, timeout=TIMEOUT)


def gone(server: Server, url: str) -> None:
    """A link to a file that is not there any more: the embedded server answers 404 in the §10 shape. On AWS,
    S3 answers a presigned GET of a missing key 404 (403 when the signer may not list the bucket), and moto
    answers 403 (it takes the missing key's ``response-content-disposition`` for a header the request lacks),
    so there the object is also looked for in the bucket itself."""
    got = download(url)
    if server.backend == "embedded":
        error_of(got, 404, "not_found")
        return
    assert server.aws_env is not None
    assert got.status_code in (403, 404), got.text[:300]
    bucket = server.aws_env["AGENTMEM_WORKSPACE_BUCKET"]
    key = unquote(urlsplit(url).path).removeprefix(f"/{bucket}/")
    assert key not in {item[0] for item in bucket_snapshot(server.aws_env)}, key


# --- used by a user's browser: download and upload links --------------------------------------------


def test_a_browser_downloads_a_file_through_every_link_the_api_gives(ws: Workspace) -> None:
    # Given a file written through the API, with a name that needs quoting
    path, data = "reports/résumé final.txt", "Q3: naïve forecast → 42\n".encode()
    written = ws.write(path, data)
    assert written["path"] == path and written["size_bytes"] == len(data)
    # When a browser follows the links of the write, of the listing and of a link request, with no key
    listed = {item["path"]: item for item in ws.listing()}
    link = ws.link(path=path)
    for url in (written["url"], listed[path]["url"], link["url"]):
        got = download(url)
        # Then each gives the exact bytes, named as the file, as the text it is
        assert got.status_code == 200, got.text[:300]
        assert got.content == data
        assert got.headers["Content-Type"].startswith("text/plain")
        disposition = got.headers["Content-Disposition"]
        assert disposition.startswith("attachment;") and "résumé final.txt" in unquote(disposition), disposition
        # And each link says what it is: a GET for an hour, naming the file
        assert_link_terms(ws.server, url, method="GET", expires_in_s=DEFAULT_EXPIRES_S, filename="résumé final.txt")
    # And the link request says the same in its answer
    assert link["method"] == "GET" and link["path"] == path and link["headers"] == {}
    assert link["expires_in_s"] == DEFAULT_EXPIRES_S
    assert abs(when(link["expires_at"]) - (time.time() + DEFAULT_EXPIRES_S)) < 60


def test_a_link_lasts_as_long_as_asked_up_to_a_day(ws: Workspace) -> None:
    # Given a file
    ws.write("notes.md", b"# notes\n")
    # When links are asked for a day, and a listing's links for a day and for a minute
    day = ws.link(path="notes.md", expires_in_s=MAX_EXPIRES_S)
    listed_day = ws.files(expires_in_s=MAX_EXPIRES_S).json()["items"][0]
    listed_minute = ws.files(expires_in_s=60).json()["items"][0]
    # Then each lasts what was asked
    assert day["expires_in_s"] == MAX_EXPIRES_S
    assert abs(when(day["expires_at"]) - (time.time() + MAX_EXPIRES_S)) < 60
    assert_link_terms(ws.server, day["url"], method="GET", expires_in_s=MAX_EXPIRES_S, filename="notes.md")
    assert_link_terms(ws.server, listed_day["url"], method="GET", expires_in_s=MAX_EXPIRES_S, filename="notes.md")
    assert_link_terms(ws.server, listed_minute["url"], method="GET", expires_in_s=60, filename="notes.md")
    # And they work
    assert download(day["url"]).content == b"# notes\n"


def test_a_browser_uploads_a_file_through_an_upload_link(ws: Workspace) -> None:
    # Given a file already there, and an upload link for new bytes of it
    ws.write("data/upload.bin", b"old bytes")
    data = os.urandom(200_000)
    link = ws.link(path="data/upload.bin", method="PUT", size_bytes=len(data))
    # Then the link says what to send: a PUT of exactly that size, for an hour
    assert link["method"] == "PUT" and link["path"] == "data/upload.bin"
    assert link["headers"] == {"Content-Length": str(len(data))}
    assert link["expires_in_s"] == DEFAULT_EXPIRES_S
    assert_link_terms(ws.server, link["url"], method="PUT", expires_in_s=DEFAULT_EXPIRES_S, size=len(data))
    # When a browser PUTs the bytes with the headers it was given, and no key
    sent = requests.put(link["url"], data=data, headers=link["headers"], timeout=TIMEOUT)
    # Then they are the file now, through the API and in the listing
    assert sent.status_code == 200, sent.text[:300]
    read = ws.get("data/upload.bin")
    assert read.status_code == 200 and read.content == data
    assert read.headers["Content-Type"] == "application/octet-stream"
    assert [(i["path"], i["size_bytes"]) for i in ws.listing()] == [("data/upload.bin", len(data))]


def test_an_upload_link_lasts_up_to_a_day_and_uploads_a_new_file(ws: Workspace) -> None:
    # Given an upload link of a day for a file that is not there yet
    link = ws.link(path="inbox/new.csv", method="PUT", size_bytes=12, expires_in_s=MAX_EXPIRES_S)
    assert_link_terms(ws.server, link["url"], method="PUT", expires_in_s=MAX_EXPIRES_S, size=12)
    # When it is used
    sent = requests.put(link["url"], data=b"a,b\n1,2\n3,4\n", headers=link["headers"], timeout=TIMEOUT)
    # Then the file is there
    assert sent.status_code == 200, sent.text[:300]
    read = ws.get("inbox/new.csv")
    assert read.content == b"a,b\n1,2\n3,4\n"
    assert read.headers["Content-Type"].startswith("text/csv")


# --- round trips through the API --------------------------------------------------------------------

ROUND_TRIPS = {
    "text": ("notes/hello.txt", "hello, wörld\n".encode(), "text/plain"),
    "all-256-byte-values": ("data/bytes.bin", bytes(range(256)), "application/octet-stream"),
    "empty": ("empty.dat", b"", "application/octet-stream"),
    "json": ("out/result.json", b'[{"a": 1}]', "application/json"),
}


@pytest.mark.parametrize("kind", list(ROUND_TRIPS))
def test_a_file_comes_back_as_it_was_written(ws: Workspace, kind: str) -> None:
    # Given a file written through the API
    path, data, content_type = ROUND_TRIPS[kind]
    written = ws.write(path, data)
    assert written["size_bytes"] == len(data)
    assert when(written["modified_at"]) <= time.time() + 60
    # When it is read through the API and through its link
    read = ws.get(path)
    linked = download(written["url"])
    # Then both give the exact bytes, typed by the file's name
    assert read.status_code == 200 and read.content == data
    assert read.headers["Content-Length"] == str(len(data))
    assert read.headers["Content-Type"].startswith(content_type)
    assert linked.status_code == 200 and linked.content == data


ODD_NAMES = ("100%.txt", "a+b c.txt", "q?.txt", "hash#.txt", "semi;colon=&.txt", "emoji😀.png", "%2E%2E",
             "..dots", "trailing.", "x", "x/y", "Ω/≈/ü.txt")


def test_names_that_need_quoting_in_urls_are_files_like_any_other(ws: Workspace) -> None:
    # Given files whose names hold what URLs quote (and a file and a folder of the same name)
    for name in ODD_NAMES:
        # When each is written, read, downloaded, and replaced through an upload link
        written = ws.write(name, name.encode())
        assert written["path"] == name
        assert ws.get(name).content == name.encode(), name
        assert download(written["url"]).content == name.encode(), name
        link = ws.link(path=name, method="PUT", size_bytes=len(name.encode()) + 1)
        sent = requests.put(link["url"], data=name.encode() + b"!", headers=link["headers"], timeout=TIMEOUT)
        assert sent.status_code == 200, f"{name}: {sent.text[:200]}"
        # Then it is the file of that name, and only that one
        assert ws.get(name).content == name.encode() + b"!", name
    listed = {item["path"]: item["size_bytes"] for item in ws.listing()}
    assert listed == {name: len(name.encode()) + 1 for name in ODD_NAMES}
    for name in ODD_NAMES:
        assert ws.delete(name).status_code == 200, name
    assert ws.listing() == []


def test_the_bytes_are_stored_as_sent_whatever_content_type_the_client_names(ws: Workspace) -> None:
    # Given bytes that are not text
    data = bytes(range(256))[::-1]
    for declared in (None, "text/plain", "application/x-www-form-urlencoded", "application/json", "image/png",
                     "multipart/form-data; boundary=x"):
        # When they are written with that Content-Type (or none)
        headers = {"Content-Type": declared} if declared else {}
        written = ws.request("PUT", "/files/data.bin", data=data, headers=headers)
        # Then they are stored as they were sent
        assert written.status_code == 200, f"{declared}: {written.text[:200]}"
        assert ws.get("data.bin").content == data, declared
    # And a HEAD through the API gives the file's headers without its bytes
    head = ws.request("HEAD", "/files/data.bin")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["Content-Length"] == "256"


def test_the_longest_paths_are_files_like_any_other(ws: Workspace) -> None:
    # Given the store as it is
    before = ws.server.snapshot()
    # When files with the longest paths are written
    for path in (PATH_1024, PATH_LONG_NAME):
        written = ws.write(path, path.encode()[:100])
        # Then they are read back through the API and their links
        assert written["path"] == path
        assert ws.get(path).content == path.encode()[:100]
        assert download(written["url"]).content == path.encode()[:100]
        assert download(ws.link(path=path)["url"]).content == path.encode()[:100]
    # And listed under their paths
    assert ws.paths() == {PATH_1024, PATH_LONG_NAME}
    assert ws.paths() == {item["path"] for item in ws.listing(prefix="w" * 200)} | {PATH_1024}
    # And an upload link replaces them like any file
    for path in (PATH_1024, PATH_LONG_NAME):
        link = ws.link(path=path, method="PUT", size_bytes=3)
        assert requests.put(link["url"], data=b"new", headers=link["headers"], timeout=TIMEOUT).status_code == 200
        assert ws.get(path).content == b"new"
    assert {(i["path"], i["size_bytes"]) for i in ws.listing()} == {(PATH_1024, 3), (PATH_LONG_NAME, 3)}
    # And once deleted, nothing of them is left in the store
    for path in (PATH_1024, PATH_LONG_NAME):
        assert ws.delete(path).json() == {"path": path, "deleted": True}
    assert ws.listing() == []
    assert ws.server.snapshot() == before


def test_the_api_takes_a_file_of_exactly_4_mib_and_refuses_one_byte_more(ws: Workspace) -> None:
    # Given a file of exactly the API's limit
    exact = os.urandom(API_FILE_LIMIT)
    # When it is written through the API
    written = ws.write("exact.bin", exact)
    # Then it is taken, and read back through the API (not sent on to a link)
    assert written["size_bytes"] == API_FILE_LIMIT
    read = ws.get("exact.bin", allow_redirects=False)
    assert read.status_code == 200 and read.content == exact
    # When one byte more is written
    refused = ws.put("over.bin", exact + b"x")
    # Then it is refused with 413, pointing at upload links, and no file is made
    error = error_of(refused, 413, "too_large")
    assert error["limit"] == API_FILE_LIMIT
    assert "upload link" in error["message"].lower() and "/workspace/links" in error["message"], error
    error_of(ws.get("over.bin"), 404, "not_found")
    assert ws.paths() == {"exact.bin"}


def test_a_file_over_4_mib_read_through_the_api_is_sent_on_to_its_link(ws: Workspace) -> None:
    # Given a file one byte over what an API answer carries, uploaded through a link
    data = os.urandom(API_FILE_LIMIT + 1)
    link = ws.link(path="video/clip.mp4", method="PUT", size_bytes=len(data))
    assert requests.put(link["url"], data=data, headers=link["headers"], timeout=TIMEOUT).status_code == 200
    # When it is read through the API
    read = ws.get("video/clip.mp4", allow_redirects=False)
    # Then the answer is a 307 to a download link
    assert read.status_code == 307, read.text[:300]
    location = read.headers["Location"]
    assert read.headers["Cache-Control"] == "no-store"
    lifetime = lifetime_s(ws.server, location)
    assert 0 < lifetime <= DEFAULT_EXPIRES_S, location  # a fresh link, short-lived
    assert_link_terms(ws.server, location, method="GET", expires_in_s=lifetime, filename="clip.mp4")
    # And the link gives the bytes to a client that follows it without the key
    followed = download(location)
    assert followed.status_code == 200 and followed.content == data
    assert followed.headers["Content-Type"] == "video/mp4"
    # And a client that follows redirects by itself gets them too
    assert ws.get("video/clip.mp4").content == data
    assert [(i["path"], i["size_bytes"]) for i in ws.listing()] == [("video/clip.mp4", API_FILE_LIMIT + 1)]


class Pattern:
    """``size`` bytes made as they are sent, 1 MiB at a time (each chunk numbered, so a chunk lost, repeated or
    out of place changes the hash), never all in memory. ``requests`` sends it with its length."""

    BLOCK = os.urandom(MIB)

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[bytes]:
        for index, offset in enumerate(range(0, self.size, MIB)):
            yield (index.to_bytes(8, "big") + self.BLOCK[8:])[: min(MIB, self.size - offset)]

    def sha256(self) -> str:
        digest = hashlib.sha256()
        for chunk in self:
            digest.update(chunk)
        return digest.hexdigest()


def test_a_100_mib_file_goes_up_and_down_through_links(ws: Workspace) -> None:
    # Given an upload link for a file of exactly the limit, 100 MiB
    link = ws.link(path="big/archive.tar", method="PUT", size_bytes=FILE_LIMIT)
    assert link["headers"] == {"Content-Length": str(FILE_LIMIT)}
    body = Pattern(FILE_LIMIT)
    try:
        # When the bytes are streamed through it
        sent = requests.put(link["url"], data=body, headers=link["headers"], timeout=BIG_TIMEOUT)
        # Then the file is there, at its full size
        assert sent.status_code == 200, sent.text[:300]
        assert [(i["path"], i["size_bytes"]) for i in ws.listing()] == [("big/archive.tar", FILE_LIMIT)]
        # And reading it through the API sends the reader on to a link that streams every byte back
        read = ws.get("big/archive.tar", allow_redirects=False)
        assert read.status_code == 307, read.text[:300]
        digest, received = hashlib.sha256(), 0
        with requests.get(read.headers["Location"], stream=True, timeout=BIG_TIMEOUT) as got:
            assert got.status_code == 200
            assert got.headers["Content-Length"] == str(FILE_LIMIT)
            for chunk in got.iter_content(MIB):
                digest.update(chunk)
                received += len(chunk)
        assert received == FILE_LIMIT and digest.hexdigest() == body.sha256()
        # And one byte more than the limit gets no upload link, and nothing is stored
        before = ws.server.snapshot()
        over = ws.link_response(path="big/too-big.tar", method="PUT", size_bytes=FILE_LIMIT + 1)
        error = error_of(over, 413, "too_large")
        assert error["limit"] == FILE_LIMIT and error["field"] == "size_bytes"
        assert ws.server.snapshot() == before
        assert ws.paths() == {"big/archive.tar"}
    finally:  # 100 MiB is not left in the session's data dir
        ws.delete("big/archive.tar")


def test_an_upload_of_another_size_than_signed_is_refused_and_stores_nothing(local_ws: Workspace) -> None:
    # Given an upload link for 1,000 bytes, and the store as it is
    link = local_ws.link(path="exact.bin", method="PUT", size_bytes=1000)
    before = local_ws.server.snapshot()
    # When fewer or more bytes are sent through it
    for size in (999, 1001, 0):
        sent = requests.put(link["url"], data=b"z" * size, headers={"Content-Length": str(size)}, timeout=TIMEOUT)
        # Then the upload is refused, and nothing is stored
        error = error_of(sent, 403, "forbidden")
        assert "1,000" in error["message"], error
    assert local_ws.server.snapshot() == before
    error_of(local_ws.get("exact.bin"), 404, "not_found")
    # And the link still takes the right size
    sent = requests.put(link["url"], data=b"z" * 1000, headers=link["headers"], timeout=TIMEOUT)
    assert sent.status_code == 200 and local_ws.get("exact.bin").content == b"z" * 1000


def test_an_upload_cut_short_stores_nothing(local_ws: Workspace) -> None:
    # Given an upload link for 100,000 bytes, and the store as it is
    link = local_ws.link(path="cut.bin", method="PUT", size_bytes=100_000)
    before = local_ws.server.snapshot()
    # When a client declares the size but sends half of it, then stops sending
    url = urlsplit(link["url"])
    with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=TIMEOUT) as sock:
        head = f"PUT {url.path}?{url.query} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Length: 100000\r\n\r\n"
        sock.sendall(head.encode() + b"h" * 50_000)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    # Then the upload is refused as a body cut short, and nothing is stored, not even a temporary file
    head_lines, _, json_body = answer.partition(b"\r\n\r\n")
    assert head_lines.startswith(b"HTTP/1.1 400 "), answer[:300]
    assert b'"field": "body"' in json_body and b"short" in json_body, json_body
    assert local_ws.server.snapshot() == before
    error_of(local_ws.get("cut.bin"), 404, "not_found")
    assert requests.get(local_ws.server.url("/v1/health"), timeout=TIMEOUT).status_code == 200


# --- the embedded server's own rules for links ------------------------------------------------------


def test_a_link_is_refused_for_what_it_was_not_signed_for(local_ws: Workspace) -> None:
    # Given two files in a workspace, a file of the same name in another workspace, and a link that lasts 1 s
    local_ws.write("a.txt", b"file a")
    local_ws.write("b.txt", b"file b")
    elsewhere = local_ws.other(conversation=unique("conv"))
    elsewhere.write("a.txt", b"the other workspace's a")
    short = local_ws.link(path="a.txt", expires_in_s=1)["url"]
    issued = time.monotonic()
    a, b = local_ws.link(path="a.txt")["url"], local_ws.link(path="b.txt")["url"]
    other_a = elsewhere.link(path="a.txt")["url"]
    upload = local_ws.link(path="a.txt", method="PUT", size_bytes=3)["url"]
    signature = terms(a)["signature"]
    assert download(a).content == b"file a" and download(other_a).content == b"the other workspace's a"
    refused = {
        "a tampered signature": download(with_query(a, signature=signature[:-1] + ("0" if signature[-1] != "0"
                                                                                  else "1"))),
        "no signature": download(with_query(a, signature=None)),
        "a signature of other terms": download(with_query(a, signature="0" * 64)),
        "a later expiry": download(with_query(a, expires=str(int(terms(a)["expires"]) + 3600))),
        "another file name": download(with_query(a, filename="b.txt")),
        "another method in the query": download(with_query(a, method="PUT")),
        "another file's signature on this file's path": download(with_path(b, a)),
        "this file's signature on another file's path": download(with_path(a, b)),
        "a link of this workspace moved to another": download(with_path(a, other_a)),
        "a link of another workspace moved here": download(with_path(other_a, a)),
        "a download link used to upload": requests.put(a, data=b"new", headers={"Content-Length": "3"},
                                                       timeout=TIMEOUT),
        "an upload link used to download": download(upload),
        "an upload link moved to another file": requests.put(with_path(upload, b), data=b"new", timeout=TIMEOUT),
    }
    # Then each is refused with 403 in the §10 shape, and no file changed
    for what, response in refused.items():
        assert response.status_code == 403, f"{what}: {response.status_code} {response.text[:200]}"
        error_of(response, 403, "forbidden")
    assert local_ws.get("a.txt").content == b"file a" and local_ws.get("b.txt").content == b"file b"
    assert elsewhere.get("a.txt").content == b"the other workspace's a"
    # When the short link's second has passed
    time.sleep(max(0.0, 2.1 - (time.monotonic() - issued)))
    # Then it is refused as expired, while the others still work
    error = error_of(download(short), 403, "forbidden")
    assert "expired" in error["message"], error
    assert download(a).content == b"file a"


def test_a_download_link_serves_ranges_and_head(local_ws: Workspace) -> None:
    # Given a file of 10,240 bytes and its link
    data = bytes(range(256)) * 40
    url = local_ws.write("data/range.bin", data)["url"]
    size = len(data)
    # When parts of it are asked for, Then each comes as a 206 with its Content-Range
    for asked, first, last in (("bytes=0-0", 0, 0), ("bytes=10000-", 10000, size - 1), ("bytes=-100", size - 100,
                                                                                         size - 1),
                               ("bytes=100-199", 100, 199), ("bytes=10200-99999", 10200, size - 1),
                               ("bytes=-99999", 0, size - 1)):
        got = requests.get(url, headers={"Range": asked}, timeout=TIMEOUT)
        assert got.status_code == 206, f"{asked}: {got.status_code}"
        assert got.headers["Content-Range"] == f"bytes {first}-{last}/{size}", asked
        assert got.content == data[first:last + 1], asked
        assert got.headers["Content-Length"] == str(last - first + 1), asked
    # And a range outside the file is a 416 naming the file's size
    for asked in (f"bytes={size}-", "bytes=20000-30000", "bytes=5-4", "bytes=-0"):
        got = requests.get(url, headers={"Range": asked}, timeout=TIMEOUT)
        assert got.status_code == 416, f"{asked}: {got.status_code}"
        assert got.headers["Content-Range"] == f"bytes */{size}", asked
        assert set(got.json()) == {"error"}
    # When the link is asked with HEAD
    head = requests.head(url, timeout=TIMEOUT)
    # Then the headers come without the body
    assert head.status_code == 200 and head.content == b""
    assert head.headers["Content-Length"] == str(size)
    assert head.headers["Accept-Ranges"] == "bytes"
    assert head.headers["Content-Disposition"] == "attachment; filename=\"range.bin\"; filename*=UTF-8''range.bin"
    # And a whole GET names the file too
    got = download(url)
    assert got.status_code == 200 and got.content == data
    assert got.headers["Content-Disposition"] == head.headers["Content-Disposition"]
    # And after HEAD and GET the connection is still usable (a kept-alive session asks twice)
    with requests.Session() as browser:
        assert browser.head(url, timeout=TIMEOUT).status_code == 200
        assert browser.get(url, headers={"Range": "bytes=0-1"}, timeout=TIMEOUT).content == data[:2]


def test_a_name_that_needs_quoting_is_named_safely(local_ws: Workspace) -> None:
    # Given a file whose name holds a quote, a semicolon and non-ASCII letters
    name = 'say "hi"; ünïcode.txt'
    url = local_ws.write(f"odd/{name}", b"hi")["url"]
    # When its link is followed
    got = download(url)
    # Then the ASCII name has the quote replaced, and the UTF-8 name is the file's own
    disposition = got.headers["Content-Disposition"]
    plain, _, extended = disposition.partition("; filename*=UTF-8''")
    assert plain == 'attachment; filename="say _hi_; _n_code.txt"', disposition
    assert unquote(extended) == name
    assert got.content == b"hi"


def test_a_link_to_a_deleted_file_answers_404(ws: Workspace) -> None:
    # Given a file and its links
    written = ws.write("tmp/scratch.txt", b"scratch")
    link = ws.link(path="tmp/scratch.txt", expires_in_s=MAX_EXPIRES_S)["url"]
    # When the file is deleted
    deleted = ws.delete("tmp/scratch.txt")
    # Then the delete says so, and the links, the API and a second delete answer 404
    assert deleted.status_code == 200 and deleted.json() == {"path": "tmp/scratch.txt", "deleted": True}
    gone(ws.server, written["url"])
    gone(ws.server, link)
    error_of(ws.get("tmp/scratch.txt"), 404, "not_found")
    error_of(ws.delete("tmp/scratch.txt"), 404, "not_found")
    error_of(ws.link_response(path="tmp/scratch.txt"), 404, "not_found")
    assert ws.listing() == []


# --- listing ---------------------------------------------------------------------------------------


def test_the_listing_follows_writes_and_deletes_page_by_page(ws: Workspace) -> None:
    # Given files written, one overwritten and one deleted (one of them with a path too long to store as it is)
    contents = {"a.txt": b"a", "b/c.txt": b"cc", "b/d.txt": b"ddd", "z.bin": b"", "ünï/cödé.txt": b"unicode",
                PATH_LONG_NAME: b"long"}
    for path, data in contents.items():
        ws.write(path, data)
    ws.write("a.txt", b"a, longer now")
    contents["a.txt"] = b"a, longer now"
    assert ws.delete("b/c.txt").status_code == 200
    del contents["b/c.txt"]
    # When the files are listed
    page = ws.files()
    # Then each file is there once, with its size, when it changed, and a link to its bytes
    assert page.status_code == 200 and page.json()["next_cursor"] is None
    items = page.json()["items"]
    assert sorted(i["path"] for i in items) == sorted(contents)
    for item in items:
        assert set(item) == {"path", "size_bytes", "modified_at", "url"}, item
        assert item["size_bytes"] == len(contents[item["path"]])
        assert abs(when(item["modified_at"]) - time.time()) < 300
        assert download(item["url"]).content == contents[item["path"]]
    # When they are listed two at a time
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        answer = ws.files(limit=2, **({"cursor": cursor} if cursor else {})).json()
        pages.append([i["path"] for i in answer["items"]])
        cursor = answer["next_cursor"]
        if cursor is None:
            break
        assert isinstance(cursor, str) and cursor
    # Then the pages hold the same files in the same order, none twice, and the last says there is no more
    assert [len(p) for p in pages] == [2, 2, 1]
    assert [path for p in pages for path in p] == [i["path"] for i in items]
    assert [i["path"] for i in ws.listing(limit=1)] == [i["path"] for i in items]
    assert [i["path"] for i in ws.listing(limit=1000)] == [i["path"] for i in items]
    # And a prefix lists only what starts with it
    assert {i["path"] for i in ws.listing(prefix="b/")} == {"b/d.txt"}
    assert {i["path"] for i in ws.listing(prefix="w" * 255 + "/x")} == {PATH_LONG_NAME}
    assert ws.listing(prefix="nothing/") == []
    # And a cursor is for the listing that gave it: another workspace's listing refuses it
    first = ws.files(limit=1).json()["next_cursor"]
    error_of(ws.other(conversation=unique("conv")).files(cursor=first), 400, "invalid")


def test_an_empty_workspace_lists_nothing(ws: Workspace) -> None:
    # Given a conversation with no files (and no messages)
    # When its files are listed
    page = ws.files()
    # Then the list is empty, with no next page
    assert page.status_code == 200 and page.json() == {"items": [], "next_cursor": None}


# --- isolation: users and accounts ----------------------------------------------------------------


def test_a_user_never_reaches_another_users_workspace(ws: Workspace) -> None:
    # Given alice's file in her conversation `c` with the agent, written with her key, and the account's own file
    # in its conversation of the same key
    alice, bob = unique("alice"), unique("bob")
    alices = ws.other(key=user_key(ws.server, alice))
    bobs = ws.other(key=user_key(ws.server, bob))
    secret = b"alice's private notes"
    alices.write("secret.txt", secret)
    ws.write("account.txt", b"the account's")
    # When bob, with his key, asks for alice's workspace
    as_alice = bobs.other(user=alice)
    journal = requests.get(ws.server.url(f"/v1/agents/{ws.agent}/conversations/{ws.conversation}/messages"),
                           params={"user": alice}, headers=auth(bobs.key), timeout=TIMEOUT)
    answers = [as_alice.get("secret.txt"), as_alice.files(), as_alice.link_response(path="secret.txt"),
               as_alice.put("secret.txt", b"bob was here"), as_alice.delete("secret.txt")]
    # Then he is refused as for the conversation itself, and learns nothing of the file
    assert journal.status_code in (403, 404)
    for answer in answers:
        error_of(answer, journal.status_code, journal.json()["error"]["code"])
        assert b"secret" not in answer.content.replace(b"secret.txt", b"") and b"/v1/links/" not in answer.content
    # When bob asks for his own conversation of the same key
    # Then it is his own, empty workspace: alice's file is not there to read, link, or delete
    assert bobs.listing() == []
    error_of(bobs.get("secret.txt"), 404, "not_found")
    error_of(bobs.link_response(path="secret.txt"), 404, "not_found")
    error_of(bobs.delete("secret.txt"), 404, "not_found")
    # And alice's file is as it was, hers alone; the account sees it only when it asks for alice
    assert alices.get("secret.txt").content == secret
    assert alices.paths() == {"secret.txt"}
    assert ws.other(user=alice).paths() == {"secret.txt"}
    assert ws.paths() == {"account.txt"}
    # And what bob writes in his own workspace stays there
    bobs.write("secret.txt", b"bob's own")
    assert alices.get("secret.txt").content == secret and bobs.get("secret.txt").content == b"bob's own"


def test_another_account_never_reaches_this_accounts_workspaces(ws: Workspace) -> None:
    # Given a file in this account's agent's workspace
    ws.write("plan.txt", b"this account's plan")
    # And another account, with an agent of its own under the same name
    other = create_account(ws.server.data_dir, unique("ws-tenant"), ws.server.aws_env)
    stranger = ws.other(key=other["key"])
    # When the other account asks for this account's agent's workspace before it has an agent of that name
    answers = [stranger.get("plan.txt"), stranger.files(), stranger.link_response(path="plan.txt"),
               stranger.put("plan.txt", b"overwritten?"), stranger.delete("plan.txt")]
    # Then every answer is 404, as if there were nothing
    for answer in answers:
        error_of(answer, 404, "not_found")
        assert b"plan" not in answer.content.replace(b"plan.txt", b"")
    # When it makes an agent of that name and uses the same conversation key
    make_agent(ws.server, other["key"], ws.agent)
    # Then its workspace is its own and empty, and what it writes never shows here
    assert stranger.listing() == []
    error_of(stranger.get("plan.txt"), 404, "not_found")
    stranger.write("plan.txt", b"the other account's plan")
    assert ws.get("plan.txt").content == b"this account's plan"
    assert stranger.get("plan.txt").content == b"the other account's plan"
    assert [i["size_bytes"] for i in ws.listing()] == [len(b"this account's plan")]
    # And links point at each account's own bytes
    assert download(stranger.link(path="plan.txt")["url"]).content == b"the other account's plan"
    assert download(ws.link(path="plan.txt")["url"]).content == b"this account's plan"


def test_a_user_key_uses_its_own_workspace(ws: Workspace) -> None:
    # Given a user key
    user = unique("carol")
    carols = ws.other(key=user_key(ws.server, user))
    # When it writes, links, uploads, lists and deletes in its conversation
    carols.write("mine.txt", b"mine")
    link = carols.link(path="upload.txt", method="PUT", size_bytes=4)
    assert requests.put(link["url"], data=b"four", headers=link["headers"], timeout=TIMEOUT).status_code == 200
    # Then it is the user's conversation, which the account sees with user=
    assert carols.paths() == {"mine.txt", "upload.txt"}
    assert ws.other(user=user).paths() == {"mine.txt", "upload.txt"}
    assert ws.listing() == []
    assert carols.delete("mine.txt").status_code == 200
    assert ws.other(user=user).paths() == {"upload.txt"}


# --- purges over HTTP --------------------------------------------------------------------------------


def fill(workspace: Workspace, count: int) -> list[str]:
    """``count`` files (the first with a path too long to store as it is); their download links."""
    paths = [PATH_LONG_NAME] + [f"f{i}/file-{i}.txt" for i in range(1, count)]
    return [workspace.write(path, path.encode()[:64])["url"] for path in paths[:count]]


def test_purging_a_conversation_removes_its_files(ws: Workspace) -> None:
    # Given a conversation with messages and three files, and one with files but no message yet
    append_message(ws)
    links = fill(ws, 3)
    quiet = ws.other(conversation=unique("conv"))
    quiet_links = fill(quiet, 2)
    base = ws.server.url(f"/v1/agents/{ws.agent}/conversations")
    # When the first is purged
    purged = requests.delete(f"{base}/{ws.conversation}", params={"purge": "true"}, headers=auth(ws.key),
                             timeout=TIMEOUT)
    # Then its receipt counts its three files, which are gone: listing, API, links
    assert purged.status_code == 200, purged.text
    assert purged.json()["purged"] is True
    assert purged.json()["removed"]["workspace_files"] == 3
    assert purged.json()["removed"]["conversations"] == 1
    assert ws.listing() == []
    error_of(ws.get(PATH_LONG_NAME), 404, "not_found")
    for link in links:
        gone(ws.server, link)
    # And the other conversation's files are untouched
    assert len(quiet.listing()) == 2 and download(quiet_links[1]).status_code == 200
    # When the conversation that has files but no messages is purged
    purged = requests.delete(f"{base}/{quiet.conversation}", params={"purge": "true"}, headers=auth(ws.key),
                             timeout=TIMEOUT)
    # Then its files go too
    assert purged.status_code == 200, purged.text
    assert purged.json()["removed"]["workspace_files"] == 2 and purged.json()["removed"]["conversations"] == 0
    assert quiet.listing() == []
    for link in quiet_links:
        gone(ws.server, link)


def test_erasing_a_user_removes_their_files_and_no_one_elses(ws: Workspace) -> None:
    # Given a user's files in two conversations with the agent (one with a message), the account's file in a
    # conversation of the same key, and another user's file
    user, other_user = unique("eve"), unique("frank")
    eves = ws.other(user=user)
    eves_other = eves.other(conversation=unique("conv"))
    append_message(eves)
    links = fill(eves, 2) + fill(eves_other, 2)
    ws.write("account.txt", b"the account's")
    franks = ws.other(user=other_user)
    franks.write("frank.txt", b"frank's")
    # When the user is erased
    erased = requests.delete(ws.server.url(f"/v1/users/{user}"), headers=auth(ws.key), timeout=TIMEOUT)
    # Then the receipt counts the user's four files, which are gone
    assert erased.status_code == 200, erased.text
    receipt = erased.json()
    assert receipt.get("removed", receipt)["workspace_files"] == 4, receipt
    assert eves.listing() == [] and eves_other.listing() == []
    for link in links:
        gone(ws.server, link)
    # And the account's and the other user's files are still there
    assert ws.get("account.txt").content == b"the account's"
    assert franks.get("frank.txt").content == b"frank's"


def test_purging_an_agent_removes_every_workspace_of_it(ws: Workspace) -> None:
    # Given the agent's files in the account's conversation (with a message), in another of its conversations,
    # and in a user's conversation; and another agent's file
    append_message(ws)
    users = ws.other(user=unique("gina"))
    links = fill(ws, 2) + fill(ws.other(conversation=unique("conv")), 1) + fill(users, 2)
    other_agent = ws.other(agent=make_agent(ws.server, ws.key))
    other_agent.write("kept.txt", b"kept")
    # When the agent is purged
    purged = requests.post(ws.server.url(f"/v1/agents/{ws.agent}/purge"), headers=auth(ws.key), timeout=TIMEOUT)
    # Then the receipt counts its five files, which are gone
    assert purged.status_code == 200, purged.text
    assert purged.json()["removed"]["workspace_files"] == 5, purged.json()
    for link in links:
        gone(ws.server, link)
    # And the agent is gone, with its workspaces
    error_of(ws.files(), 404, "not_found")
    # And another agent's workspace is untouched
    assert other_agent.get("kept.txt").content == b"kept"


# --- the link body's own `path` field ----------------------------------------------------------------


def test_a_link_body_without_a_path_names_the_path_field(local_ws: Workspace) -> None:
    # When a link is asked for without a path, or with a path that is not a string
    for body in ({"expires_in_s": 60}, {"path": 5}):
        refused = local_ws.link_response(**body)
        # Then the 400 names `path`
        error = error_of(refused, 400, "invalid")
        assert error["field"] == "path" and "path" in error["message"], error
