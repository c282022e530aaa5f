"""A round trip across backends with ``agentmem export`` / ``agentmem import``: memories exported from the embedded
backend, imported into the AWS backend (DynamoDB Local and moto's S3), exported from there, imported into a fresh
embedded service, and exported once more: byte-equal content, the same names, layers, descriptions, categories and
importance (what pins an entry), visibility and expiry, in the same order."""

from __future__ import annotations

import json
import subprocess
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from functional_support import AGENTMEM, Server, auth, clean_env, running_aws_server, running_server

KEPT = ("memory", "layer", "name", "content", "content_hash", "description", "category", "importance", "visibility",
        "expires_at")


def cli(server: Server, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(server.aws_env) if server.aws_env is not None else clean_env()
    env.update(AGENTMEM_URL=server.base_url, AGENTMEM_API_KEY=server.key)
    return subprocess.run([str(AGENTMEM), *args], capture_output=True, text=True, timeout=300, env=env, check=False)


def records(file: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]


def kept(file: Path) -> list[tuple[Any, ...]]:
    """What a round trip must keep of each line: the memory lines whole, each entry's content and metadata."""
    out: list[tuple[Any, ...]] = []
    for record in records(file)[1:]:
        if record["type"] == "memory":
            out.append(("memory", record["memory"], record["owner"]))
        else:
            out.append(tuple(record[key] for key in KEPT))
    return out


def move(source: Server, target: Server, memories: list[str], file: Path) -> None:
    exported = cli(source, "export", *[arg for name in memories for arg in ("--memory", name)], "-o", str(file))
    assert exported.returncode == 0, exported.stderr
    imported = cli(target, "import", str(file))
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert " 0 refused" in imported.stdout


def test_memories_go_to_aws_and_back_unchanged(server: Server, tmp_path_factory: pytest.TempPathFactory) -> None:
    # Given, on the embedded backend, an account memory with its account layer and two users' layers, and a user's
    # own memory: content with Unicode, CRLF, tabs, trailing blanks and Markdown, the longest content there is,
    # a read-only entry, a pinned profile entry and one that expires
    company, notes = f"rt-{uuid.uuid4().hex[:8]}", f"rt-notes-{uuid.uuid4().hex[:6]}"
    http = requests.Session()
    http.headers.update(auth(server.key))
    assert http.put(server.url(f"/v1/memories/{company}")).status_code == 201
    assert http.put(server.url(f"/v1/memories/{notes}"), params={"user": "ana"}).status_code == 201
    expires = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=123456).isoformat()
    entries: list[tuple[str, str, str | None, dict[str, Any]]] = [
        (company, "tone", None, {"content": "Warm, brief.\r\n\r\n- **no** jargon ✓\t \n", "visibility": "read_only"}),
        (company, "policy", None, {"content": "R" * 20_000, "category": "procedure", "importance": 0.25}),
        (company, "promo", None, {"content": "Frete grátis — até domingo 🚚", "expires_at": expires}),
        (company, "profile", "ana", {"content": "Ana Lima, prefers e-mail.", "category": "user_profile",
                                     "importance": 0.8}),
        (company, "dog", "bo", {"content": "Bo's dog is called Rex.\n"}),
        (notes, "city", "ana", {"content": "Lisboa\u00a0(PT)"}),
    ]
    for memory, name, user, fields in entries:
        saved = http.put(server.url(f"/v1/memories/{memory}/entries/{name}"), params={"user": user},
                         json={"description": f"About {name} — ✓", **fields})
        assert saved.status_code == 201, saved.text
    http.put(server.url(f"/v1/memories/{company}/entries/tone"), json={"content": entries[0][3]["content"]})
    work = tmp_path_factory.mktemp("roundtrip")
    # When they go to the AWS backend, and from there to a fresh embedded service
    with running_aws_server(work / "aws") as aws:
        move(server, aws, [company, notes], work / "from-embedded.jsonl")
        with running_server(work / "embedded-again") as (base_url, _proc, log):
            again = Server(base_url=base_url, key=(work / "embedded-again" / "dev-key").read_text().strip(),
                           data_dir=work / "embedded-again", log=log)
            move(aws, again, [company, notes], work / "from-aws.jsonl")
            final = cli(again, "export", "--memory", company, "--memory", notes, "-o", str(work / "final.jsonl"))
            assert final.returncode == 0, final.stderr
            tone = requests.get(again.url(f"/v1/memories/{company}/entries/tone"), headers=auth(again.key),
                                timeout=10).json()
    # Then every export holds the same memories and entries, content byte for byte, in the same order
    first = kept(work / "from-embedded.jsonl")
    assert kept(work / "from-aws.jsonl") == first
    assert kept(work / "final.jsonl") == first
    assert len(first) == 2 + len(entries)
    assert records(work / "from-aws.jsonl")[0]["source"]["backend"] == "aws"
    contents = {(r["memory"], r["layer"], r["name"]): r["content"] for r in records(work / "final.jsonl")[1:]
                if r["type"] == "entry"}
    assert {(m, u, n): f["content"] for m, n, u, f in entries} == contents
    # and the version: 2 where it came from, 1 wherever it was imported (the service numbers its own saves)
    assert [r["version"] for r in records(work / "from-embedded.jsonl") if r.get("name") == "tone"] == [2]
    assert tone["version"] == 1 and tone["visibility"] == "read_only"
