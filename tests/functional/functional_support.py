"""Helpers of the functional tests: run ``agentmem serve`` as a subprocess, make accounts with the
operator command, and read the store's SQLite file read-only to prove a request changed nothing."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

AGENTMEM = Path(sys.executable).parent / "agentmem"
if not AGENTMEM.exists():  # not run from the project's virtualenv
    AGENTMEM = Path(shutil.which("agentmem") or AGENTMEM)
START_TIMEOUT_S = 30.0
# The store's tables; `usage` is left out on purpose: every request is counted, refused or not.
STORE_TABLES = ("accounts", "api_keys", "memories", "attachments", "entries", "entry_history")


@dataclass(frozen=True)
class Server:
    base_url: str
    key: str
    data_dir: Path
    log: Path

    def url(self, path: str) -> str:
        return self.base_url + path


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


def _wait_healthy(proc: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"agentmem serve exited with {proc.returncode}:\n{log.read_text()}")
        try:
            if requests.get(base_url + "/v1/health", timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"agentmem serve did not become healthy in {START_TIMEOUT_S}s:\n{log.read_text()}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextmanager
def running_server(data_dir: Path, **env: str) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """``agentmem serve`` on a free port; yields (base_url, process, log file). Always stopped."""
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir.parent / f"{data_dir.name}-serve-{uuid.uuid4().hex[:6]}.log"
    for _attempt in range(3):  # a free port can be taken between finding it and binding it
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(AGENTMEM), "serve", "--port", str(port), "--data-dir", str(data_dir)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=clean_env(**env),
            )
        try:
            _wait_healthy(proc, base_url, log)
        except RuntimeError:
            _stop(proc)
            if "Address already in use" in log.read_text():
                continue
            raise
        try:
            yield base_url, proc, log
        finally:
            _stop(proc)
        return
    raise RuntimeError("could not find a free port for agentmem serve")


def create_account(data_dir: Path, name: str) -> dict[str, Any]:
    """``agentmem accounts create NAME --json`` against the data dir (the operator command)."""
    done = subprocess.run(
        [str(AGENTMEM), "accounts", "create", name, "--data-dir", str(data_dir), "--json"],
        capture_output=True, text=True, env=clean_env(), timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    created: dict[str, Any] = json.loads(done.stdout)
    return created


def store_snapshot(data_dir: Path) -> dict[str, list[tuple[Any, ...]]]:
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
