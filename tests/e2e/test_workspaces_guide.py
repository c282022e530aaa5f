"""docs/workspaces.md works as written.

The page's Python blocks run in order in one namespace (the page says to run them in one session) against
`agentmem serve` in a fresh folder, as `make run` starts it, with AGENTMEM_URL and AGENTMEM_API_KEY set and
the SDK's default client pointed at it: its links are real URLs, fetched with `requests` as the page does.
Every `print(...)  # value` (and the comment lines right under a print) must be what the block printed, and
afterwards the test checks what the service kept and removed. The curl and CLI blocks run in bash against
another such server. The limits the page states are the service's constants; the links it shows for AWS (a
CloudFront download link, an S3 upload link) have the shapes the AWS backend signs; AGENTMEM_PUBLIC_URL changes
the links as the page says; the README's example runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import agentmem
import pytest
import requests
from agentmem.client import Workspace
from agentmem.domain import workspaces as limits
from doc_blocks import fenced_blocks, run_block
from doc_blocks import section as doc_section
from serving import AGENTMEM, free_port, served_as_make_run, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "workspaces.md").read_text()
README = (ROOT / "README.md").read_text()


# --- the service -------------------------------------------------------------------------------------


@contextlib.contextmanager
def sdk_pointed_at(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[agentmem.Client]:
    """The reader's shell: AGENTMEM_URL and AGENTMEM_API_KEY set, the default client built from them."""
    monkeypatch.setenv("AGENTMEM_URL", env["AGENTMEM_URL"])
    monkeypatch.setenv("AGENTMEM_API_KEY", env["AGENTMEM_API_KEY"])
    agentmem.set_default_client(None)
    try:
        yield agentmem.default_client()
    finally:
        agentmem.set_default_client(None)


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[agentmem.Client]:
    """A fresh `agentmem serve` for the page's Python session, and the SDK talking to it over HTTP."""
    with served_as_make_run(tmp_path) as env, sdk_pointed_at(env, monkeypatch) as client:
        yield client


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`agentmem serve` as `make run` starts it, in a fresh folder; the environment a reader's shell has."""
    with served_as_make_run(tmp_path_factory.mktemp("workspaces")) as env:
        yield env


def section(title: str) -> str:
    return doc_section(PAGE, title)


# --- the Python blocks ---------------------------------------------------------------------------------


def test_the_page_runs_as_written_and_does_what_it_says(service: agentmem.Client) -> None:
    # Given the page's Python blocks
    blocks = fenced_blocks(PAGE, "python")
    assert len(blocks) >= 10, "the page lost its examples"
    # When each runs in order in one session
    namespace: dict[str, Any] = {"__name__": "workspaces_guide"}
    outputs = [run_block(block, namespace, f"docs/workspaces.md python block {number}")
               for number, block in enumerate(blocks, start=1)]

    # Then the links it printed reach the files without a key, on the server's own address
    printed_link = next(line.strip() for out in outputs for line in out.splitlines() if "/v1/links/" in line)
    assert printed_link.startswith(service.url + "/v1/links/")
    assert {"method", "expires", "filename", "signature"} <= dict(parse_qsl(urlsplit(printed_link).query)).keys()
    # and the large file went through an upload link and came back whole, streamed in more than one piece
    sent: list[int] = namespace["sent"]
    assert len(sent) > 1 and sum(sent) == 12 * 1024 * 1024 > Workspace.direct_write_max
    upload: agentmem.UploadLink = namespace["link"]
    assert upload.method == "PUT" and upload.path == "reports/q3.pdf" and "/v1/links/" in upload.url

    # and afterwards: the purges removed every file, and the agent with them
    with pytest.raises(agentmem.NotFound):
        agentmem.Agent.from_name("support")
    support = agentmem.Agent.from_name("support", create_if_missing=True)
    for key, user in (("ticket-7", "user_42"), ("research", "user_42"), ("standup", None), ("ticket-7", "user_43")):
        assert support.workspace(key, user=user).files() == []


