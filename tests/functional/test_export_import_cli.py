"""``agentmem export`` / ``agentmem import`` against ``agentmem serve`` (SPEC §6.3): a re-import changes nothing, a
changed entry is saved as its next version, a dry run writes nothing, a file that is not an export is refused with
its line and nothing written, a user's export holds that user's data only, expiry is carried and an expired entry
is not brought back, and an entry the service refuses is reported while the rest is imported."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from functional_support import AGENTMEM, Server, auth, clean_env, running_server


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A second embedded server, the one exports are imported into."""
    data_dir = tmp_path_factory.mktemp("export-target") / "data"
    with running_server(data_dir) as (base_url, _proc, log):
        yield Server(base_url=base_url, key=(data_dir / "dev-key").read_text().strip(), data_dir=data_dir, log=log)


def cli(server: Server, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AGENTMEM), *args], capture_output=True, text=True, input=stdin, timeout=120,
                          env=clean_env(AGENTMEM_URL=server.base_url, AGENTMEM_API_KEY=server.key), check=False)


def http(server: Server) -> requests.Session:
    session = requests.Session()
    session.headers.update(auth(server.key))
    return session


def save(server: Server, memory: str, name: str, content: str, user: str | None = None, **fields: Any) -> None:
    answer = http(server).put(server.url(f"/v1/memories/{memory}/entries/{name}"), params={"user": user},
                              json={"content": content, "description": f"about {name}", **fields})
    assert answer.status_code in (200, 201), answer.text


def read(server: Server, memory: str, name: str, user: str | None = None) -> requests.Response:
    return http(server).get(server.url(f"/v1/memories/{memory}/entries/{name}"), params={"user": user})


@pytest.fixture
def company(server: Server) -> str:
    """A new memory on the session's server: two account entries (one read-only, one expiring) and ana's one."""
    name = f"co-{uuid.uuid4().hex[:8]}"
    assert http(server).put(server.url(f"/v1/memories/{name}")).status_code == 201
    in_a_week = (datetime.now(UTC) + timedelta(days=7)).isoformat().replace("+00:00", "Z")
    save(server, name, "tone", "Warm, brief.\n\n- no jargon ✓", visibility="read_only")
    save(server, name, "promo", "Free shipping this week.", expires_at=in_a_week, category="fact", importance=0.9)
    save(server, name, "tea", "Ana takes her tea without sugar.", user="ana", category="user_profile",
         importance=0.8)
    return name


def test_an_export_imported_twice_changes_nothing_the_second_time(
    server: Server, other: Server, company: str, tmp_path: Path
) -> None:
    # Given an export of the memory
    file = tmp_path / "company.jsonl"
    exported = cli(server, "export", "--memory", company, "-o", str(file))
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.strip() == f"exported 3 entries of 1 memory to {file}"
    # When it is imported into another server, then again
    first = cli(other, "import", str(file))
    second = cli(other, "import", str(file))
    # Then the first creates the memory and its entries, the second changes nothing
    assert first.returncode == 0, first.stderr
    assert f"created memory {company}" in first.stdout
    assert "imported: 3 created, 0 updated, 0 unchanged, 0 expired (left out), 0 refused" in first.stdout
    assert second.returncode == 0, second.stderr
    assert "imported: 0 created, 0 updated, 3 unchanged, 0 expired (left out), 0 refused" in second.stdout
    assert read(other, company, "tone").json()["version"] == 1
    # and importing it back where it came from changes nothing there either
    home = cli(server, "import", str(file), "--json")
    assert home.returncode == 0, home.stderr
    assert json.loads(home.stdout)["counts"] == {"created": 0, "updated": 0, "unchanged": 3, "expired": 0,
                                                 "refused": 0}


