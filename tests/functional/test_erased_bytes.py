"""What an erasure or a purge removes leaves no copy on disk (SPEC §4.6, docs/security.md).

A real ``agentmem serve`` on a data dir of its own: a user's entries (with an older version in their history),
their conversation's messages, its checkpoint (a summary pass's, then corrected by hand), a workspace file and
what the keyword and semantic indexes hold of them all carry distinctive markers. Every byte of every file under
the data dir (the database, its WAL, the blob files) is scanned for them: before, each marker is found (so the
scan can fail); after ``DELETE /v1/users/{user}`` or a conversation's purge, none is — not in the free pages of
the database, not in its WAL, not in a segment of the full-text index. Another user's markers are still found.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from functional_support import Server, auth, running_server

TIMEOUT = 30
CHECKPOINT_WAIT_S = 30.0


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose data dir holds only what this module writes."""
    data_dir = tmp_path_factory.mktemp("erased-bytes") / "data"
    with running_server(data_dir) as (base_url, _proc, log):
        key = (data_dir / "dev-key").read_text().strip()
        yield Server(base_url=base_url, key=key, data_dir=data_dir, log=log)


def marker(kind: str) -> str:
    """A word no text holds by chance: letters and hex digits ending in a digit (no stemmer shortens it)."""
    return f"zq{kind}{uuid.uuid4().hex}7"


def traces(data_dir: Path, word: str) -> dict[str, int]:
    """Where ``word`` is found in the files under ``data_dir``: file -> hits. The word's last 20 characters are
    looked for, so a full-text index that stores a term after the prefix it shares with the one before it
    still counts."""
    needle = word[-20:].encode()
    found: dict[str, int] = {}
    for path in sorted(data_dir.rglob("*")):
        if not path.is_file():
            continue
        try:
            data = path.read_bytes()
        except FileNotFoundError:  # a temporary file gone while we walked
            continue
        hits = data.count(needle) + str(path).count(needle.decode())  # its bytes, or its name
        if hits:
            found[str(path.relative_to(data_dir))] = hits
    return found


@dataclass
class Api:
    server: Server

    def call(self, method: str, path: str, expect: tuple[int, ...] = (200, 201), *,
             content_type: str = "application/json", **kwargs: object) -> requests.Response:
        headers = {**auth(self.server.key), "Content-Type": content_type}
        answer = requests.request(method, self.server.url(path), headers=headers, timeout=TIMEOUT,
                                  **kwargs)  # type: ignore[arg-type]
        assert answer.status_code in expect, f"{method} {path}: {answer.status_code} {answer.text}"
        return answer

    def agent(self) -> str:
        """An agent whose recent window is one message, so a pass folds (and checkpoints) all but the last."""
        name = f"helper-{uuid.uuid4().hex[:8]}"
        self.call("PUT", f"/v1/agents/{name}", json={"instructions": "Help the user.", "window_messages": 1})
        return name

    def save(self, memory: str, name: str, content: str, user: str) -> None:
        self.call("PUT", f"/v1/memories/{memory}/entries/{name}", params={"user": user},
                  json={"content": content, "description": f"about {name}"})

    def converse(self, agent: str, key: str, user: str, words: str, *, remember: bool = True) -> None:
        """A conversation with ``words`` in its messages, compacted into a checkpoint that holds them, then
        corrected by hand with them again; a workspace file that holds them; both indexes asked for them.
        ``remember``: the user asks for them to be remembered, so the pass also saves them as an entry of the
        user's (durable memory, which a conversation's purge leaves)."""
        base = f"/v1/agents/{agent}/conversations/{key}"
        asked = f"Remember that my code word is {words}." if remember else f"Is parcel {words} at the door?"
        messages = [
            {"role": "user", "content": asked},
            {"role": "assistant", "content": f"Noted: your code word is {words}."},
            {"role": "user", "content": "And my parcel goes to the back door."},
            {"role": "assistant", "content": "Noted too."},
        ]
        for _ in range(3):
            self.call("POST", f"{base}/messages", params={"user": user}, json={"messages": messages})
        self.call("POST", f"{base}/compact", params={"user": user}, expect=(202,))
        deadline = time.monotonic() + CHECKPOINT_WAIT_S
        while True:
            checkpoint = requests.get(self.server.url(f"{base}/checkpoint"), params={"user": user},
                                      headers=auth(self.server.key), timeout=TIMEOUT)
            if checkpoint.status_code == 200:
                break
            assert time.monotonic() < deadline, f"no checkpoint after {CHECKPOINT_WAIT_S} s: {checkpoint.text}"
            time.sleep(0.2)
        assert words in checkpoint.json()["content"]
        self.call("PUT", f"/v1/memories/agent:{agent}/entries/{checkpoint.json()['name']}", params={"user": user},
                  json={"content": checkpoint.json()["content"] + f"\n- by hand: {words} again"})
        self.call("PUT", f"{base}/workspace/files/notes/{words}.txt", params={"user": user},
                  data=f"the file says {words}".encode(), content_type="application/octet-stream")
        found = self.call("GET", f"/v1/agents/{agent}/messages/search", params={"user": user, "q": words}).json()
        assert found["items"], found


