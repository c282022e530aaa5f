"""Helpers of the functional tests: run ``agentmem serve`` as a subprocess (on the embedded backend, or on
the AWS backend against DynamoDB Local and moto's S3), make accounts with the operator command, and read
the store (the SQLite file read-only, or a consistent Scan of the table, and the workspace and journal
files: the blob directories, or listings of the buckets) to prove a request changed nothing."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from serving import wait_healthy

AGENTMEM = Path(sys.executable).parent / "agentmem"
if not AGENTMEM.exists():  # not run from the project's virtualenv
    AGENTMEM = Path(shutil.which("agentmem") or AGENTMEM)
START_TIMEOUT_S = 30.0
# The store's tables; `usage` is left out on purpose: every request is counted, refused or not.
# `messages_fts_docsize` is the journal search index's row per message (`messages_fts` is contentless).
STORE_TABLES = ("accounts", "api_keys", "memories", "attachments", "entries", "entry_history", "agents",
                "conversations", "messages", "messages_fts_docsize")
# The AWS backend's single table: usage counters (SK ``U#...``) are left out for the same reason.
USAGE_SK_PREFIX = "U#"
AWS_START_TIMEOUT_S = 60.0
# where the embedded backend keeps workspace files and journal segments, under the data dir
WORKSPACE_BLOBS = Path("blobs") / "workspaces"
JOURNAL_BLOBS = Path("blobs") / "journal"

Snapshot = dict[str, list[Any]]


@dataclass(frozen=True)
class Server:
    base_url: str
    key: str
    data_dir: Path
    log: Path
    backend: str = "embedded"
    # on the AWS backend: the environment the server runs with (table, buckets, emulator endpoints)
    aws_env: Mapping[str, str] | None = field(default=None, compare=False, hash=False, repr=False)

    def url(self, path: str) -> str:
        return self.base_url + path

    def snapshot(self) -> Snapshot:
        """Everything the store holds but the usage counters, read outside the server: the database (the
        SQLite file, or the table: conversations and their journals too) and the workspace files and sealed
        journal segments (the blob directories, or the buckets)."""
        if self.aws_env is None:
            return {**store_snapshot(self.data_dir), "workspace_blobs": blob_snapshot(self.data_dir),
                    "journal_blobs": blob_snapshot(self.data_dir, JOURNAL_BLOBS)}
        return {**table_snapshot(self.aws_env), "workspace_bucket": bucket_snapshot(self.aws_env),
                "journal_bucket": bucket_snapshot(self.aws_env, "AGENTMEM_JOURNAL_BUCKET")}


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def clean_env(**extra: str) -> dict[str, str]:
    """The environment minus any AGENTMEM_* a developer may have set, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(proc: subprocess.Popen[bytes], base_url: str, log: Path, timeout: float = START_TIMEOUT_S) -> None:
    wait_healthy(proc, base_url, log.read_text, timeout)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextmanager
def _serve(args: list[str], env: Mapping[str, str], log: Path,
           timeout: float = START_TIMEOUT_S) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``agentmem serve ARGS --port P`` on a free port; yields (base_url, process). Always stopped. One worker
    process unless ``args`` say how many (the tests that need several say so)."""
    if "--workers" not in args:
        args = [*args, "--workers", "1"]
    for _attempt in range(3):  # a free port can be taken between finding it and binding it
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(AGENTMEM), "serve", *args, "--port", str(port)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=dict(env),
            )
        try:
            _wait_healthy(proc, base_url, log, timeout)
        except RuntimeError:
            _stop(proc)
            if "Address already in use" in log.read_text():
                continue
            raise
        try:
            yield base_url, proc
        finally:
            _stop(proc)
        return
    raise RuntimeError("could not find a free port for agentmem serve")


@contextmanager
def running_server(data_dir: Path, *, workers: int = 1,
                   **env: str) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """``agentmem serve --workers N`` on a free port; yields (base_url, process, log file). Always stopped."""
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir.parent / f"{data_dir.name}-serve-{uuid.uuid4().hex[:6]}.log"
    with _serve(["--data-dir", str(data_dir), "--workers", str(workers)], clean_env(**env), log) as (base_url, proc):
        yield base_url, proc, log


def aws_environment(s3_endpoint: str, data_dir: Path) -> dict[str, str]:
    """The environment of ``agentmem`` on the AWS backend: this process's DynamoDB Local (started on first
    use), moto's S3 at ``s3_endpoint``, and a table and buckets of names of its own."""
    import dynamodb_local  # tests/support, on sys.path through tests/conftest.py

    suffix = uuid.uuid4().hex[:10]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTMEM_", "AWS_"))}
    env.update(dynamodb_local.shared().environment())
    env.update({
        "AWS_ENDPOINT_URL_S3": s3_endpoint, "AWS_DEFAULT_REGION": "us-east-1",
        "AGENTMEM_BACKEND": "aws", "AGENTMEM_TABLE": f"agentmem-{suffix}",
        "AGENTMEM_JOURNAL_BUCKET": f"journal-{suffix}", "AGENTMEM_WORKSPACE_BUCKET": f"workspace-{suffix}",
        "AGENTMEM_DATA_DIR": str(data_dir),
    })
    return env


