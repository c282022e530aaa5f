"""Waiting for a started `agentmem serve` process to answer, for every test that starts one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests


def wait_healthy(
    proc: subprocess.Popen[Any], base_url: str, output: Callable[[], str], timeout: float = 30.0
) -> None:
    """Return once ``/v1/health`` answers 200; raise with the server's output if it exits or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"agentmem serve exited with {proc.returncode}:\n{output()}")
        try:
            if requests.get(base_url + "/v1/health", timeout=1).status_code == 200:
                return
        except (requests.ConnectionError, requests.Timeout):  # bound but not serving yet (it sets up first)
            pass
        time.sleep(0.1)
    raise RuntimeError(f"agentmem serve did not become healthy in {timeout}s:\n{output()}")


AGENTMEM = Path(sys.executable).with_name("agentmem")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def served_as_make_run(workdir: Path) -> Iterator[dict[str, str]]:
    """`agentmem serve` as `make run` starts it, in ``workdir``; yields the environment a reader's shell
    has then (``AGENTMEM_URL``, ``AGENTMEM_API_KEY``, the CLI on ``PATH``, and ``WORKDIR``)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    process = subprocess.Popen(
        [str(AGENTMEM), "serve", "--port", str(port)], cwd=workdir, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, url, lambda: process.stdout.read() if process.stdout else "")
        key = (workdir / ".agentmem" / "dev-key").read_text().strip()
        yield {**env, "AGENTMEM_URL": url, "AGENTMEM_API_KEY": key, "PATH": f"{AGENTMEM.parent}:{env['PATH']}",
               "WORKDIR": str(workdir)}
    finally:
        process.terminate()
        process.wait(timeout=10)