def test_erasing_a_user_leaves_none_of_their_bytes_in_the_data_dir(own_server: Server) -> None:
    api = Api(own_server)
    data_dir = own_server.data_dir
    user, other = f"ana-{uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    agent = api.agent()
    api.call("PUT", "/v1/memories/company")
    api.call("PUT", f"/v1/memories/notes-{user}", params={"user": user})
    # Given the user's entries in the agent's memory, an account memory and their own memory, each saved twice
    # (the first version stays in the history), with markers in their names and texts
    entry, old, own, talk = marker("entry"), marker("old"), marker("own"), marker("talk")
    for memory in (f"agent:{agent}", "company"):
        api.save(memory, f"note-{entry}", f"the first text: {old}", user)
        api.save(memory, f"note-{entry}", f"the text now: {entry}", user)
    api.save(f"notes-{user}", "diary", f"my own memory: {own}", user)
    found = api.call("GET", "/v1/memories/company/search", params={"user": user, "q": entry}).json()
    assert found["items"], found  # the keyword and semantic indexes hold the entry
    # and their conversation, its checkpoint and a workspace file, with another marker
    api.converse(agent, "ticket-1", user, talk)
    # and another user's entry and conversation, with markers of their own
    kept_entry, kept_talk = marker("kept"), marker("keptalk")
    api.save("company", "kept-note", f"bob's text: {kept_entry}", other)
    api.converse(agent, "ticket-2", other, kept_talk)
    # (the scan sees every marker before the erasure: it can fail)
    for word in (entry, old, own, talk, kept_entry, kept_talk):
        assert traces(data_dir, word), f"{word} is nowhere before the erasure"

    # When the user is erased
    receipt = api.call("DELETE", f"/v1/users/{user}").json()["removed"]
    assert receipt["entries"] >= 3 and receipt["messages"] == 12 and receipt["workspace_files"] == 1, receipt

    # Then no byte of theirs is left in any file of the data dir: database, WAL, blobs
    left = {word: traces(data_dir, word) for word in (entry, old, own, talk)}
    assert left == {entry: {}, old: {}, own: {}, talk: {}}
    # And the other user's are all still there, and still found
    assert traces(data_dir, kept_entry) and traces(data_dir, kept_talk)
    found = api.call("GET", "/v1/memories/company/search", params={"user": other, "q": kept_entry}).json()
    assert [item["name"] for item in found["items"]] == ["kept-note"]


def test_purging_a_conversation_leaves_none_of_its_bytes_in_the_data_dir(own_server: Server) -> None:
    api = Api(own_server)
    data_dir = own_server.data_dir
    user = f"cleo-{uuid.uuid4().hex[:6]}"
    agent = api.agent()
    # Given two conversations of the user, with markers in their messages, checkpoints and workspace files
    gone, kept = marker("purged"), marker("keptconv")
    api.converse(agent, "ticket-3", user, gone, remember=False)
    api.converse(agent, "ticket-4", user, kept, remember=False)
    assert traces(data_dir, gone) and traces(data_dir, kept)

    # When the first is purged
    receipt = api.call("DELETE", f"/v1/agents/{agent}/conversations/ticket-3",
                       params={"user": user, "purge": "true"}).json()["removed"]
    assert receipt["messages"] == 12 and receipt["checkpoints"] == 1 and receipt["workspace_files"] == 1, receipt

    # Then none of its bytes is left in the data dir (its checkpoint's versions included), and the other's are
    assert traces(data_dir, gone) == {}
    assert traces(data_dir, kept)
