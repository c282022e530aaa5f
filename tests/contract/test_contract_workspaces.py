"""Workspaces through the service (SPEC §8), on every backend: a conversation's files, written and read,
listed and paged, reached by links that need no key, kept apart per account, agent, user and conversation,
and gone with the conversation, the agent or the user.

Links are followed as a browser would: S3's presigned URLs over HTTP (moto's server), the embedded
store's signed links as ``agentmem serve`` answers them (``serve_link_bytes``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from agentmem.adapters.embedded.links import LINK_ROOT
from agentmem.domain.clock import parse_iso
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.errors import AgentmemError, ForbiddenError, InvalidError, NotFoundError, TooLargeError
from agentmem.domain.models import Principal
from agentmem.domain.workspaces import MAX_API_FILE_BYTES, MAX_FILE_BYTES, WorkspaceRef, agent_prefix, user_prefix
from agentmem.ports.blobs import BlobStore
from agentmem.services.agents import AgentSettings
from agentmem.services.workspaces import WorkspaceFile, WorkspaceService
from contract_world import World
from links import follow_link

AGENT = "support"
KEY = "c1"
# a path too long to be a key as it is (S3 keys are at most 1,024 bytes, the workspace's prefix takes 72):
# 1,004 bytes in five segments
LONG = "/".join([f"level-{n}-" + "x" * 192 for n in range(5)])


@pytest.fixture(autouse=True)
def _agent(world: World) -> None:
    world.container.agents.put(world.account, AGENT, AgentSettings())


# -- short ways to do what a caller does ---------------------------------------------------------------------
def files_of(world: World) -> WorkspaceService:
    return world.container.workspaces


def store(world: World) -> BlobStore:
    return world.container.require_adapters().workspaces


def stored_keys(world: World, prefix: str = "") -> list[str]:
    return [info.key for info in store(world).list(prefix)]


def write(world: World, path: str, data: bytes, *, key: str = KEY, user: str | None = "ana",
          principal: Principal | None = None, agent: str = AGENT) -> WorkspaceFile:
    return files_of(world).write(principal or world.account, agent, key, path, data, user=user)


def read(world: World, path: str, *, key: str = KEY, user: str | None = "ana", principal: Principal | None = None,
         agent: str = AGENT) -> bytes:
    found = files_of(world).read(principal or world.account, agent, key, path, user=user)
    assert found.redirect is None
    assert found.data is not None
    return found.data


def listing(world: World, *, key: str = KEY, user: str | None = "ana", principal: Principal | None = None,
            agent: str = AGENT, prefix: str | None = None, page: int = 100) -> list[WorkspaceFile]:
    """The whole workspace, page by page."""
    found: list[WorkspaceFile] = []
    cursor: str | None = None
    while True:
        items, cursor = files_of(world).files(principal or world.account, agent, key, user=user, prefix=prefix,
                                              limit=page, cursor=cursor)
        found += items
        if cursor is None:
            return found
        assert len(items) == page


def paths(world: World, **kwargs: Any) -> list[str]:
    return [f.path for f in listing(world, **kwargs)]


def ref(world: World, *, key: str = KEY, user: str | None = "ana", agent: str = AGENT) -> WorkspaceRef:
    return WorkspaceRef(world.account.account_id, agent, user, key)


def status(call: Callable[[], Any]) -> int:
    try:
        call()
    except AgentmemError as error:
        return error.status
    return 200


def fetch(world: World, url: str, method: str = "GET", body: bytes | None = None) -> tuple[int, bytes]:
    """Follow a link with no key."""
    return follow_link(store(world), url, method, body)


def query_of(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}


def is_aws(world: World) -> bool:
    return world.container.settings.backend == "aws"


def say(world: World, key: str = KEY, *, user: str | None = "ana", agent: str = AGENT, text: str = "Hello") -> None:
    world.container.conversations.append(world.account, agent, key, [MessageDraft("user", text)], user=user)


# == writing and reading =====================================================================================
@pytest.mark.parametrize(("path", "data"), [
    ("notes.txt", "Grüße aus Köln — 日本語 ✓\n".encode()),
    ("bin/all-bytes.bin", bytes(range(256)) * 17),
    ("empty", b""),
    ("deep/er/still/deeper/file.json", b'{"a": [1, 2, 3]}'),
    ("odd name (1) & 100% ?#=.txt", b"odd"),
])
def test_a_file_reads_back_as_written(world: World, path: str, data: bytes) -> None:
    # When a file is written
    written = write(world, path, data)
    # Then the answer describes it
    assert (written.path, written.size_bytes) == (path, len(data))
    assert written.modified_at.endswith("Z")
    parse_iso(written.modified_at)
    assert written.url
    # and it reads back byte for byte, through the service and through its link
    assert read(world, path) == data
    assert fetch(world, written.url) == (200, data)
    assert [(f.path, f.size_bytes) for f in listing(world)] == [(path, len(data))]


def test_a_read_carries_the_type_the_name_says(world: World) -> None:
    write(world, "report.csv", b"a,b\n")
    write(world, "photo.png", b"\x89PNG")
    write(world, "Makefile", b"all:")
    service = files_of(world)
    assert service.read(world.account, AGENT, KEY, "report.csv", user="ana").content_type == "text/csv; charset=utf-8"
    assert service.read(world.account, AGENT, KEY, "photo.png", user="ana").content_type == "image/png"
    assert service.read(world.account, AGENT, KEY, "Makefile", user="ana").content_type == "application/octet-stream"


def test_a_write_of_exactly_the_api_limit_is_taken(world: World) -> None:
    data = bytes(range(256)) * (MAX_API_FILE_BYTES // 256)
    assert len(data) == MAX_API_FILE_BYTES
    written = write(world, "big.bin", data)
    assert written.size_bytes == MAX_API_FILE_BYTES
    # at the limit a read still answers with the bytes, not a link
    assert read(world, "big.bin") == data


def test_a_write_over_the_api_limit_is_too_large_and_stores_nothing(world: World) -> None:
    with pytest.raises(TooLargeError) as too_large:
        write(world, "big.bin", b"\x00" * (MAX_API_FILE_BYTES + 1))
    assert too_large.value.status == 413
    assert too_large.value.details["limit"] == MAX_API_FILE_BYTES
    assert "upload link" in too_large.value.message
    assert listing(world) == []
    assert stored_keys(world) == []
    assert status(lambda: read(world, "big.bin")) == 404


def test_a_file_over_the_api_limit_goes_in_by_upload_link_and_reads_as_a_link(world: World) -> None:
    # Given a file one byte over what the API takes, uploaded through an upload link
    data = b"0123456789abcdef" * (MAX_API_FILE_BYTES // 16) + b"!"
    link = files_of(world).link(world.account, AGENT, KEY, "large/video.bin", user="ana", method="PUT",
                                size_bytes=len(data))
    assert link["headers"] == {"Content-Length": str(len(data))}
    assert fetch(world, link["url"], "PUT", data)[0] == 200
    # Then it is listed with its size
    assert [(f.path, f.size_bytes) for f in listing(world)] == [("large/video.bin", len(data))]
    # and a read through the service answers with a download link instead of the bytes
    found = files_of(world).read(world.account, AGENT, KEY, "large/video.bin", user="ana")
    assert found.data is None
    assert found.redirect is not None
    assert fetch(world, found.redirect) == (200, data)


@pytest.mark.parametrize("path", ["", "/abs.txt", "../up.txt", "a/../b", "a//b", "dir/", "a\x00b", "a\\b", "a\nb",
                                  "x" * 256, "\ud800"])
def test_a_bad_path_is_refused_everywhere_and_nothing_is_stored(world: World, path: str) -> None:
    service = files_of(world)
    attempts: list[Callable[[], Any]] = [
        lambda: service.write(world.account, AGENT, KEY, path, b"x", user="ana"),
        lambda: service.read(world.account, AGENT, KEY, path, user="ana"),
        lambda: service.delete(world.account, AGENT, KEY, path, user="ana"),
        lambda: service.link(world.account, AGENT, KEY, path, user="ana"),
        lambda: service.link(world.account, AGENT, KEY, path, user="ana", method="PUT", size_bytes=1),
    ]
    for attempt in attempts:
        with pytest.raises(InvalidError) as invalid:
            attempt()
        assert invalid.value.details["field"] == "path"
    assert stored_keys(world) == []


# == listing ==================================================================================================
def test_files_lists_by_path_after_writes_replaces_and_deletes(world: World) -> None:
    contents = {
        "z.bin": b"\x00\x01",
        "a.txt": b"first",
        "reports/q2.csv": b"q2,2\n",
        "reports/q1.csv": b"q1,1\n",
        "reports/sub/notes.md": b"# notes",
        "reports-old.txt": b"old",
    }
    for path, data in contents.items():
        write(world, path, data)
    # Then every file is listed once, by path, with its size and a link to its bytes
    listed = listing(world)
    assert [f.path for f in listed] == ["a.txt", "reports-old.txt", "reports/q1.csv", "reports/q2.csv",
                                        "reports/sub/notes.md", "z.bin"]
    for item in listed:
        assert item.size_bytes == len(contents[item.path])
        assert item.modified_at.endswith("Z")
        assert fetch(world, item.url) == (200, contents[item.path])

    # When a file is replaced
    write(world, "a.txt", b"second and longer")
    listed = listing(world)
    assert [f.path for f in listed].count("a.txt") == 1
    assert {f.path: f.size_bytes for f in listed}["a.txt"] == len(b"second and longer")
    assert read(world, "a.txt") == b"second and longer"

    # When files are deleted
    assert files_of(world).delete(world.account, AGENT, KEY, "reports/q1.csv", user="ana") == {
        "path": "reports/q1.csv", "deleted": True}
    files_of(world).delete(world.account, AGENT, KEY, "z.bin", user="ana")
    assert paths(world) == ["a.txt", "reports-old.txt", "reports/q2.csv", "reports/sub/notes.md"]
    assert status(lambda: read(world, "reports/q1.csv")) == 404

    # A prefix lists what starts with it: a folder, or any start of a path
    assert paths(world, prefix="reports/") == ["reports/q2.csv", "reports/sub/notes.md"]
    assert paths(world, prefix="reports") == ["reports-old.txt", "reports/q2.csv", "reports/sub/notes.md"]
    assert paths(world, prefix="reports/sub/") == ["reports/sub/notes.md"]
    assert paths(world, prefix="a") == ["a.txt"]
    assert paths(world, prefix="nothing/") == []
    assert paths(world, prefix="") == paths(world)
    with pytest.raises(InvalidError) as invalid:
        listing(world, prefix="/reports")
    assert invalid.value.details["field"] == "prefix"


def test_an_empty_workspace_lists_nothing_and_needs_no_conversation(world: World) -> None:
    assert files_of(world).files(world.account, AGENT, "never-talked", user="ana") == ([], None)
    # a workspace needs no conversation record: files may come before the first message
    write(world, "early.txt", b"before any message", key="never-talked")
    assert paths(world, key="never-talked") == ["early.txt"]
    assert world.container.conversations.list_conversations(world.account, AGENT, user="ana") == []


def test_files_pages_with_limit_and_cursor(world: World) -> None:
    names = [f"f{n:02d}.txt" for n in range(7)]
    for name in reversed(names):
        write(world, name, name.encode())
    service = files_of(world)
    # pages of 3: 3, 3, 1, the last without a cursor
    first, cursor = service.files(world.account, AGENT, KEY, user="ana", limit=3)
    assert [f.path for f in first] == names[:3] and cursor is not None
    second, cursor = service.files(world.account, AGENT, KEY, user="ana", limit=3, cursor=cursor)
    assert [f.path for f in second] == names[3:6] and cursor is not None
    third, cursor = service.files(world.account, AGENT, KEY, user="ana", limit=3, cursor=cursor)
    assert [f.path for f in third] == names[6:] and cursor is None
    # a page exactly as long as what is left has no next page
    whole, cursor = service.files(world.account, AGENT, KEY, user="ana", limit=7)
    assert [f.path for f in whole] == names and cursor is None
    assert paths(world, page=1) == names
    # a file written behind the cursor is not seen again, one ahead of it is
    page, cursor = service.files(world.account, AGENT, KEY, user="ana", limit=2)
    write(world, "a-first.txt", b"x")
    write(world, "zz-last.txt", b"x")
    rest, _ = service.files(world.account, AGENT, KEY, user="ana", limit=100, cursor=cursor)
    assert [f.path for f in page + rest] == [*names, "zz-last.txt"]
    # paging with a prefix
    assert paths(world, prefix="f0", page=2) == names


def test_the_listing_limit_is_1_to_1000_and_a_foreign_cursor_is_refused(world: World) -> None:
    write(world, "a.txt", b"a")
    write(world, "b.txt", b"b")
    write(world, "other.txt", b"o", key="c2")
    service = files_of(world)
    for limit in (0, -1, 1001):
        with pytest.raises(InvalidError) as invalid:
            service.files(world.account, AGENT, KEY, user="ana", limit=limit)
        assert invalid.value.details["field"] == "limit"
    assert [f.path for f in service.files(world.account, AGENT, KEY, user="ana", limit=1000)[0]] == ["a.txt", "b.txt"]
    # a cursor from another workspace (another conversation, another user) or made up is refused
    _, theirs = service.files(world.account, AGENT, KEY, user="ana", limit=1)
    assert theirs is not None
    write(world, "x.txt", b"x", user="bob")
    write(world, "y.txt", b"y", user="bob")
    for cursor, key, user in ((theirs, "c2", "ana"), (theirs, KEY, "bob"), (theirs, KEY, None),
                              ("garbage!", KEY, "ana"), ("Zm9v", KEY, "ana"), ("%%%", KEY, "ana"),
                              ("\u00e9t\u00e9", KEY, "ana")):
        with pytest.raises(InvalidError) as invalid:
            service.files(world.account, AGENT, key, user=user, cursor=cursor)
        assert invalid.value.details["field"] == "cursor", (cursor, key, user)


def test_a_listing_link_lasts_as_asked(world: World) -> None:
    write(world, "a.txt", b"a")
    service = files_of(world)
    for bad in (0, 86_401):
        with pytest.raises(InvalidError) as invalid:
            service.files(world.account, AGENT, KEY, user="ana", expires_in_s=bad)
        assert invalid.value.details["field"] == "expires_in_s"
    items, _ = service.files(world.account, AGENT, KEY, user="ana", expires_in_s=120)
    assert_lifetime(items[0].url, 120)
    items, _ = service.files(world.account, AGENT, KEY, user="ana")
    assert_lifetime(items[0].url, 3600)


# == paths too long to be a key as they are ===================================================================
def test_a_path_too_long_for_a_direct_key_is_stored_listed_read_and_deleted(world: World) -> None:
    assert 1000 < len(LONG.encode()) <= 1024
    assert not store(world).fits(ref(world).direct_key(LONG))
    # Given a long path next to short ones
    write(world, "short.txt", b"short")
    written = write(world, LONG, b"long one")
    write(world, "zzz.txt", b"z")
    # Then it is listed with its real path (after the paths stored as they are), once
    assert written.path == LONG
    assert paths(world) == ["short.txt", "zzz.txt", LONG]
    assert paths(world, page=1) == ["short.txt", "zzz.txt", LONG]
    # found by a prefix of its real path, and not by another
    assert paths(world, prefix="level-0-") == [LONG]
    assert paths(world, prefix=LONG[:600]) == [LONG]
    assert paths(world, prefix="level-1-") == []
    # read, by the service and by its links
    assert read(world, LONG) == b"long one"
    assert fetch(world, written.url) == (200, b"long one")
    assert fetch(world, files_of(world).link(world.account, AGENT, KEY, LONG, user="ana")["url"]) == (200, b"long one")
    # a second long path is its own file
    other = LONG[:-1] + "y"
    write(world, other, b"the other")
    assert read(world, LONG) == b"long one" and read(world, other) == b"the other"
    # replaced in place
    write(world, LONG, b"replaced")
    assert read(world, LONG) == b"replaced"
    assert paths(world) == ["short.txt", "zzz.txt", *sorted([LONG, other], key=hashed_order(world))]
    # When deleted
    files_of(world).delete(world.account, AGENT, KEY, LONG, user="ana")
    files_of(world).delete(world.account, AGENT, KEY, other, user="ana")
    # Then it is gone, and nothing of it is left in the store (nor the object naming it)
    assert status(lambda: read(world, LONG)) == 404
    assert status(lambda: files_of(world).delete(world.account, AGENT, KEY, LONG, user="ana")) == 404
    assert paths(world) == ["short.txt", "zzz.txt"]
    assert sorted(stored_keys(world)) == sorted(ref(world).direct_key(p) for p in ("short.txt", "zzz.txt"))


def hashed_order(world: World) -> Callable[[str], str]:
    """Long paths are listed in the order of their keys (hashes of the paths)."""
    return lambda path: ref(world).hashed_key(path)


def test_a_long_path_can_be_uploaded_by_link(world: World) -> None:
    link = files_of(world).link(world.account, AGENT, KEY, LONG, user="ana", method="PUT", size_bytes=5)
    assert fetch(world, link["url"], "PUT", b"12345")[0] == 200
    assert paths(world) == [LONG]
    assert read(world, LONG) == b"12345"


def test_a_file_name_of_255_bytes_works_on_every_store(world: World) -> None:
    # 255 bytes is a valid name; S3 keeps it as it is, a directory (whose names get a mark) hashes it
    name = "n" * 251 + ".txt"
    write(world, f"dir/{name}", b"named")
    assert paths(world) == [f"dir/{name}"]
    assert read(world, f"dir/{name}") == b"named"
    files_of(world).delete(world.account, AGENT, KEY, f"dir/{name}", user="ana")
    assert stored_keys(world) == []


# == deleting, and links ======================================================================================
def test_deleting_a_missing_file_is_not_found(world: World) -> None:
    service = files_of(world)
    with pytest.raises(NotFoundError):
        service.delete(world.account, AGENT, KEY, "nothing.txt", user="ana")
    write(world, "once.txt", b"x")
    service.delete(world.account, AGENT, KEY, "once.txt", user="ana")
    with pytest.raises(NotFoundError):
        service.delete(world.account, AGENT, KEY, "once.txt", user="ana")
    # a folder is not a file
    write(world, "dir/inner.txt", b"x")
    with pytest.raises(NotFoundError):
        service.delete(world.account, AGENT, KEY, "dir", user="ana")
    assert paths(world) == ["dir/inner.txt"]


def assert_lifetime(url: str, seconds: int) -> None:
    """The link was signed for ``seconds``: S3's ``X-Amz-Expires``; the embedded signer's expiry (it keeps real
    time, not the test's clock) less now, within the few seconds a test takes."""
    query = query_of(url)
    if "X-Amz-Expires" in query:
        assert query["X-Amz-Expires"] == str(seconds)
    else:
        left = int(query["expires"]) - time.time()
        assert seconds - 3 < left <= seconds, (left, seconds)


def test_a_download_link_reaches_the_file_and_says_when_it_expires(world: World) -> None:
    write(world, "reports/q3.csv", b"a,b\n1,2\n")
    before = world.clock.now
    link = files_of(world).link(world.account, AGENT, KEY, "reports/q3.csv", user="ana")
    after = world.clock.now
    assert (link["method"], link["path"], link["expires_in_s"], link["headers"]) == ("GET", "reports/q3.csv",
                                                                                    3600, {})
    expires_at = parse_iso(link["expires_at"])
    assert before + timedelta(seconds=3600) <= expires_at <= after + timedelta(seconds=3600)
    assert_lifetime(link["url"], 3600)
    assert fetch(world, link["url"]) == (200, b"a,b\n1,2\n")
    # a download link may also ask for the shortest and the longest lifetime
    for seconds in (1, 86_400):
        link = files_of(world).link(world.account, AGENT, KEY, "reports/q3.csv", user="ana", expires_in_s=seconds)
        assert link["expires_in_s"] == seconds
        assert_lifetime(link["url"], seconds)
    # once the file is deleted, its link finds nothing: 404 from agentmem's link; S3 answers a missing key
    # 403 unless the signer may list the bucket (moto: 404, or 403 with response-* parameters)
    files_of(world).delete(world.account, AGENT, KEY, "reports/q3.csv", user="ana")
    assert fetch(world, link["url"])[0] in ((403, 404) if is_aws(world) else (404,))


def test_link_refusals(world: World) -> None:
    service = files_of(world)
    write(world, "a.txt", b"a")
    # a download link to a file that is not there
    with pytest.raises(NotFoundError):
        service.link(world.account, AGENT, KEY, "missing.txt", user="ana")
    # lifetimes outside 1 s .. 1 day
    for method, size in (("GET", None), ("PUT", 1)):
        for seconds in (0, -5, 86_401):
            with pytest.raises(InvalidError) as invalid:
                service.link(world.account, AGENT, KEY, "a.txt", user="ana", method=method, expires_in_s=seconds,
                             size_bytes=size)
            assert invalid.value.details["field"] == "expires_in_s"
    # an upload link needs its size, within 100 MB; a download link takes none
    with pytest.raises(InvalidError) as invalid:
        service.link(world.account, AGENT, KEY, "new.bin", user="ana", method="PUT")
    assert invalid.value.details["field"] == "size_bytes"
    with pytest.raises(TooLargeError) as too_large:
        service.link(world.account, AGENT, KEY, "new.bin", user="ana", method="PUT", size_bytes=MAX_FILE_BYTES + 1)
    assert too_large.value.status == 413
    with pytest.raises(InvalidError) as invalid:
        service.link(world.account, AGENT, KEY, "a.txt", user="ana", size_bytes=1)
    assert invalid.value.details["field"] == "size_bytes"
    # GET and PUT only
    for method in ("DELETE", "POST", "get", "HEAD"):
        with pytest.raises(InvalidError) as invalid:
            service.link(world.account, AGENT, KEY, "a.txt", user="ana", method=method)
        assert invalid.value.details["field"] == "method"
    # none of it stored anything
    assert paths(world) == ["a.txt"]


def test_an_upload_link_writes_the_file(world: World) -> None:
    service = files_of(world)
    link = service.link(world.account, AGENT, KEY, "up/new.bin", user="ana", method="PUT", size_bytes=4,
                        expires_in_s=600)
    assert (link["method"], link["path"], link["expires_in_s"]) == ("PUT", "up/new.bin", 600)
    assert link["headers"] == {"Content-Length": "4"}
    assert_lifetime(link["url"], 600)
    # nothing is listed until the upload lands
    assert paths(world) == []
    assert fetch(world, link["url"], "PUT", b"\x00\xff\x10\x20")[0] == 200
    assert read(world, "up/new.bin") == b"\x00\xff\x10\x20"
    assert [(f.path, f.size_bytes) for f in listing(world)] == [("up/new.bin", 4)]
    # an upload link to an existing file replaces it; the largest size is allowed
    service.link(world.account, AGENT, KEY, "up/new.bin", user="ana", method="PUT", size_bytes=MAX_FILE_BYTES)
    replace = service.link(world.account, AGENT, KEY, "up/new.bin", user="ana", method="PUT", size_bytes=0)
    assert fetch(world, replace["url"], "PUT", b"")[0] == 200
    assert read(world, "up/new.bin") == b""


def test_links_are_presigned_s3_urls_or_signed_links_to_the_server(world: World) -> None:
    written = write(world, "reports/Q3 résumé.csv", b"x,y\n")
    download = files_of(world).link(world.account, AGENT, KEY, "reports/Q3 résumé.csv", user="ana",
                                    expires_in_s=900)["url"]
    upload = files_of(world).link(world.account, AGENT, KEY, "reports/new.bin", user="ana", method="PUT",
                                  size_bytes=1234, expires_in_s=300)["url"]
    get, put, listed = query_of(download), query_of(upload), query_of(written.url)
    for url in (download, upload, written.url):
        # no link shows who the user is or which conversation
        assert "ana" not in url and f"/{KEY}/" not in url
    if is_aws(world):
        for query, seconds in ((get, "900"), (put, "300"), (listed, "3600")):
            assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
            assert query["X-Amz-Expires"] == seconds
            assert query["X-Amz-Signature"]
            assert query["X-Amz-Credential"]
        # an upload link signs its Content-Length, so S3 takes exactly that many bytes
        assert "content-length" in put["X-Amz-SignedHeaders"].split(";")
        assert "response-content-disposition" not in put
        # a download names the file (ASCII stand-in and the exact UTF-8 name) and says its type
        for query in (get, listed):
            disposition = query["response-content-disposition"]
            assert disposition.startswith('attachment; filename="Q3 r_sum_.csv"; ')
            assert disposition.endswith("filename*=UTF-8''Q3%20r%C3%A9sum%C3%A9.csv")
            assert query["response-content-type"] == "text/csv; charset=utf-8"
    else:
        # /v1/links/<key>?method=&expires=&filename=|size=&signature=, relative without a public URL
        for url in (download, upload, written.url):
            assert url.startswith(LINK_ROOT)
        assert unquote(urlsplit(download).path) == LINK_ROOT + ref(world).direct_key("reports/Q3 résumé.csv")
        assert (get["method"], get["filename"]) == ("GET", "Q3 résumé.csv")
        assert (put["method"], put["size"]) == ("PUT", "1234")
        assert "size" not in get and "filename" not in put
        assert len(get["signature"]) == len(put["signature"]) == 64
        signer = store(world).links  # type: ignore[attr-defined]
        key = unquote(urlsplit(download).path[len(LINK_ROOT):])
        assert signer.verify("GET", key, get).filename == "Q3 résumé.csv"
        assert signer.verify("PUT", ref(world).direct_key("reports/new.bin"), put).size == 1234
        # an upload of another size than signed is refused, and stores nothing
        assert fetch(world, upload, "PUT", b"short")[0] == 403
        assert paths(world) == ["reports/Q3 résumé.csv"]
    assert_lifetime(download, 900)
    assert_lifetime(upload, 300)


# == who sees which workspace =================================================================================
def test_another_users_workspace_is_not_found_with_the_same_conversation_key(world: World) -> None:
    # Given bob's file in his conversation "c1"
    write(world, "secret.txt", b"bob's secret", user="bob")
    bob_keys = stored_keys(world)
    # When ana (her key, or the account acting for her) or the account itself looks in its own "c1"
    callers: list[tuple[Principal, str | None]] = [(world.ana, None), (world.ana, "ana"), (world.account, "ana"),
                                                   (world.account, None)]
    for principal, user in callers:
        service = files_of(world)
        # Then it is an empty workspace of their own: bob's file is not there
        assert service.files(principal, AGENT, KEY, user=user) == ([], None)
        with pytest.raises(NotFoundError):
            service.read(principal, AGENT, KEY, "secret.txt", user=user)
        with pytest.raises(NotFoundError):
            service.delete(principal, AGENT, KEY, "secret.txt", user=user)
        with pytest.raises(NotFoundError):
            service.link(principal, AGENT, KEY, "secret.txt", user=user)
    # and a file ana writes under the same path is hers, beside bob's
    write(world, "secret.txt", b"ana's secret", principal=world.ana, user=None)
    assert read(world, "secret.txt", principal=world.ana, user=None) == b"ana's secret"
    assert read(world, "secret.txt", user="bob") == b"bob's secret"
    assert read(world, "secret.txt", principal=world.bob, user=None) == b"bob's secret"
    assert len(stored_keys(world)) == len(bob_keys) + 1


def test_a_user_key_cannot_act_for_another_user(world: World) -> None:
    write(world, "secret.txt", b"bob's secret", user="bob")
    before = stored_keys(world)
    service = files_of(world)
    attempts: list[Callable[[], Any]] = [
        lambda: service.files(world.ana, AGENT, KEY, user="bob"),
        lambda: service.read(world.ana, AGENT, KEY, "secret.txt", user="bob"),
        lambda: service.write(world.ana, AGENT, KEY, "secret.txt", b"overwritten", user="bob"),
        lambda: service.write(world.ana, AGENT, KEY, "planted.txt", b"x", user="bob"),
        lambda: service.delete(world.ana, AGENT, KEY, "secret.txt", user="bob"),
        lambda: service.link(world.ana, AGENT, KEY, "secret.txt", user="bob"),
        lambda: service.link(world.ana, AGENT, KEY, "secret.txt", user="bob", method="PUT", size_bytes=3),
    ]
    for attempt in attempts:
        with pytest.raises(ForbiddenError):
            attempt()
    # and bob's workspace is as it was
    assert stored_keys(world) == before
    assert read(world, "secret.txt", user="bob") == b"bob's secret"


def test_another_users_agent_is_not_found(world: World) -> None:
    # Given bob's own agent, with a file in his conversation with it
    world.container.agents.put(world.bob, "bob-helper", AgentSettings())
    write(world, "mine.txt", b"bob's", principal=world.bob, user=None, agent="bob-helper")
    service = files_of(world)
    # Then ana cannot reach its workspaces at all
    for attempt in (
        lambda: service.files(world.ana, "bob-helper", KEY),
        lambda: service.read(world.ana, "bob-helper", KEY, "mine.txt"),
        lambda: service.write(world.ana, "bob-helper", KEY, "x.txt", b"x"),
        lambda: service.link(world.ana, "bob-helper", KEY, "mine.txt"),
        lambda: service.files(world.account, "bob-helper", KEY, user="ana"),
    ):
        with pytest.raises(NotFoundError):
            attempt()
    # while the account key reaches bob's conversation with his agent
    assert read(world, "mine.txt", agent="bob-helper", user=None) == b"bob's"


def test_another_account_sees_nothing(world: World) -> None:
    write(world, "secret.txt", b"acme's", user="ana")
    write(world, "shared.txt", b"acme's", user=None)
    before = stored_keys(world)
    service = files_of(world)
    # globex has no agent "support": every call is 404, whoever it names
    for user in ("ana", None):
        for attempt in (
            lambda u=user: service.files(world.other, AGENT, KEY, user=u),
            lambda u=user: service.read(world.other, AGENT, KEY, "secret.txt", user=u),
            lambda u=user: service.write(world.other, AGENT, KEY, "secret.txt", b"x", user=u),
            lambda u=user: service.delete(world.other, AGENT, KEY, "secret.txt", user=u),
            lambda u=user: service.link(world.other, AGENT, KEY, "secret.txt", user=u),
            lambda u=user: service.link(world.other, AGENT, KEY, "s.txt", user=u, method="PUT", size_bytes=1),
        ):
            with pytest.raises(NotFoundError):
                attempt()
    assert stored_keys(world) == before
    # and with an agent of the same name of its own, its workspaces are its own and empty
    world.container.agents.put(world.other, AGENT, AgentSettings())
    for user in ("ana", None):
        assert service.files(world.other, AGENT, KEY, user=user) == ([], None)
        with pytest.raises(NotFoundError):
            service.read(world.other, AGENT, KEY, "secret.txt", user=user)
    service.write(world.other, AGENT, KEY, "secret.txt", b"globex's", user="ana")
    assert service.read(world.other, AGENT, KEY, "secret.txt", user="ana").data == b"globex's"
    assert read(world, "secret.txt") == b"acme's"


def test_the_account_and_a_user_have_separate_workspaces_under_one_key(world: World) -> None:
    write(world, "notes.txt", b"the account's notes", user=None)
    write(world, "notes.txt", b"ana's", user="ana")
    write(world, "only-account.txt", b"x", user=None)
    assert read(world, "notes.txt", user=None) == b"the account's notes"
    assert read(world, "notes.txt", user="ana") == b"ana's"
    assert paths(world, user=None) == ["notes.txt", "only-account.txt"]
    assert paths(world, user="ana") == ["notes.txt"]
    # and other conversations and agents have their own too
    world.container.agents.put(world.account, "sales", AgentSettings())
    assert paths(world, key="c2") == []
    assert paths(world, agent="sales") == []
    files_of(world).delete(world.account, AGENT, KEY, "notes.txt", user=None)
    assert read(world, "notes.txt", user="ana") == b"ana's"


# == going with the conversation, the agent, the user =========================================================
def fill(world: World, key: str, count: int, *, user: str | None = "ana", agent: str = AGENT,
         long: bool = False) -> None:
    """``count`` files in one workspace (the last one under a long path when ``long``)."""
    for n in range(count):
        path = LONG if long and n == count - 1 else f"{key}/file-{n}.txt"
        write(world, path, f"{agent} {user} {key} {n}".encode(), key=key, user=user, agent=agent)


def snapshot(world: World, prefix: str = "") -> dict[str, int]:
    return {info.key: info.size for info in store(world).list(prefix)}


@pytest.mark.parametrize("with_messages", [True, False])
def test_purging_a_conversation_removes_exactly_its_files(world: World, with_messages: bool) -> None:
    # Given ana's conversation c1 with three files (one under a long path), and files elsewhere
    if with_messages:
        say(world)
        say(world, text="and again")
    fill(world, KEY, 3, long=True)
    fill(world, "c2", 2)
    fill(world, KEY, 1, user="bob")
    fill(world, KEY, 1, user=None)
    say(world, "c2")
    others = {k: v for k, v in snapshot(world).items() if not k.startswith(ref(world).prefix)}
    assert len(others) == 4

    # When c1 is purged
    receipt = world.container.conversations.delete(world.account, AGENT, KEY, user="ana", purge=True)

    # Then the receipt counts its files
    assert receipt["purged"] is True
    removed = receipt["removed"]
    assert removed["workspace_files"] == 3
    if with_messages:
        assert (removed["conversations"], removed["messages"]) == (1, 2)
    else:
        # a receipt of the same shape, counting no conversation
        assert removed == {"conversations": 0, "messages": 0, "checkpoints": 0, "index_documents": 0,
                           "workspace_files": 3}
    # and none is left, not even the object naming the long path, while every other file stays
    assert listing(world) == []
    assert stored_keys(world, ref(world).prefix) == []
    assert snapshot(world) == others
    assert paths(world, key="c2") == ["c2/file-0.txt", "c2/file-1.txt"]
    assert read(world, f"{KEY}/file-0.txt", user="bob") == f"{AGENT} bob {KEY} 0".encode()
    assert read(world, f"{KEY}/file-0.txt", user=None) == f"{AGENT} None {KEY} 0".encode()
    # a second purge finds nothing to purge
    with pytest.raises(NotFoundError):
        world.container.conversations.delete(world.account, AGENT, KEY, user="ana", purge=True)


def test_purging_a_conversation_without_files_counts_none(world: World) -> None:
    say(world)
    fill(world, "c2", 1)
    receipt = world.container.conversations.delete(world.account, AGENT, KEY, user="ana", purge=True)
    assert receipt["removed"]["workspace_files"] == 0
    assert receipt["removed"]["messages"] == 1
    assert paths(world, key="c2") == ["c2/file-0.txt"]
    # and a conversation with neither messages nor files is not found
    with pytest.raises(NotFoundError):
        world.container.conversations.delete(world.account, AGENT, "c9", user="ana", purge=True)


def test_deleting_a_conversation_without_purge_keeps_its_files(world: World) -> None:
    say(world)
    fill(world, KEY, 2)
    receipt = world.container.conversations.delete(world.account, AGENT, KEY, user="ana")
    assert receipt["purged"] is False
    assert paths(world) == [f"{KEY}/file-0.txt", f"{KEY}/file-1.txt"]


def test_purging_an_agent_removes_every_workspace_of_it_and_no_other(world: World) -> None:
    # Given "support" with files in conversations with and without messages, for users and the account
    say(world)
    fill(world, KEY, 2, long=True)  # ana, c1, with messages
    fill(world, "c2", 3)  # ana, c2, files only
    fill(world, KEY, 1, user="bob")
    fill(world, "c3", 2, user=None)
    say(world, "c3", user=None)
    # and another agent, "sales", with files under the same keys and users
    world.container.agents.put(world.account, "sales", AgentSettings())
    fill(world, KEY, 2, agent="sales")
    fill(world, KEY, 1, agent="sales", user=None)
    account = world.account.account_id
    sales = snapshot(world, agent_prefix(account, "sales"))
    assert len(sales) == 3

    # When "support" is purged
    receipt = world.container.agents.purge(world.account, AGENT)

    # Then its files are counted once each and gone
    assert receipt["workspace_files"] == 8
    assert stored_keys(world, agent_prefix(account, AGENT)) == []
    # and "sales" keeps every one of its files
    assert snapshot(world) == sales
    assert read(world, f"{KEY}/file-1.txt", agent="sales") == f"sales ana {KEY} 1".encode()
    # and an agent made again under the name starts with empty workspaces
    world.container.agents.put(world.account, AGENT, AgentSettings())
    for key, user in ((KEY, "ana"), ("c2", "ana"), (KEY, "bob"), ("c3", None)):
        assert paths(world, key=key, user=user) == []


def test_purging_a_trashed_agent_removes_its_workspaces(world: World) -> None:
    fill(world, KEY, 2)
    world.container.agents.delete(world.account, AGENT)
    receipt = world.container.agents.purge(world.account, AGENT)
    assert receipt["workspace_files"] == 2
    assert stored_keys(world) == []


def test_an_agent_left_thirty_days_in_the_trash_goes_with_its_workspaces_and_conversations(world: World) -> None:
    # Given "support" with a conversation and files, and "sales" with files, and "support" in the trash
    say(world)
    fill(world, KEY, 2)
    fill(world, "c2", 1, user=None)
    world.container.agents.put(world.account, "sales", AgentSettings())
    fill(world, KEY, 1, agent="sales")
    sales = snapshot(world, agent_prefix(world.account.account_id, "sales"))
    world.container.agents.delete(world.account, AGENT)
    # When the sweep runs after its 30 days
    world.clock.advance(days=31)
    world.container.sweep()
    # Then its files and its conversation are gone, and "sales" keeps its file
    assert snapshot(world) == sales
    world.container.agents.put(world.account, AGENT, AgentSettings())
    assert paths(world, key=KEY) == []
    assert world.container.conversations.list_conversations(world.account, AGENT, user="ana") == []


def test_erasing_a_user_removes_their_workspaces_and_no_one_elses(world: World) -> None:
    account = world.account.account_id
    # Given ana with files in conversations with two account agents (with and without messages) ...
    world.container.agents.put(world.account, "sales", AgentSettings())
    say(world)
    fill(world, KEY, 2, long=True)
    fill(world, "c2", 1)
    fill(world, KEY, 2, agent="sales")
    # ... with an account agent now in the trash (bob has a file there too) ...
    world.container.agents.put(world.account, "retired", AgentSettings())
    fill(world, KEY, 1, agent="retired")
    fill(world, KEY, 1, agent="retired", user="bob")
    world.container.agents.delete(world.account, "retired")
    # ... and with an agent of her own
    world.container.agents.put(world.ana, "ana-helper", AgentSettings())
    write(world, "mine.txt", b"ana's own", principal=world.ana, user=None, agent="ana-helper")
    ana_count = 2 + 1 + 2 + 1 + 1
    # and bob and the account with files under the same agents and keys
    fill(world, KEY, 2, user="bob")
    fill(world, KEY, 1, agent="sales", user="bob")
    fill(world, KEY, 2, user=None)
    say(world, user="bob")
    ana_prefixes = tuple(user_prefix(account, agent, "ana") for agent in (AGENT, "sales", "retired", "ana-helper"))
    kept = {k: v for k, v in snapshot(world).items() if not k.startswith(ana_prefixes)}
    assert len(kept) == 2 + 1 + 1 + 2  # bob: support, sales, retired; the account: support

    # When ana is erased
    receipt = world.container.erasure.erase_user(world.account, "ana")

    # Then the receipt counts her files, each once, and none is left anywhere
    assert receipt["workspace_files"] == ana_count
    for prefix in ana_prefixes:
        assert stored_keys(world, prefix) == []
    assert paths(world, user="ana") == []
    assert paths(world, key="c2", user="ana") == []
    assert paths(world, agent="sales", user="ana") == []
    # while bob's and the account's are untouched
    assert snapshot(world) == kept
    assert paths(world, user="bob") == [f"{KEY}/file-0.txt", f"{KEY}/file-1.txt"]
    assert paths(world, user=None) == [f"{KEY}/file-0.txt", f"{KEY}/file-1.txt"]
    assert read(world, f"{KEY}/file-0.txt", agent="sales", user="bob") == f"sales bob {KEY} 0".encode()


def test_erasing_a_user_with_no_files_counts_none(world: World) -> None:
    fill(world, KEY, 1, user="bob")
    assert world.container.erasure.erase_user(world.account, "ana")["workspace_files"] == 0
    assert paths(world, user="bob") == [f"{KEY}/file-0.txt"]


# == concurrency =============================================================================================
def test_concurrent_writers_never_mix_files_or_lose_one(world: World) -> None:
    # Given 8 writers, each writing 6 rounds of its own file and of one shared file (256 KiB, every byte its own)
    writers, rounds, size = 8, 6, 256 * 1024

    def content(writer: int, round_: int) -> bytes:
        return bytes([writer * rounds + round_]) * size

    def work(writer: int) -> None:
        for round_ in range(rounds):
            write(world, f"own/{writer}.bin", content(writer, round_))
            write(world, "shared.bin", content(writer, round_))

    # When they all run at once
    with ThreadPoolExecutor(max_workers=writers) as pool:
        list(pool.map(work, range(writers)))
    # Then every writer's own file holds its last round, whole
    for writer in range(writers):
        assert read(world, f"own/{writer}.bin") == content(writer, rounds - 1)
    # and the shared file is one writer's write, whole: never a mix of two
    shared = read(world, "shared.bin")
    assert len(shared) == size and len(set(shared)) == 1
    # and the listing holds each file once
    assert paths(world) == sorted([f"own/{w}.bin" for w in range(writers)] + ["shared.bin"])
