"""moto's server for the AWS adapters' tests (S3, Step Functions), one per test session (per xdist worker).

``MotoServer.start()`` runs ``moto.server`` in a child process on a free port, waits for it, and turns on
what the tests need through ``POST /moto-api/config``:

- ``{"stepfunctions": {"execute_state_machine": true}}`` — moto executes state machines (its ASL
  interpreter) instead of only recording them;
- ``{"lambda": {"use_docker": false}}`` — Lambda invokes go to moto's Docker-free backend
  (``moto.awslambda_simple``), because Docker is not there.

How a state machine's Lambda task reaches our real handler: moto's interpreter invokes the Lambda
through moto's own Lambda API (``http://localhost:$MOTO_PORT``, so the child gets ``MOTO_PORT``), and
``awslambda_simple`` would just echo the payload. moto has no hook to run a function's code without
Docker, so the child is started through this file (``python moto_server.py --port P --bridge URL``),
which replaces ``LambdaSimpleBackend.invoke`` before serving: it forwards the invoke to the
*bridge*, a small HTTP server in the test process, which calls the Python handler registered for that
function name — in the test process, with whatever the test injected — and sends back its result,
or ``{"errorType", "errorMessage"}`` with ``X-Amz-Function-Error: Unhandled`` when it raised, as
Lambda does. So Retry and Catch in the state machine see our handler's real error names.

No orphans: ``stop()`` ends the child (it also runs at exit), and the child exits by itself when its
stdin closes, which happens when the test process dies however it dies.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
START_TIMEOUT_S = 30.0

LambdaHandler = Callable[[Any, Any], Any]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def function_name(name_or_arn: str) -> str:
    """``arn:aws:lambda:r:a:function:NAME[:qualifier]`` or ``NAME[:qualifier]`` → ``NAME``."""
    if ":function:" in name_or_arn:
        return name_or_arn.split(":function:", 1)[1].split(":", 1)[0]
    return name_or_arn.split(":", 1)[0]


@dataclass
class FakeLambdaContext:
    """What Powertools reads from a Lambda context."""

    function_name: str
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 256
    aws_request_id: str = "moto-bridge"
    invoked_function_arn: str = ""

    def __post_init__(self) -> None:
        self.invoked_function_arn = self.invoked_function_arn or lambda_arn(self.function_name)

    def get_remaining_time_in_millis(self) -> int:
        return 300_000


def lambda_arn(name: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"


@dataclass
class Invocation:
    function: str
    event: Any
    error: str | None = None


# -- the test process's side: the bridge ---------------------------------------------------------------
@dataclass
class LambdaBridge:
    """Runs registered Python handlers for the Lambda invokes moto forwards (in this process)."""

    handlers: dict[str, LambdaHandler] = field(default_factory=dict)
    invocations: list[Invocation] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the bridge is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        bridge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                name = function_name(unquote(self.path.rsplit("/", 1)[-1]))
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                answer = bridge.invoke(name, raw)
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="moto-lambda-bridge", daemon=True
        ).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def invoke(self, name: str, raw: bytes) -> dict[str, Any]:
        event = json.loads(raw) if raw.strip() else {}
        handler = self.handlers.get(name)
        if handler is None:
            self.invocations.append(Invocation(name, event, "ResourceNotFoundException"))
            return {"errorType": "ResourceNotFoundException", "errorMessage": f"no handler for function {name}"}
        try:
            result = handler(event, FakeLambdaContext(function_name=name))
        except Exception as error:  # reported to Step Functions as Lambda reports an unhandled error
            self.invocations.append(Invocation(name, event, type(error).__name__))
            return {"errorType": type(error).__name__, "errorMessage": str(error)}
        self.invocations.append(Invocation(name, event))
        return {"payload": result}


# -- the test process's side: the server ---------------------------------------------------------------
class MotoServer:
    def __init__(self) -> None:
        self.port = 0
        self.bridge = LambdaBridge()
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None
        self._session: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> MotoServer:
        self.bridge.start()
        atexit.register(self.stop)
        last_error: Exception | None = None
        for _ in range(3):  # a free port can be taken between probing and binding: try another
            try:
                self._spawn(free_port())
                self.configure({"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}})
                return self
            except (RuntimeError, TimeoutError) as error:
                last_error = error
                self._stop_process()
        self.stop()
        raise RuntimeError(f"moto's server did not start: {last_error}")

    def _spawn(self, port: int) -> None:
        self.port = port
        log = tempfile.NamedTemporaryFile(prefix="moto-server-", suffix=".log", delete=False)  # noqa: SIM115
        self._log = Path(log.name)
        env = {**os.environ, "MOTO_PORT": str(port), **{k.upper(): v for k, v in CREDENTIALS.items()}}
        self._process = subprocess.Popen(
            [sys.executable, __file__, "--port", str(port), "--bridge", self.bridge.url, "--log", log.name],
            stdin=subprocess.PIPE,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"moto exited with {self._process.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/moto-api/config", timeout=1):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.1)
        raise TimeoutError(f"moto did not answer on port {port} within {START_TIMEOUT_S}s: {self.log_tail()}")

    def configure(self, config: dict[str, Any]) -> dict[str, Any]:
        """POST /moto-api/config; returns moto's whole config after the change (and checks it took)."""
        request = urllib.request.Request(
            f"{self.url}/moto-api/config", data=json.dumps(config).encode(), method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            current: dict[str, Any] = json.loads(response.read())
        for section, values in config.items():
            # moto echoes only some sections (not "stepfunctions", in 5.x): check the ones it shows
            if section in current and {k: current[section].get(k) for k in values} != values:
                raise RuntimeError(f"moto did not take the config {section}: {current[section]}")
        return current

    def reset(self) -> None:
        """Forget every resource (moto's reset); the config stays."""
        request = urllib.request.Request(f"{self.url}/moto-api/reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass

    def stop(self) -> None:
        self._stop_process()
        self.bridge.stop()
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if self._log is not None:
            self._log.unlink(missing_ok=True)

    def log_tail(self, lines: int = 20) -> str:
        if self._log is None or not self._log.exists():
            return ""
        return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])

    # -- what tests use -----------------------------------------------------------------------------------
    def session(self) -> Any:
        """One boto3 session for the server's clients (its loader caches the service models)."""
        import boto3

        if self._session is None:
            self._session = boto3.session.Session(
                region_name=REGION,
                aws_access_key_id=CREDENTIALS["aws_access_key_id"],
                aws_secret_access_key=CREDENTIALS["aws_secret_access_key"],
            )
        return self._session

    def client(self, service: str) -> Any:
        """A boto3 client of ``service`` on this server, configured as agentmem configures its clients."""
        from agentmem.adapters.aws.config import client_config

        return self.session().client(service, endpoint_url=self.url, config=client_config())

    def env(self) -> dict[str, str]:
        """The standard AWS settings that point boto3 (and so agentmem's backend) at this server."""
        return {
            "AWS_ENDPOINT_URL_S3": self.url,
            "AWS_ENDPOINT_URL_SFN": self.url,
            "AWS_ENDPOINT_URL_STEPFUNCTIONS": self.url,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_REGION": REGION,
            "AWS_ACCESS_KEY_ID": CREDENTIALS["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": CREDENTIALS["aws_secret_access_key"],
        }

    @contextlib.contextmanager
    def lambda_function(self, name: str, handler: LambdaHandler) -> Iterator[str]:
        """Route invokes of the function ``name`` to ``handler`` while the block runs; yields its ARN."""
        self.bridge.handlers[name] = handler
        try:
            yield lambda_arn(name)
        finally:
            self.bridge.handlers.pop(name, None)


# -- the child process's side: moto, with Lambda invokes sent to the bridge -------------------------------
def _serve(port: int, bridge_url: str, log: str | None) -> None:
    from moto.awslambda_simple.models import LambdaSimpleBackend
    from moto.server import main

    def invoke(
        self: LambdaSimpleBackend, function_name: str, qualifier: str | None, body: Any, headers: Any,
        response_headers: Any,
    ) -> bytes:
        payload = body.encode() if isinstance(body, str) else (body or b"")
        request = urllib.request.Request(
            f"{bridge_url}/functions/{quote(function_name, safe='')}", data=payload or b"{}", method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=600) as response:
            answer = json.loads(response.read())
        if "errorType" in answer:
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps(answer).encode()
        return json.dumps(answer.get("payload")).encode()

    LambdaSimpleBackend.invoke = invoke  # type: ignore[method-assign]

    def exit_when_parent_goes() -> None:
        sys.stdin.buffer.read()
        if log:
            with contextlib.suppress(OSError):
                os.unlink(log)
        os._exit(0)

    threading.Thread(target=exit_when_parent_goes, daemon=True).start()
    main(["-H", "127.0.0.1", "-p", str(port)])


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="moto's server, with Lambda invokes forwarded to a bridge")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--bridge", required=True)
    parser.add_argument("--log", help="the log file to remove when the parent goes")
    args = parser.parse_args()
    _serve(args.port, args.bridge, args.log)