def test_the_page_states_the_service_limits() -> None:
    # Given the page's limits table and the service's constants
    table = section("Limits")
    # Then each number is the one the service enforces
    assert f"{limits.MAX_FILE_BYTES:,} bytes" in table and limits.MAX_FILE_BYTES == 100 * 1024 * 1024
    assert f"{limits.MAX_API_FILE_BYTES:,} bytes" in table
    assert Workspace.direct_write_max == limits.MAX_API_FILE_BYTES == 4 * 1024 * 1024
    assert f"{limits.MAX_LINK_EXPIRES_S:,} seconds" in table
    assert f"{limits.DEFAULT_LINK_EXPIRES_S:,} by default" in table
    assert f"1–{limits.MAX_PATH_BYTES:,} bytes" in table and f"1–{limits.MAX_SEGMENT_BYTES} bytes" in table
    assert f"{limits.LIST_LIMIT_DEFAULT} files a page by default, at most {limits.LIST_LIMIT_MAX:,}" in table
    # and the SDK switches to upload links where the page says
    assert Workspace.direct_write_max == 4 * 1024 * 1024
    assert "up to 4 MiB (`Workspace.direct_write_max`)" in section("Large files: uploads and downloads")


# --- links -----------------------------------------------------------------------------------------------


def _shown_link(marker: str) -> str:
    """The link of the "On AWS" section that holds ``marker``, joined onto one line."""
    [shown] = [b for b in fenced_blocks(section("On AWS"), "text") if marker in b]
    return "".join(line.strip() for line in shown.splitlines())


def _same_shape(page_link: str, signed: str, host: str, file_path: str) -> tuple[dict[str, str], dict[str, str]]:
    """Both links have the host, the kind of key and the query parameters (in order); their queries."""
    ours, theirs = urlsplit(page_link), urlsplit(signed)
    assert ours.netloc == theirs.netloc == host
    assert ours.path.split("/")[1::5] == theirs.path.split("/")[1::5] == ["w", "f"]
    assert ours.path.endswith(f"/f/{file_path}") and theirs.path.endswith(f"/f/{file_path}")
    assert [k for k, _ in parse_qsl(ours.query)] == [k for k, _ in parse_qsl(theirs.query)]
    return dict(parse_qsl(ours.query)), dict(parse_qsl(theirs.query))


def test_the_cloudfront_download_link_shown_is_the_shape_the_aws_backend_signs() -> None:
    # Given the CloudFront download link the page shows
    page_link = _shown_link("Key-Pair-Id=")
    # When the deployed stack's signer signs a download link for the same file (offline: a key made here)
    from agentmem.adapters.aws.cloudfront_links import CloudFrontLinkSigner
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    signer = CloudFrontLinkSigner("d111111abcdef8.cloudfront.net", "K2JCJMDEHXQW5F", lambda: pem)
    ref = limits.WorkspaceRef("acct", "support", "user_42", "ticket-7")
    signed = signer.url(ref.direct_key("reports/invoices.csv"), expires_in_s=600, filename="invoices.csv",
                        content_type=limits.content_type("invoices.csv"))
    # Then both have the same host, the same kind of key and the same query parameters, in the same order
    page_query, signed_query = _same_shape(page_link, signed, "d111111abcdef8.cloudfront.net", "reports/invoices.csv")
    for name in ("response-content-disposition", "response-content-type", "Key-Pair-Id"):
        assert page_query[name] == signed_query[name], name


