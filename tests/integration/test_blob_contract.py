"""What every BlobStore does, on the embedded file store and on S3 (moto's server)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from agentmem.adapters.aws.s3 import S3BlobStore
from agentmem.adapters.embedded.blobs import FileBlobStore
from agentmem.adapters.embedded.links import LINK_ROOT, LinkSigner
from agentmem.domain.errors import InvalidError
from agentmem.ports.blobs import BlobExistsError, BlobNotFoundError, BlobStore
from links import follow_link
from moto_server import MotoServer

SEGMENT = "journal/acct_1/support/ana/order-42/00001-00050.jsonl.gz"


def new_s3_store(moto: MotoServer, **options: Any) -> S3BlobStore:
    # the session too: presigned links are signed with its (moto's dummy) credentials
    store = S3BlobStore(f"journal-{uuid.uuid4().hex[:12]}", boto3_client=moto.client("s3"),
                        boto3_session=moto.session(), **options)
    assert store.ensure_bucket() is True
    assert store.ensure_bucket() is False
    return store


@pytest.fixture(params=["file", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "file":
        return FileBlobStore(tmp_path / "journal", links=LinkSigner(b"s" * 32))
    return new_s3_store(request.getfixturevalue("moto"))


def test_an_object_reads_back_as_written_and_an_overwrite_replaces_it(store: BlobStore) -> None:
    data = bytes(range(256)) * 10
    store.put(SEGMENT, data)
    assert store.get(SEGMENT) == data
    store.put(SEGMENT, b"second")
    assert store.get(SEGMENT) == b"second"


def test_a_create_only_write_refuses_an_existing_object_and_changes_nothing(store: BlobStore) -> None:
    # Given a sealed segment written create-only
    store.put(SEGMENT, b"sealed", if_none_match=True)
    # When the same segment is written create-only again (a retried or concurrent seal)
    with pytest.raises(BlobExistsError) as raised:
        store.put(SEGMENT, b"other", if_none_match=True)
    # Then it is refused with a 409 conflict and the sealed segment is intact
    assert raised.value.status == 409
    assert store.get(SEGMENT) == b"sealed"
    # And once deleted, the key can be created again
    store.delete(SEGMENT)
    store.put(SEGMENT, b"new", if_none_match=True)
    assert store.get(SEGMENT) == b"new"


def test_a_missing_object_is_not_found_and_deleting_it_is_fine(store: BlobStore) -> None:
    with pytest.raises(BlobNotFoundError) as raised:
        store.get("nothing/here")
    assert raised.value.status == 404
    store.delete("nothing/here")


def test_list_gives_the_objects_under_a_prefix_in_key_order(store: BlobStore) -> None:
    keys = ["ws/ana/c1/b.md", "ws/ana/c1/a.md", "ws/ana/c10/z.md", "ws/ana/c1/sub/deep.md", "ws/bob/c1/a.md", "ws/ana"]
    for key in keys:
        store.put(key, key.encode())
    assert [i.key for i in store.list("ws/ana/c1/")] == ["ws/ana/c1/a.md", "ws/ana/c1/b.md", "ws/ana/c1/sub/deep.md"]
    assert [i.key for i in store.list("ws/ana")] == sorted(k for k in keys if k.startswith("ws/ana"))
    everything = list(store.list())
    assert [i.key for i in everything] == sorted(keys)
    assert {i.key: i.size for i in everything} == {k: len(k.encode()) for k in keys}
    assert all(i.last_modified.endswith("Z") for i in everything)
    assert list(store.list("ws/carol/")) == []


@pytest.mark.parametrize("key", ["", "/abs", "a//b", "../up"])
def test_bad_keys_are_refused_before_anything_is_stored(store: BlobStore, key: str) -> None:
    with pytest.raises(InvalidError):
        store.put(key, b"x")
    assert list(store.list()) == []


def test_stat_gives_the_size_and_time_of_one_object(store: BlobStore) -> None:
    before = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=2)
    store.put("ws/a/report.csv", b"x" * 1234)
    store.put("ws/a/empty", b"")
    info = store.stat("ws/a/report.csv")
    assert (info.key, info.size) == ("ws/a/report.csv", 1234)
    modified = datetime.fromisoformat(info.last_modified.replace("Z", "+00:00"))
    assert before <= modified <= datetime.now(UTC) + timedelta(seconds=2)
    assert info.last_modified.endswith("Z")
    assert store.stat("ws/a/empty").size == 0
    # the same as the listing says
    assert {i.key: i for i in store.list("ws/a/")}["ws/a/report.csv"].size == 1234
    # an overwrite changes the size
    store.put("ws/a/report.csv", b"yy")
    assert store.stat("ws/a/report.csv").size == 2


def test_stat_of_a_missing_object_is_not_found(store: BlobStore) -> None:
    store.put("ws/a/b", b"x")
    for key in ("ws/a/c", "ws/a", "ws/a/b/c"):
        with pytest.raises(BlobNotFoundError) as raised:
            store.stat(key)
        assert raised.value.status == 404
    store.delete("ws/a/b")
    with pytest.raises(BlobNotFoundError):
        store.stat("ws/a/b")


def test_list_starts_after_a_key_in_byte_order(store: BlobStore) -> None:
    keys = ["p/a", "p/b", "p/b/c", "p/c", "p/z", "p/é", "p/~", "q/a"]
    for key in keys:
        store.put(key, b"x")
    in_order = sorted((k for k in keys if k.startswith("p/")), key=lambda k: k.encode())
    assert [i.key for i in store.list("p/")] == in_order
    # after a key that is there: the ones after it
    assert [i.key for i in store.list("p/", start_after="p/b")] == ["p/b/c", "p/c", "p/z", "p/~", "p/é"]
    # after one that is not: where it would sort
    assert [i.key for i in store.list("p/", start_after="p/bb")] == ["p/c", "p/z", "p/~", "p/é"]
    # before the prefix: all of it; after the last or beyond the prefix: nothing
    assert [i.key for i in store.list("p/", start_after="a")] == in_order
    assert [i.key for i in store.list("p/", start_after="p/é")] == []
    assert [i.key for i in store.list("p/", start_after="q")] == []
    # paging by hand visits each once
    seen: list[str] = []
    after = ""
    while True:
        page = [i.key for i in store.list("p/", start_after=after)][:2]
        if not page:
            break
        seen += page
        after = page[-1]
    assert seen == in_order


def test_fits_tells_which_keys_can_be_stored(store: BlobStore) -> None:
    long_ok = "/".join(["k" * 200] * 6)[:1024]  # 1,024 bytes, segments of at most 200
    assert len(long_ok.encode()) == 1024
    for key in ("a", "ws/a/b.txt", "résumé/日本.txt", long_ok):
        assert store.fits(key), key
        store.put(key, b"x")
        assert store.get(key) == b"x"
    for key in ("", long_ok + "k", "/a", "a//b", "a/../b", "a/./b", "a\\b", "a\x00b", "a/\n"):
        assert not store.fits(key), key
        with pytest.raises(InvalidError):
            store.put(key, b"x")


def test_a_key_segment_too_long_for_a_file_name_fits_s3_but_not_a_directory(store: BlobStore) -> None:
    # 255 bytes: S3 takes it; the file store's name gets a mark, and a name is at most 255 bytes
    key = "ws/" + "s" * 255
    if isinstance(store, FileBlobStore):
        assert not store.fits(key)
        assert not store.fits("ws/" + "é" * 90)  # 180 bytes, 540 percent-encoded
        assert store.fits("ws/" + "s" * 254)
    else:
        assert store.fits(key)
        store.put(key, b"x")
        assert store.get(key) == b"x"


def test_delete_prefix_removes_exactly_what_is_under_it(store: BlobStore) -> None:
    keep = ["w/a", "w/ab/x", "w/b/x", "v/a/x"]
    gone = ["w/a/x", "w/a/y/z", "w/a/" + "deep/" * 10 + "leaf"]
    for key in keep + gone:
        store.put(key, key.encode())
    assert sorted(store.delete_prefix("w/a/")) == sorted(gone)
    assert sorted(i.key for i in store.list()) == sorted(keep)
    assert store.delete_prefix("w/a/") == []
    assert store.delete_prefix("nothing/") == []
    for key in keep:
        assert store.get(key) == key.encode()


def test_delete_prefix_of_many_objects(store: BlobStore) -> None:
    for n in range(25):
        store.put(f"many/{n:03d}", b"x")
    store.put("many-not/0", b"x")
    assert len(store.delete_prefix("many/")) == 25
    assert [i.key for i in store.list("many")] == ["many-not/0"]


def link_query(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}


def test_signed_url_shape(store: BlobStore) -> None:
    key = "ws/a/q3 résumé.csv"
    store.put(key, b"a,b\n1,2\n")
    download = store.signed_url(key, method="GET", expires_in_s=900, filename="q3 résumé.csv",
                                content_type="text/csv; charset=utf-8")
    upload = store.signed_url("ws/a/new.bin", method="PUT", expires_in_s=60, size=4)
    get_q, put_q = link_query(download), link_query(upload)
    for url in (download, upload):
        assert " " not in url and url.isascii()
    if isinstance(store, FileBlobStore):
        # /v1/links/<key>?method=&expires=&signature= (+ filename for a download, size for an upload)
        for url, path in ((download, key), (upload, "ws/a/new.bin")):
            assert urlsplit(url).path == LINK_ROOT + path.replace(" ", "%20").replace("é", "%C3%A9")
            assert unquote(urlsplit(url).path[len(LINK_ROOT):]) == path
        assert (get_q["method"], get_q["filename"]) == ("GET", "q3 résumé.csv")
        assert (put_q["method"], put_q["size"]) == ("PUT", "4")
        assert "size" not in get_q and "filename" not in put_q
        assert abs(int(get_q["expires"]) - (time.time() + 900)) <= 5
        assert abs(int(put_q["expires"]) - (time.time() + 60)) <= 5
        assert all(len(q["signature"]) == 64 for q in (get_q, put_q))
    else:
        assert isinstance(store, S3BlobStore)
        for url, path in ((download, key), (upload, "ws/a/new.bin")):
            assert unquote(urlsplit(url).path) == f"/{store.bucket}/{path}"  # path-style against moto
        for query, seconds in ((get_q, "900"), (put_q, "60")):
            assert query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
            assert query["X-Amz-Expires"] == seconds
            assert query["X-Amz-Credential"].startswith("testing/")
            assert query["X-Amz-Signature"]
        assert "content-length" in put_q["X-Amz-SignedHeaders"].split(";")
        assert "content-length" not in get_q["X-Amz-SignedHeaders"].split(";")
        assert get_q["response-content-disposition"] == (
            "attachment; filename=\"q3 r_sum_.csv\"; filename*=UTF-8''q3%20r%C3%A9sum%C3%A9.csv")
        assert get_q["response-content-type"] == "text/csv; charset=utf-8"
        assert "response-content-disposition" not in put_q


def fetch(store: BlobStore, url: str, method: str = "GET", body: bytes | None = None) -> tuple[int, bytes]:
    return follow_link(store, url, method, body, timeout=10)


def test_a_signed_url_downloads_and_uploads_with_no_key(store: BlobStore) -> None:
    store.put("ws/a/hello.txt", b"hello")
    assert fetch(store, store.signed_url("ws/a/hello.txt", method="GET", expires_in_s=60)) == (200, b"hello")
    status, _ = fetch(store, store.signed_url("ws/a/up.bin", method="PUT", expires_in_s=60, size=4), "PUT",
                      b"\x00\x01\x02\x03")
    assert status == 200
    assert store.get("ws/a/up.bin") == b"\x00\x01\x02\x03"
    # a link to an object that is gone: 404
    store.delete("ws/a/hello.txt")
    assert fetch(store, store.signed_url("ws/a/hello.txt", method="GET", expires_in_s=60))[0] == 404


def test_signed_url_refuses_a_bad_key(store: BlobStore) -> None:
    for key in ("", "/a", "a//b"):
        with pytest.raises(InvalidError):
            store.signed_url(key, method="GET", expires_in_s=60)


def test_a_file_store_without_a_signer_gives_no_links(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "plain")
    store.put("a", b"x")
    with pytest.raises(RuntimeError):
        store.signed_url("a", method="GET", expires_in_s=60)


# -- S3 only -----------------------------------------------------------------------------------------------
def test_s3_create_only_writes_send_if_none_match_star(moto: MotoServer) -> None:
    # Given an S3 store whose requests we watch
    store = new_s3_store(moto)
    sent: list[dict[str, str]] = []

    def watch(request: Any, **_: Any) -> None:
        sent.append({k: v.decode() if isinstance(v, bytes) else v for k, v in request.headers.items()})

    store.client.meta.events.register("before-send.s3.PutObject", watch)
    # When one write is create-only and the other is not
    store.put("a", b"1", if_none_match=True)
    store.put("b", b"2")
    # Then only the create-only one carries the condition S3 (and moto) enforce
    assert sent[0].get("If-None-Match") == "*"
    assert "If-None-Match" not in sent[1]


def test_s3_list_follows_every_page(moto: MotoServer) -> None:
    store = new_s3_store(moto)
    calls: list[str] = []
    store.client.meta.events.register("before-send.s3.ListObjectsV2", lambda request, **_: calls.append(request.url))
    for number in range(7):
        store.put(f"j/{number:05d}", b"x")
    store.page_size = 3
    assert [i.key for i in store.list("j/")] == [f"j/{n:05d}" for n in range(7)]
    assert len(calls) == 3
