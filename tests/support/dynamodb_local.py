"""DynamoDB Local for the tests: AWS's own engine, run with the machine's Java (started as ``agentmem
serve-emulated`` starts it, by ``agentmem.local.emulators``).

The jar ships in the npm package ``amplify-dynamodb-simulator`` (``make emulators`` installs it into
``node_modules``). One server per test process (each pytest-xdist worker is a process): ``shared()``
starts it on first use on a free port, in memory, and it is stopped when the session ends (the
contract conftest) or, failing that, when the process exits (atexit). A missing Java or jar is an
error that says what to install: the suite never skips the AWS backend.
"""

from __future__ import annotations

import atexit
import threading

from agentmem.local import emulators

# dummy credentials: DynamoDB Local checks their shape, never their value
CREDENTIALS = {**emulators.CREDENTIALS, "AWS_DEFAULT_REGION": "us-east-1"}
DynamoDBLocalError = emulators.EmulatorError  # no Java, no jar, or it did not answer
free_port = emulators.free_port


class DynamoDBLocal(emulators.DynamoDBLocal):
    """One DynamoDB Local process, in memory, on a free port of 127.0.0.1 (``agentmem.local.emulators``)."""

    def environment(self) -> dict[str, str]:
        """The variables botocore reads to talk to this server (set them while a client is made)."""
        return {**CREDENTIALS, **super().environment()}

    def start(self) -> DynamoDBLocal:
        super().start()
        return self


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
