"""The data dir is its owner's alone: ``agentmem serve`` keeps every directory under it 0700 and every file
0600 (the SQLite database with its -wal and -shm, blobs, the link secret, the dev key), whatever the umask it
runs under, and closes a data dir an earlier version left open when it opens it again."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from functional_support import auth, running_server


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """This process's umask (which the server inherits) for the test, then the one it had."""
    before = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(before)


def modes(data_dir: Path) -> dict[str, int]:
    """Every path under the data dir (the dir itself as ".") with its permission bits."""
    found = {".": stat.S_IMODE(data_dir.stat().st_mode)}
    for directory, dirs, files in os.walk(data_dir):
        for name in dirs + files:
            path = Path(directory, name)
            found[str(path.relative_to(data_dir))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def use_everything(base_url: str, key: str) -> None:
    """Saves, a second version, appends, a workspace file written through the API and one through an upload
    link, and a user key: what writes under the data dir."""
    with requests.Session() as s:
        s.headers.update(auth(key))

        def ok(response: requests.Response) -> None:
            assert response.status_code < 300, response.text

        ok(s.put(f"{base_url}/v1/memories/notes"))
        for content in ("first", "second"):
            ok(s.put(f"{base_url}/v1/memories/notes/entries/plan", json={"content": content, "description": "d"}))
        conversation = f"{base_url}/v1/agents/helper/conversations/c1"
        ok(s.put(f"{base_url}/v1/agents/helper"))
        for turn in range(3):
            ok(s.post(f"{conversation}/messages", json={"messages": [{"role": "user", "content": f"turn {turn}"}]}))
        ok(s.put(f"{conversation}/workspace/files/reports/q3.csv", data=b"a,b\n1,2\n"))
        link = s.post(f"{conversation}/workspace/links", json={"path": "inbox/up.bin", "method": "PUT",
                                                                 "size_bytes": 5})
        ok(link)
        ok(requests.put(link.json()["url"], data=b"12345", headers=link.json()["headers"], timeout=10))
        ok(s.post(f"{base_url}/v1/keys", json={"user": "alice"}))


def assert_private(data_dir: Path) -> None:
    found = modes(data_dir)
    loose = {path: oct(mode) for path, mode in found.items()
             if mode != (0o700 if (data_dir / path).is_dir() else 0o600)}
    assert not loose, f"readable or writable by others: {loose}"


@pytest.mark.parametrize(("umask", "workers"), [(0o022, 1), (0o000, 1), (0o000, 2)], indirect=["umask"],
                         ids=["umask-022", "umask-000", "umask-000-two-workers"])
def test_everything_the_server_writes_is_the_owners_alone(tmp_path: Path, umask: int, workers: int) -> None:
    # Given a server started under a umask that leaves new files readable (or writable) by everyone
    data_dir = tmp_path / "data"
    with running_server(data_dir, workers=workers) as (base_url, _proc, _log):
        # When it saves, appends and writes workspace files
        use_everything(base_url, (data_dir / "dev-key").read_text().strip())
        # Then every directory under the data dir is 0700 and every file 0600, while it runs (-wal, -shm), the
        # file its workers share too
        found = modes(data_dir)
        assert {"agentmem.db", "agentmem.db-wal", "agentmem.db-shm", "link-secret", "dev-key"} <= set(found)
        if workers > 1:
            assert {"serve.db", "serve.db-wal", "serve.db-shm"} <= set(found)
        assert sum(1 for path in found if path.startswith("blobs/workspaces/objects/") and path.endswith("~")) == 2
        assert_private(data_dir)
    # And after it stopped
    assert_private(data_dir)


@pytest.mark.parametrize("umask", [0o022], indirect=True, ids=["umask-022"])
def test_a_data_dir_left_open_is_closed_when_opened_again(tmp_path: Path, umask: int) -> None:
    # Given a data dir an earlier version left open: directories 0755, files 0644
    data_dir = tmp_path / "data"
    with running_server(data_dir) as (base_url, _proc, _log):
        use_everything(base_url, (data_dir / "dev-key").read_text().strip())
    for path in [data_dir, *data_dir.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    # When the server opens it again
    with running_server(data_dir) as (base_url, _proc, _log):
        # Then the data dir and what every request opens are closed to others again: nothing below the data
        # dir can be reached by another user, whatever its own mode
        found = modes(data_dir)
        opened = [".", "agentmem.db", "agentmem.db-wal", "agentmem.db-shm", "link-secret", "blobs/workspaces",
                  "blobs/workspaces/objects", "blobs/workspaces/tmp", "blobs/journal"]
        assert {path: oct(found[path]) for path in opened} == {
            path: oct(0o700 if (data_dir / path).is_dir() else 0o600) for path in opened
        }
        # And what it writes now is private
        with requests.Session() as s:
            s.headers.update(auth((data_dir / "dev-key").read_text().strip()))
            put = s.put(f"{base_url}/v1/agents/helper/conversations/c2/workspace/files/new/file.txt", data=b"x")
            assert put.status_code == 200, put.text
        new = data_dir / "blobs" / "workspaces" / "objects"
        written = [p for p in new.rglob("file.txt~")]
        assert len(written) == 1
        assert [oct(stat.S_IMODE(p.stat().st_mode)) for p in (written[0], written[0].parent)] == ["0o600", "0o700"]
