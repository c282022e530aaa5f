"""DynamoDB Local for the tests: AWS's own engine, run with the machine's Java.

The jar ships in the npm package ``amplify-dynamodb-simulator`` (``make emulators`` installs it into
``node_modules``). One server per test process (each pytest-xdist worker is a process): ``shared()``
starts it on first use on a free port, in memory, and it is stopped when the session ends (the
contract conftest) or, failing that, when the process exits (atexit). A missing Java or jar is an
error that says what to install: the suite never skips the AWS backend.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
JAR = "DynamoDBLocal.jar"
# where npm puts the emulator (the package has shipped it under both folders)
CANDIDATES = (
    REPO / "node_modules" / "amplify-dynamodb-simulator" / "emulator",
    REPO / "node_modules" / "amplify-dynamodb-simulator" / "package" / "emulator",
)
START_TIMEOUT_S = 60.0

# dummy credentials: DynamoDB Local checks their shape, never their value
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_SESSION_TOKEN": "test",
    "AWS_DEFAULT_REGION": "us-east-1",
}


class DynamoDBLocalError(RuntimeError):
    """DynamoDB Local could not be started (no Java, no jar, or it did not answer)."""


def emulator_dir() -> Path:
    for candidate in CANDIDATES:
        if (candidate / JAR).is_file():
            return candidate
    raise DynamoDBLocalError(
        f"{JAR} not found (looked in {', '.join(str(c) for c in CANDIDATES)}): "
        "run `make emulators` (npm install of amplify-dynamodb-simulator) first"
    )


def java_binary() -> str:
    java = shutil.which("java")
    if java is None:
        raise DynamoDBLocalError(
            "java not found on PATH: DynamoDB Local needs a Java runtime (e.g. apt-get install default-jre-headless)"
        )
    return java


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DynamoDBLocal:
    """One DynamoDB Local process, in memory, on a free port of 127.0.0.1."""

    def __init__(self) -> None:
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        fd, self._log_path = tempfile.mkstemp(prefix="dynamodb-local-", suffix=".log")
        self._log = os.fdopen(fd, "wb")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        """The variables botocore reads to talk to this server (set them while a client is made)."""
        return {**CREDENTIALS, "AWS_ENDPOINT_URL_DYNAMODB": self.endpoint}

    def start(self) -> DynamoDBLocal:
        java, folder = java_binary(), emulator_dir()
        for _attempt in range(3):  # another process may take the free port before Java binds it
            self.port = free_port()
            self._proc = subprocess.Popen(
                [java, "-Djava.library.path=./DynamoDBLocal_lib", "-jar", JAR, "-inMemory", "-port", str(self.port)],
                cwd=folder,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group, so stop() takes any children too
            )
            if self._wait_until_answering():
                return self
            self.stop()
        raise DynamoDBLocalError(f"DynamoDB Local did not start; its output:\n{self.output()}")

    def _wait_until_answering(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc is None or self._proc.poll() is not None:
                return False
            try:
                # any HTTP answer (DynamoDB Local says 400 to a bare GET) means it is serving
                urllib.request.urlopen(self.endpoint, timeout=1).close()
                return True
            except urllib.error.HTTPError:
                return True
            except OSError:
                time.sleep(0.1)
        return False

    def output(self) -> str:
        self._log.flush()
        return Path(self._log_path).read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        self.stop()
        self._log.close()
        Path(self._log_path).unlink(missing_ok=True)


_shared: DynamoDBLocal | None = None
_shared_lock = threading.Lock()


def shared() -> DynamoDBLocal:
    """This process's DynamoDB Local, started on first use."""
    global _shared
    with _shared_lock:
        if _shared is None:
            server = DynamoDBLocal()
            atexit.register(server.close)
            _shared = server.start()
        return _shared


def stop_shared() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.close()
            _shared = None
