"""The embedded blob store: files under the data dir, atomic writes, create-only writes that race safely.

The behaviour both blob stores share (S3 too) is in tests/integration/test_blob_contract.py.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from agentmem.adapters.embedded.blobs import FileBlobStore
from agentmem.domain.errors import InvalidError
from agentmem.ports.blobs import BlobExistsError, check_key


def test_a_key_and_a_longer_key_under_it_are_both_objects(tmp_path: Path) -> None:
    # Given a store
    store = FileBlobStore(tmp_path)
    # When "a" and "a/b" are both written, as S3 allows
    store.put("a", b"file a")
    store.put("a/b", b"file a/b")
    # Then both read back and both are listed
    assert store.get("a") == b"file a"
    assert store.get("a/b") == b"file a/b"
    assert [info.key for info in store.list()] == ["a", "a/b"]


def test_keys_with_unusual_characters_round_trip(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    keys = ["ws/ana/notes~1.md", "ws/ana/100%.txt", "ws/ana/ünïcødé 文件.txt", "ws/.hidden", "ws/ana/a b+c=d"]
    for number, key in enumerate(keys):
        store.put(key, str(number).encode())
    assert {info.key for info in store.list("ws/")} == set(keys)
    assert [store.get(key) for key in keys] == [str(n).encode() for n in range(len(keys))]


BAD_KEYS = ["", "/abs", "a//b", "a/./b", "../escape", "a/..", "back\\slash", "nul\x00", "x" * 1025]


@pytest.mark.parametrize("key", BAD_KEYS)
def test_keys_that_would_not_work_everywhere_are_refused(tmp_path: Path, key: str) -> None:
    store = FileBlobStore(tmp_path)
    with pytest.raises(InvalidError):
        store.put(key, b"data")
    with pytest.raises(InvalidError):
        check_key(key)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_of_racing_create_only_writes_exactly_one_lands(tmp_path: Path) -> None:
    # Given two stores on one directory (as two processes would have) and 16 writers of one key
    stores = [FileBlobStore(tmp_path), FileBlobStore(tmp_path)]
    start = threading.Barrier(16)
    won: list[int] = []
    lost: list[int] = []

    def write(number: int) -> None:
        start.wait()
        try:
            stores[number % 2].put("journal/c1/00001-00050.jsonl.gz", f"writer {number}".encode(), if_none_match=True)
            won.append(number)
        except BlobExistsError:
            lost.append(number)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then one won, fifteen were told the object exists, and the object is the winner's
    assert len(won) == 1 and len(lost) == 15
    assert stores[0].get("journal/c1/00001-00050.jsonl.gz") == f"writer {won[0]}".encode()


def test_a_reader_never_sees_half_an_overwrite(tmp_path: Path) -> None:
    # Given an object that a writer keeps replacing with one of two large payloads
    store = FileBlobStore(tmp_path)
    payloads = (b"a" * 2_000_000, b"b" * 2_000_000)
    store.put("big", payloads[0])
    stop = threading.Event()

    def writer() -> None:
        number = 0
        while not stop.is_set():
            number += 1
            store.put("big", payloads[number % 2])

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        # When a reader reads it over and over
        seen = {store.get("big") for _ in range(200)}
    finally:
        stop.set()
        thread.join()
    # Then every read is one whole payload
    assert seen <= set(payloads)


def test_writes_leave_no_temporary_files_and_deletes_leave_no_empty_folders(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    store.put("ws/ana/c1/report.md", b"v1")
    store.put("ws/ana/c1/report.md", b"v2")
    with pytest.raises(BlobExistsError):
        store.put("ws/ana/c1/report.md", b"v3", if_none_match=True)
    store.put("ws/bob/c9/keep.md", b"keep")
    assert list((tmp_path / "tmp").iterdir()) == []
    # When the only object under ws/ana is deleted
    store.delete("ws/ana/c1/report.md")
    # Then its folders go with it, and the neighbour stays
    assert not (tmp_path / "objects" / "ws" / "ana").exists()
    assert store.get("ws/bob/c9/keep.md") == b"keep"
    # And a new object under the deleted folders can be written again
    store.put("ws/ana/c1/again.md", b"again", if_none_match=True)
    assert store.get("ws/ana/c1/again.md") == b"again"


def test_listing_a_prefix_that_ends_inside_a_segment(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    for key in ["j/c1/00001-00050", "j/c1/00051-00100", "j/c10/00001-00050", "j/c2/00001-00050"]:
        store.put(key, b"x")
    assert [i.key for i in store.list("j/c1")] == ["j/c1/00001-00050", "j/c1/00051-00100", "j/c10/00001-00050"]
    assert [i.key for i in store.list("j/c1/")] == ["j/c1/00001-00050", "j/c1/00051-00100"]
    assert list(store.list("nothing/here/")) == []
    assert list(store.list("j//")) == []