def test_the_s3_upload_link_shown_is_the_shape_the_aws_backend_signs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the S3 upload link the page shows
    page_link = _shown_link("X-Amz-Signature")
    # When the AWS backend signs an upload link for the same file (offline: presigning sends nothing)
    import boto3
    from agentmem.adapters.aws.s3 import S3BlobStore

    for name, value in {"AWS_ACCESS_KEY_ID": "ASIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret",
                        "AWS_SESSION_TOKEN": "token"}.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    store = S3BlobStore("agentmem-workspace-abc123", boto3_session=boto3.session.Session(region_name="eu-west-1"))
    ref = limits.WorkspaceRef("acct", "support", "user_42", "ticket-7")
    signed = store.signed_url(ref.direct_key("reports/big.bin"), method="PUT", expires_in_s=600, size=52_428_800)
    # Then both have the same host, the same kind of key and the same query parameters, in the same order
    page_query, signed_query = _same_shape(
        page_link, signed, "agentmem-workspace-abc123.s3.eu-west-1.amazonaws.com", "reports/big.bin")
    for name in ("X-Amz-Expires", "X-Amz-SignedHeaders"):
        assert page_query[name] == signed_query[name], name


def test_public_url_sets_where_links_point(tmp_path: Path) -> None:
    # Given `agentmem serve` started with AGENTMEM_PUBLIC_URL, as the page shows
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env["AGENTMEM_PUBLIC_URL"] = "https://agentmem.internal.example.com"
    process = subprocess.Popen([str(AGENTMEM), "serve", "--port", str(port)], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, url, lambda: process.stdout.read() if process.stdout else "")
        key = (tmp_path / ".agentmem" / "dev-key").read_text().strip()
        client = agentmem.Client(url, key)
        agent = agentmem.Agent.from_name("support", create_if_missing=True, client=client)
        # When a file is written and a link asked for
        stored = agent.workspace("ticket-7").write("a.txt", "a")
        link = agent.workspace("ticket-7").url("a.txt")
        # Then the links start with the public address, and the server still serves them by path
        assert stored.url is not None and stored.url.startswith("https://agentmem.internal.example.com/v1/links/")
        assert link.startswith("https://agentmem.internal.example.com/v1/links/")
        local = url + link.removeprefix("https://agentmem.internal.example.com")
        assert requests.get(local, timeout=10).content == b"a"
    finally:
        process.terminate()
        process.wait(timeout=10)


# --- the README --------------------------------------------------------------------------------------


def test_the_readme_workspace_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the README's agent example (which makes `support`) and its workspace example
    [agent_example] = [b for b in fenced_blocks(README, "python") if "Agent.from_name" in b]
    [example] = [b for b in fenced_blocks(README, "python") if ".workspace(" in b]
    assert "docs/workspaces.md" in README
    with served_as_make_run(tmp_path) as env, sdk_pointed_at(env, monkeypatch):
        # When both run
        run_block(agent_example, {"__name__": "readme"}, "README.md agent example")
        namespace: dict[str, Any] = {"__name__": "readme"}
        run_block(example, namespace, "README.md workspace example")
        # Then the link it made downloads the file it wrote, without a key
        assert requests.get(namespace["link"], timeout=10).text == "date,amount\n2026-11-03,120.00\n"


# --- over HTTP and from the command line ----------------------------------------------------------


def _bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120,
                          cwd=env["WORKDIR"])


END = "--end-of-answer--"