@contextmanager
def running_aws_server(data_dir: Path) -> Iterator[Server]:
    """``agentmem serve --backend aws --create-resources`` against DynamoDB Local and a moto server of its
    own (for S3), with the dev key it wrote to ``data_dir``. The server and moto are always stopped;
    DynamoDB Local is this process's shared one (``dynamodb_local.stop_shared`` ends it)."""
    from moto_server import MotoServer  # tests/support

    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir.parent / f"{data_dir.name}-serve-aws-{uuid.uuid4().hex[:6]}.log"
    moto = MotoServer().start()
    try:
        env = aws_environment(moto.url, data_dir)
        _create_table(env)  # --create-resources finds it made and leaves it: the same table without its stream
        with _serve(["--backend", "aws", "--create-resources"], env, log, AWS_START_TIMEOUT_S) as (base_url, _proc):
            key = (data_dir / "dev-key").read_text().strip()
            yield Server(base_url=base_url, key=key, data_dir=data_dir, log=log, backend="aws", aws_env=env)
    finally:
        moto.stop()


def _create_table(env: Mapping[str, str]) -> None:
    """The server's table, made as the adapter makes it but without its stream (``dynamodb_local.create_table``
    says why), with the client the server would make."""
    from unittest import mock

    import boto3
    import dynamodb_local  # tests/support
    from agentmem.adapters.aws.dynamodb import dynamodb_client

    with mock.patch.dict(os.environ, env, clear=True):
        client = dynamodb_client(boto3.Session())
    dynamodb_local.create_table(client, env["AGENTMEM_TABLE"])


def create_account(data_dir: Path, name: str, aws_env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``agentmem accounts create NAME --json`` against the data dir, or with ``--backend aws`` and the AWS
    server's environment (the operator command)."""
    where = ["--data-dir", str(data_dir)] if aws_env is None else ["--backend", "aws"]
    done = subprocess.run(
        [str(AGENTMEM), "accounts", "create", name, *where, "--json"],
        capture_output=True, text=True, env=clean_env() if aws_env is None else dict(aws_env), timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    created: dict[str, Any] = json.loads(done.stdout)
    return created


def store_snapshot(data_dir: Path) -> Snapshot:
    """Every row of the store's tables, read from the SQLite file read-only."""
    uri = f"file:{data_dir / 'agentmem.db'}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=30)
    try:
        return {
            table: sorted(conn.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
            for table in STORE_TABLES
        }
    finally:
        conn.close()


def blob_snapshot(data_dir: Path, under: Path = WORKSPACE_BLOBS) -> list[tuple[str, int, int]]:
    """Every file under an embedded blob store (the workspaces' by default; its objects and its temporary
    uploads): path, size and modification time, so a file written, overwritten, removed or left half-uploaded
    shows."""
    root = data_dir / under
    found = []
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory) / name
            try:
                stat = path.stat()
            except FileNotFoundError:  # a temporary file gone while we walked
                continue
            found.append((str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns))
    return sorted(found)


@cache
def _s3(endpoint: str) -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")


def bucket_snapshot(
    aws_env: Mapping[str, str], bucket: str = "AGENTMEM_WORKSPACE_BUCKET"
) -> list[tuple[str, int, str, str]]:
    """Every object of one of the AWS backend's buckets (named by the environment variable ``bucket``: the
    workspace bucket by default): key, size, ETag and modification time, every page."""
    client = _s3(aws_env["AWS_ENDPOINT_URL_S3"])
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=aws_env[bucket])
    return sorted((item["Key"], item["Size"], item["ETag"], item["LastModified"].isoformat())
                  for page in pages for item in page.get("Contents", []))


@cache
def _dynamodb(endpoint: str) -> Any:
    import boto3

    return boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="test", aws_secret_access_key="test")


def table_snapshot(aws_env: Mapping[str, str]) -> Snapshot:
    """Every item of the AWS backend's table but the usage counters: a consistent Scan, every page."""
    client = _dynamodb(aws_env["AWS_ENDPOINT_URL_DYNAMODB"])
    pages = client.get_paginator("scan").paginate(TableName=aws_env["AGENTMEM_TABLE"], ConsistentRead=True)
    items = [item for page in pages for item in page["Items"] if not item["SK"]["S"].startswith(USAGE_SK_PREFIX)]
    return {"table": sorted(items, key=lambda item: (item["PK"]["S"], item["SK"]["S"]))}
