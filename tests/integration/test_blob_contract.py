"""What every BlobStore does, on the embedded file store and on S3 (moto's server)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from agentmem.adapters.aws.s3 import S3BlobStore
from agentmem.adapters.embedded.blobs import FileBlobStore
from agentmem.domain.errors import InvalidError
from agentmem.ports.blobs import BlobExistsError, BlobNotFoundError, BlobStore
from moto_server import MotoServer

SEGMENT = "journal/acct_1/support/ana/order-42/00001-00050.jsonl.gz"


def new_s3_store(moto: MotoServer, **options: Any) -> S3BlobStore:
    store = S3BlobStore(f"journal-{uuid.uuid4().hex[:12]}", boto3_client=moto.client("s3"), **options)
    assert store.ensure_bucket() is True
    assert store.ensure_bucket() is False
    return store


@pytest.fixture(params=["file", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "file":
        return FileBlobStore(tmp_path / "journal")
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
