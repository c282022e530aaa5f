"""Waiting for a started `agentmem serve` process to answer, for every test that starts one."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
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
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"agentmem serve did not become healthy in {timeout}s:\n{output()}")
