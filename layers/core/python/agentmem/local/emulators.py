"""The AWS emulators the AWS backend runs on locally: DynamoDB Local and moto's server (for S3).

DynamoDB Local is AWS's own engine, a jar shipped in the npm package ``amplify-dynamodb-simulator``
(``make emulators`` installs it into ``node_modules``) and run with the machine's Java; moto's server is the
``moto[server]`` package, run with this Python. Each starts on a free port of 127.0.0.1, in memory, in its
own process group, and is stopped with its group. On Linux one started from the main thread also dies with
the process that started it, however that process ends (``PR_SET_PDEATHSIG``), so a killed launcher leaves
no emulator behind.

``agentmem serve-emulated`` (``make run-aws``) and the tests start them through this module.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

JAR = "DynamoDBLocal.jar"
PACKAGE = Path("node_modules") / "amplify-dynamodb-simulator"
# the folder the jar is in (the package has shipped it under both)
JAR_FOLDERS = (Path("emulator"), Path("package") / "emulator")
CHECKOUT = Path(__file__).resolve().parents[5]  # layers/core/python/agentmem/local/emulators.py → the repository
START_TIMEOUT_S = 60.0
REGION = "us-east-1"
# credentials the emulators accept: they check their shape, never their value
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "test"}


class EmulatorError(RuntimeError):
    """An emulator could not be started; the message says what to install or run."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child, before exec: be sent SIGTERM when the process that started it ends (Linux)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Emulator:
    """One emulator process on a free port: started until it answers HTTP, stopped with its process group."""

    name = "emulator"

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        fd, self._log_path = tempfile.mkstemp(prefix=f"agentmem-{self.name.split()[0].lower()}-", suffix=".log")
        self._log = os.fdopen(fd, "wb")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def command(self, port: int) -> tuple[Sequence[str], Path | None]:
        """The command line (and its working directory) that serves on ``port``."""
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        """The variables that point boto3 at this emulator."""
        raise NotImplementedError

    def start(self) -> Emulator:
        for _attempt in range(3):  # another process may take the free port before the emulator binds it
            self.port = free_port()
            args, cwd = self.command(self.port)
            # the death signal follows the thread that starts the child: only the main thread's lasts the process
            on_main_thread = threading.current_thread() is threading.main_thread()
            self.process = subprocess.Popen(
                list(args), cwd=cwd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: stop() takes its children too
                preexec_fn=_die_with_parent if on_main_thread else None,  # only a prctl runs before exec
            )
            if self._wait_until_answering():
                return self
            self.stop()
        raise EmulatorError(f"{self.name} did not start; its output:\n{self.output()}")

    def _wait_until_answering(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                urllib.request.urlopen(self.endpoint, timeout=1).close()
                return True
            except urllib.error.HTTPError:  # any HTTP answer means it is serving
                return True
            except OSError:
                time.sleep(0.1)
        return False

    def output(self) -> str:
        self._log.flush()
        return Path(self._log_path).read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        self.stop()
        self._log.close()
        Path(self._log_path).unlink(missing_ok=True)


def dynamodb_local_dir(*, starting_from: Sequence[Path] = ()) -> Path:
    """The folder holding DynamoDB Local's jar: under ``node_modules`` of the current folder, of ``starting_from``,
    or of the agentmem checkout."""
    roots = [*starting_from, Path.cwd(), CHECKOUT]
    candidates = [root / PACKAGE / folder for root in roots for folder in JAR_FOLDERS]
    for candidate in candidates:
        if (candidate / JAR).is_file():
            return candidate
    raise EmulatorError(
        f"DynamoDB Local ({JAR}) not found under {', '.join(str(root / PACKAGE) for root in dict.fromkeys(roots))}: "
        "run `make emulators` (npm install of amplify-dynamodb-simulator) in the agentmem checkout"
    )


def java_binary() -> str:
    java = shutil.which("java")
    if java is None:
        raise EmulatorError(
            "java not found on PATH: DynamoDB Local needs a Java runtime (e.g. apt-get install default-jre-headless)"
        )
    return java


class DynamoDBLocal(Emulator):
    """DynamoDB Local, in memory."""

    name = "DynamoDB Local"

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        super().__init__()

    def command(self, port: int) -> tuple[Sequence[str], Path | None]:
        java, folder = java_binary(), self.folder or dynamodb_local_dir()
        if not (folder / JAR).is_file():
            raise EmulatorError(f"no {JAR} in {folder}")
        return [java, "-Djava.library.path=./DynamoDBLocal_lib", "-jar", JAR, "-inMemory", "-port", str(port)], folder

    def environment(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL_DYNAMODB": self.endpoint}


class MotoServer(Emulator):
    """moto's server, in memory; agentmem uses its S3."""

    name = "moto's server"

    def command(self, port: int) -> tuple[Sequence[str], Path | None]:
        if not all(importlib.util.find_spec(name) for name in ("moto", "flask", "flask_cors")):
            raise EmulatorError("moto's server is not installed: pip install 'moto[server]' "
                                "(`make run-aws` installs it)")
        return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], None

    def environment(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL_S3": self.endpoint}


class Emulators:
    """DynamoDB Local and moto's server together, with the variables that point the AWS backend at them."""

    def __init__(self, *, dynamodb_local: Path | None = None,
                 make: Sequence[Callable[[], Emulator]] | None = None) -> None:
        self._make = make or (lambda: DynamoDBLocal(dynamodb_local), MotoServer)
        self.running: list[Emulator] = []

    def start(self) -> Emulators:
        """Start each in turn; if one fails, the ones already started are stopped before the error leaves."""
        try:
            for make in self._make:
                emulator = make()
                self.running.append(emulator)
                emulator.start()
        except BaseException:
            self.stop()
            raise
        return self

    def environment(self) -> dict[str, str]:
        """Every endpoint, test credentials and a region: what boto3 reads to use the emulators."""
        env = {**CREDENTIALS, "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION}
        for emulator in self.running:
            env.update(emulator.environment())
        return env

    def stop(self) -> None:
        for emulator in reversed(self.running):
            emulator.close()
        self.running = []