def test_a_changed_entry_is_saved_as_its_next_version_and_a_dry_run_only_says_so(
    server: Server, other: Server, company: str, tmp_path: Path
) -> None:
    file = tmp_path / "company.jsonl"
    assert cli(server, "export", "--memory", company, "-o", str(file)).returncode == 0
    assert cli(other, "import", str(file)).returncode == 0
    # Given the target's copy of "tone" changed twice since (version 3 there)
    save(other, company, "tone", "Changed there.", visibility="read_only")
    save(other, company, "tone", "Changed there again.", visibility="read_only")
    # When the export is imported in a dry run
    dry = cli(other, "import", "--dry-run", str(file))
    # Then it says what would change and changes nothing
    assert dry.returncode == 0, dry.stderr
    assert f"would update: {company}/tone (account layer)" in dry.stdout
    assert "would import: 0 created, 1 updated, 2 unchanged" in dry.stdout
    assert read(other, company, "tone").json()["content"] == "Changed there again."
    # When it is imported for real, the exported content comes back as version 4: a version is never lowered
    done = cli(other, "import", str(file), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    [updated] = [o for o in report["outcomes"] if o["action"] == "updated"]
    assert (updated["name"], updated["exported_version"], updated["version"]) == ("tone", 1, 4)
    tone = read(other, company, "tone").json()
    assert (tone["content"], tone["version"]) == ("Warm, brief.\n\n- no jargon ✓", 4)


def test_a_dry_run_into_an_empty_server_creates_nothing(server: Server, other: Server, company: str,
                                                        tmp_path: Path) -> None:
    file = tmp_path / "company.jsonl"
    assert cli(server, "export", "--memory", company, "-o", str(file)).returncode == 0
    dry = cli(other, "import", "--dry-run", str(file))
    assert dry.returncode == 0, dry.stderr
    assert f"would create memory {company}" in dry.stdout
    assert "would import: 3 created" in dry.stdout
    assert http(other).get(other.url(f"/v1/memories/{company}")).status_code == 404


@pytest.mark.parametrize(("damage", "says"), [
    (lambda lines: ["garbage\n", *lines[1:]], "line 1: not an agentmem export"),
    (lambda lines: [lines[0].replace('"format_version":1', '"format_version":9'), *lines[1:]],
     "line 1: format version 9: this agentmem reads version 1"),
    (lambda lines: [*lines[:3], '{"type":"entry","memory":\n', *lines[3:]], "line 4: not JSON"),
    (lambda lines: [*lines, '{"type":"entry","memory":"x","name":"n","content":"c","description":"d","version":1}\n'],
     "line 6: an entry of memory 'x' before its memory line"),
])
def test_a_file_that_is_not_an_export_writes_nothing_and_names_the_line(
    server: Server, other: Server, company: str, tmp_path: Path, damage: Any, says: str
) -> None:
    # Given an export whose line is damaged after lines that are fine
    lines = cli(server, "export", "--memory", company).stdout.splitlines(keepends=True)
    file = tmp_path / "bad.jsonl"
    file.write_text("".join(damage(lines)))
    # When it is imported
    done = cli(other, "import", str(file))
    # Then one line names the line at fault, the status is 1, and nothing was written (not even the memory)
    assert done.returncode == 1
    [said] = done.stderr.splitlines()
    assert said.startswith(f"error: {file}: {says}") and said.endswith("(nothing was imported)")
    assert done.stdout == ""
    assert http(other).get(other.url(f"/v1/memories/{company}")).status_code == 404


def test_a_users_export_holds_that_users_data_only(server: Server, other: Server, company: str,
                                                  tmp_path: Path) -> None:
    # Given ana's own memory, ana's conversation with an agent, and bo's data beside ana's
    own = f"ana-notes-{uuid.uuid4().hex[:6]}"
    agent = f"desk-{uuid.uuid4().hex[:6]}"
    assert http(server).put(server.url(f"/v1/memories/{own}"), params={"user": "ana"}).status_code == 201
    save(server, own, "city", "Lisbon", user="ana")
    save(server, company, "dog", "Bo has a dog.", user="bo")
    assert http(server).put(server.url(f"/v1/agents/{agent}"), json={}).status_code == 201
    for user, said in (("ana", "Hi, I'm Ana — ✓"), ("bo", "Hi, I'm Bo.")):
        appended = http(server).post(server.url(f"/v1/agents/{agent}/conversations/t-1/messages"),
                                     params={"user": user}, json={"messages": [{"role": "user", "content": said}]})
        assert appended.status_code == 201, appended.text
    # When ana's data is exported (to standard output)
    done = cli(server, "export", "--user", "ana")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    # Then it holds ana's layer of each memory, ana's own memory and ana's conversations, nothing of the account
    # layer or of bo
    assert records[0]["scope"] == {"user": "ana"}
    entries = [(r["memory"], r["layer"], r["name"]) for r in records if r.get("type") == "entry"]
    assert (company, "ana", "tea") in entries and (own, "ana", "city") in entries
    assert {layer for _, layer, _ in entries} == {"ana"}
    assert {"memory": own, "owner": "ana", "type": "memory"} in records
    assert {"type": "conversation", "agent": agent, "user": "ana", "key": "t-1"} in records
    said = [(r["conversation"], r["seq"], r["role"], r["content"]) for r in records
            if r.get("type") == "message" and r["agent"] == agent]
    assert said == [("t-1", 1, "user", "Hi, I'm Ana — ✓")]
    assert "Bo" not in done.stdout
    # and an import brings its memories and says it leaves the conversations out
    file = tmp_path / "ana.jsonl"
    file.write_text(done.stdout)
    imported = cli(other, "import", str(file))
    assert imported.returncode == 0, imported.stderr
    conversations = sum(r.get("type") == "conversation" for r in records)
    messages = sum(r.get("type") == "message" for r in records)
    assert f"left out: {messages} messages of {conversations} conversation(s)" in imported.stdout
    assert read(other, own, "city", user="ana").json()["content"] == "Lisbon"


def test_expiry_is_carried_and_an_expired_entry_is_not_brought_back(
    server: Server, other: Server, company: str, tmp_path: Path
) -> None:
    lines = cli(server, "export", "--memory", company).stdout.splitlines(keepends=True)
    # Given the export, with one entry whose expiry has passed since (edited in the file)
    past = json.loads(lines[2]) if json.loads(lines[2])["name"] == "tone" else None
    assert past is not None
    past = {**past, "name": "gone", "expires_at": "2020-01-01T00:00:00Z"}
    file = tmp_path / "company.jsonl"
    file.write_text("".join([*lines, json.dumps(past) + "\n"]))
    # When it is imported
    done = cli(other, "import", str(file))
    # Then the expired entry is left out (and said so), and the live one keeps its expiry
    assert done.returncode == 0, done.stderr
    assert "3 created, 0 updated, 0 unchanged, 1 expired (left out)" in done.stdout
    assert read(other, company, "gone").status_code == 404
    exported_promo = next(json.loads(line) for line in lines if '"name":"promo"' in line)
    assert read(other, company, "promo").json()["expires_at"] == exported_promo["expires_at"]


def test_an_entry_the_service_refuses_is_reported_and_the_rest_is_imported(
    server: Server, other: Server, company: str, tmp_path: Path
) -> None:
    lines = cli(server, "export", "--memory", company).stdout.splitlines(keepends=True)
    # Given an export with an account-layer entry holding an email address (sensitive: a user layer only)
    leaked = {"type": "entry", "memory": company, "layer": None, "name": "contact", "version": 1,
              "description": "Who to write to", "content": "Write to ana.lima@example.com for refunds."}
    file = tmp_path / "company.jsonl"
    file.write_text("".join([*lines, json.dumps(leaked) + "\n"]))
    # When it is imported
    done = cli(other, "import", str(file))
    # Then that entry is refused with its name and reason, the others are imported, and the status says so
    assert done.returncode == 1
    assert f"refused: {company}/contact (account layer): sensitive_without_user:" in done.stderr
    assert "imported: 3 created, 0 updated, 0 unchanged, 0 expired (left out), 1 refused" in done.stdout
    assert read(other, company, "contact").status_code == 404
    assert read(other, company, "tea", user="ana").status_code == 200


def test_with_json_the_output_is_json_alone(server: Server, company: str, tmp_path: Path) -> None:
    file = tmp_path / "company.jsonl"
    done = cli(server, "export", "--memory", company, "-o", str(file), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"file": str(file), "memories": 1, "entries": 3, "user": None}
    assert done.stderr == ""
    imported = cli(server, "--json", "import", str(file))
    assert imported.stderr == ""
    assert json.loads(imported.stdout)["counts"]["unchanged"] == 3