def test_the_curl_example_runs(served: dict[str, str]) -> None:
    # Given the page's curl block, each top-level curl marking the end of its answer
    [block] = [b for b in fenced_blocks(section("Over HTTP"), "bash") if "curl" in b]
    marked = "curl -s -w '\\n" + END + "\\n' "
    script = re.sub(r"^curl -s ", lambda _: marked, block, flags=re.M)
    # When bash runs it
    result = _bash("set -euo pipefail\n" + script, served)
    assert result.returncode == 0, result.stderr
    answers = [a.strip("\n") for a in result.stdout.split(f"\n{END}\n")][:-1]
    agent, written, read, listed, link, deleted, refused, uploaded, followed = answers
    # Then each call answered as the page says
    assert json.loads(agent)["name"] == "support"
    written_json = json.loads(written)
    assert (written_json["path"], written_json["size_bytes"]) == ("reports/invoices.csv", 30)
    assert "/v1/links/" in written_json["url"]
    assert read == "date,amount\n2026-11-03,120.00"
    listed_json = json.loads(listed)
    assert [f["path"] for f in listed_json["items"]] == ["reports/invoices.csv"] and listed_json["next_cursor"] is None
    link_json = json.loads(link)
    assert (link_json["method"], link_json["expires_in_s"], link_json["headers"]) == ("GET", 600, {})
    assert json.loads(deleted) == {"path": "reports/invoices.csv", "deleted": True}
    error = json.loads(refused)["error"]
    assert error["code"] == "too_large" and error["limit"] == limits.MAX_API_FILE_BYTES
    assert "upload link" in error["message"]
    assert json.loads(uploaded) == {"size_bytes": 7_000_000}
    assert followed == ""
    # and the file followed through the 307 is the file uploaded through the link
    workdir = Path(served["WORKDIR"])
    assert (workdir / "copy.bin").read_bytes() == (workdir / "export.bin").read_bytes()


def test_the_cli_examples_run(served: dict[str, str]) -> None:
    # Given the page's CLI block, the agent it talks to, and the local files it names
    [block] = [b for b in fenced_blocks(section("From the command line"), "bash") if ".venv/bin/agentmem" in b]
    auth = {"Authorization": f"Bearer {served['AGENTMEM_API_KEY']}"}
    requests.put(f"{served['AGENTMEM_URL']}/v1/agents/support", headers=auth, json={}, timeout=10)
    workdir = Path(served["WORKDIR"])
    (workdir / "invoices.csv").write_text("date,amount\n2026-11-03,120.00\n")
    lines = [line.split("  #")[0].strip().replace(".venv/bin/agentmem", "agentmem") for line in block.splitlines()]
    setup, folder, *commands = filter(None, lines)
    assert setup.startswith("WS=") and folder.startswith("mkdir -p project/src")  # the folder it syncs
    assert _bash(folder, served).returncode == 0
    # When each command runs
    outputs: list[str] = []
    for command in commands:
        result = _bash(f"{setup}\n{command}", served)
        # Then each succeeds
        assert result.returncode == 0, f"{command}: {result.stderr}"
        outputs.append(result.stdout)
    put, listed, got, url, up, down, removed = outputs
    assert put.strip() == "uploaded invoices.csv to reports/invoices.csv (30 bytes)"
    assert "reports/invoices.csv" in listed and "30" in listed
    assert got.strip() == "downloaded reports/invoices.csv to copy.csv (30 bytes)"
    assert (workdir / "copy.csv").read_text() == "date,amount\n2026-11-03,120.00\n"
    assert url.strip().startswith(served["AGENTMEM_URL"] + "/v1/links/") and "expires=" in url
    assert up.startswith("uploaded 2 files, ")
    assert down.startswith("downloaded ")
    assert (workdir / "ticket-9" / "project" / "src" / "main.py").read_text() == "print('hi')\n"
    assert (workdir / "ticket-9" / "reports" / "invoices.csv").exists()
    assert removed.strip() == "deleted reports/invoices.csv"


def test_the_cli_help_names_what_the_page_describes() -> None:
    # Given the page's list of commands and sync's options
    result = subprocess.run([sys.executable, "-m", "agentmem.cli", "workspace", "--help"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    # Then every command the page names exists
    for command in ("ls", "get", "put", "rm", "url", "sync"):
        assert re.search(rf"^\s+{command}\s", result.stdout, flags=re.M), command
    sync = subprocess.run([sys.executable, "-m", "agentmem.cli", "workspace", "sync", "--help"],
                          capture_output=True, text=True, timeout=60)
    for option in ("--up", "--down", "--prefix", "--force", "--dry-run", "--agent", "--conversation", "--user"):
        assert option in sync.stdout and option in section("From the command line"), option
