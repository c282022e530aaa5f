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
from typing import Any

from agentmem.adapters.aws.dynamodb.table import TTL_ATTRIBUTE, table_definition
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


def create_table(client: Any, name: str) -> None:
    """The adapter's table ``name`` (``table.create_table``: its keys, indexes and TTL) without its stream.

    DynamoDB Local keeps every stream record, even a deleted table's, and each write to a table with a stream
    slows as they pile up in the process: a transaction of two items took 13 ms on a fresh server and 29 ms once
    8,000 had gone to streamed tables, while one on a table without a stream took 5.5 ms either way. A test
    process makes hundreds of tables, so its tests make theirs with this; only a test that reads the stream
    makes its table with one (the adapter's ``create_table``, whose definition ``test_dynamodb_counters`` checks).
    """
    definition = table_definition(name)
    del definition["StreamSpecification"]
    client.create_table(**definition)
    client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
    client.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True,
                                                                         "AttributeName": TTL_ATTRIBUTE})
