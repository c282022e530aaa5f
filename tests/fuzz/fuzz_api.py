"""Fuzz the API from its own OpenAPI document, on a started ``agentmem serve`` (embedded backend) and on
``agentmem serve-emulated`` (the AWS backend on DynamoDB Local and moto's S3).

Schemathesis reads ``/v1/openapi.json`` and sends what it describes and what it does not (examples, the
boundaries of every schema, random values, sequences of calls linked by their answers), a bounded number of
cases per operation. Path parameters are pinned to resources made first (a memory with an entry, an agent
using it, a conversation with a tool call and a workspace file, a disposable key and user), so the requests
reach the handlers rather than a 404. The bar: no 5xx, and every status code, body, header and content type
as the document says. Run it with ``make fuzz`` (``.ci/run`` does); ``FUZZ_EXAMPLES`` (cases per operation),
``FUZZ_SEED`` and ``FUZZ_BACKENDS`` (``embedded,aws``) change the run. Exit code 0 only when both are clean.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
import attacks  # tests/fuzz
from serving import AGENTMEM, free_port, wait_healthy  # tests/support

CHECKS = ("not_a_server_error", "status_code_conformance", "response_schema_conformance",
          "content_type_conformance", "response_headers_conformance")
PHASES = "examples,coverage,fuzzing,stateful"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "10"))
SEED = os.environ.get("FUZZ_SEED", "20261201")
BACKENDS = tuple(os.environ.get("FUZZ_BACKENDS", "embedded,aws").split(","))
# what the path parameters are pinned to (made by seed() before the run)
MEMORY, ENTRY, AGENT, CONVERSATION, FILE, USER = "fuzz-memory", "policy", "fuzz-agent", "chat-1", "notes.txt", "fuzz-u"
TOOL_CALL, TOOL = "call-1", "memory__search"


@contextmanager
def served(backend: str, workdir: Path) -> Iterator[tuple[str, str]]:
    """The server on a free port; yields (base URL, the default account's key). Always stopped."""
    port = free_port()
    data_dir = workdir / backend
    command = "serve" if backend == "embedded" else "serve-emulated"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    log = (workdir / f"{backend}.log").open("wb")
    process = subprocess.Popen([str(AGENTMEM), command, "--port", str(port), "--data-dir", str(data_dir)],
                               stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(process, url, lambda: (workdir / f"{backend}.log").read_text(), timeout=120)
        yield url, (data_dir / "dev-key").read_text().strip()
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


def seed(url: str, key: str) -> dict[str, str]:
    """The resources the path parameters name; returns the pins (the disposable key's id among them)."""
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {key}"

    def call(method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        response = http.request(method, f"{url}/v1{path}", timeout=30, **kwargs)
        assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text}"
        return response.json() if response.content else {}

    call("PUT", f"/memories/{MEMORY}")
    call("PUT", f"/memories/{MEMORY}/entries/{ENTRY}", json={"content": "Refunds within 30 days.",
                                                              "description": "Refund policy"})
    call("PUT", f"/agents/{AGENT}", json={"memories": [{"name": MEMORY, "writable": True}]})
    conversation = f"/agents/{AGENT}/conversations/{CONVERSATION}"
    call("POST", f"{conversation}/messages", json={"messages": [
        {"role": "user", "content": "What is the refund policy?"},
        {"role": "tool_call", "tool_name": TOOL, "tool_call_id": TOOL_CALL, "arguments": {"query": "refund"}},
        {"role": "tool_result", "tool_call_id": TOOL_CALL, "result": "Refunds within 30 days."},
        {"role": "assistant", "content": "Refunds are accepted within 30 days."},
    ]})
    call("PUT", f"{conversation}/workspace/files/{FILE}", data=b"draft notes")
    disposable = call("POST", "/keys", json={})["id"]
    return {"path.memory": MEMORY, "path.name": ENTRY, "path.agent": AGENT, "path.key": CONVERSATION,
            "path.path": FILE, "path.tool_call_id": TOOL_CALL, "path.tool": TOOL, "path.key_id": disposable,
            "path.user_id": USER}


def config(key: str, pins: dict[str, str], path: Path) -> Path:
    lines = [f'headers = {{ Authorization = "Bearer {key}" }}', "[parameters]"]
    lines += [f'"{name}" = {json.dumps(value)}' for name, value in pins.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def fuzz(backend: str, workdir: Path) -> dict[str, Any]:
    """One backend's run; returns schemathesis' JSON report."""
    with served(backend, workdir) as (url, key):
        pins = seed(url, key)
        reports = workdir / f"{backend}-report"
        started = time.monotonic()
        done = subprocess.run(
            [str(Path(sys.executable).with_name("schemathesis")),
             "--config-file", str(config(key, pins, workdir / f"{backend}.toml")),
             "run", f"{url}/v1/openapi.json", "--checks", ",".join(CHECKS), "--phases", PHASES,
             "--max-examples", str(EXAMPLES), "--seed", SEED, "--workers", "2", "--no-shrink",
             "--request-timeout", "30", "--report", "json", "--report-dir", str(reports)],
            capture_output=True, text=True, check=False,
        )
        report: dict[str, Any] = json.loads(next(reports.glob("*.json")).read_text())
        report["_seconds"] = time.monotonic() - started
        # and the attacks that once got past the API, on the server the fuzzer has just used
        report["_attacks"] = attacks.run(url, key)
        if done.returncode != 0:
            print(done.stdout[-20000:], file=sys.stderr)
        return report


def answer_errors(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The errors that are the server's (no answer, a timeout, a broken connection): a ``Runtime Error`` is the
    fuzzer failing to generate a case, reported but not the API's fault."""
    return [error for error in report["errors"] if error.get("title") != "Runtime Error"]


def summary(backend: str, report: dict[str, Any]) -> str:
    operations, cases = report["operations"], report["test_cases"]
    failures = sum(failure["count"] for failure in report["failures"])
    return (f"fuzz {backend}: {cases['generated']} requests, {operations['tested']} of {operations['total']} "
            f"operations, {failures} failures, {len(report['errors'])} errors "
            f"({report['_seconds']:.0f}s, seed {SEED}, {EXAMPLES} examples per operation)")


def main() -> int:
    clean = True
    with tempfile.TemporaryDirectory(prefix="agentmem-fuzz-") as tmp:
        for backend in BACKENDS:
            report = fuzz(backend, Path(tmp))
            print(summary(backend, report))
            for failure in report["failures"]:
                print(f"  {failure['code']} {failure['title']}: {', '.join(failure['operations'])}")
            for error in report["errors"]:
                print(f"  error: {str(error)[:300]}")
            print(f"attacks {backend}: {len(attacks.attacks('m', 'a', 'c'))} and the links' (embedded) sent, "
                  f"{len(report['_attacks'])} not refused as they should be")
            for failure in report["_attacks"]:
                print(f"  attack: {failure}")
            missed = report["operations"]["tested"] < report["operations"]["total"]
            clean = clean and not report["failures"] and not answer_errors(report) and not missed
            clean = clean and not report["_attacks"]
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
