"""The Lambda invocation around every entry point (agentmem.invocation): the invocation's log keys on the
lines it logs and on no other, and tracing that costs nothing when it is off."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from agentmem.invocation import entry_point, log_keys
from agentmem.local.server import LocalContext
from agentmem.observability import SERVICE, logger, tracer


@pytest.fixture
def lines(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    logs = io.StringIO()
    monkeypatch.setattr(logger.registered_handler, "stream", logs)
    return logs


def parsed(logs: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in logs.getvalue().splitlines() if line.startswith("{")]


def test_a_line_carries_its_invocation_and_the_keys_it_added(lines: io.StringIO) -> None:
    # Given an entry point that adds a key and logs, then one that only logs
    def first(event: Any, context: Any) -> str:
        log_keys(account_id="acc-1")
        logger.warning("first", extra={"step": 1})
        return "done"

    def second(event: Any, context: Any) -> None:
        logger.warning("second")

    # When each is invoked with its Lambda context
    assert entry_point(first)({}, LocalContext(aws_request_id="req-1")) == "done"
    entry_point(second)({}, LocalContext(aws_request_id="req-2"))
    logger.warning("between invocations")
    # Then each line carries its own invocation, and the keys of the one it was logged in only
    one, two, after = parsed(lines)
    assert (one["message"], one["function_request_id"], one["account_id"], one["step"]) == ("first", "req-1",
                                                                                            "acc-1", 1)
    assert one["function_name"] == "agentmem-local" and one["function_memory_size"] == 1024
    assert one["function_arn"].endswith(":function:agentmem-local") and isinstance(one["cold_start"], bool)
    assert two["function_request_id"] == "req-2" and "account_id" not in two and two["cold_start"] is False
    assert "function_request_id" not in after and "account_id" not in after


def test_a_line_below_the_level_builds_nothing(lines: io.StringIO) -> None:
    # Given a context whose attributes count their reads
    read: list[str] = []

    class Counting(LocalContext):
        def __getattribute__(self, name: str) -> Any:
            read.append(name)
            return super().__getattribute__(name)

    # When an invocation logs only below the logger's level
    level = logging.getLogger(SERVICE).level
    logger.setLevel("INFO")
    try:
        entry_point(lambda event, context: logger.debug("quiet"))({}, Counting())
    finally:
        logging.getLogger(SERVICE).setLevel(level)
    # Then nothing of the context was read, and nothing written
    assert read == [] and parsed(lines) == []


def test_tracing_off_opens_no_subsegment_and_on_opens_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a tracer provider that records the subsegments opened
    opened: list[str] = []

    class Provider:
        @contextmanager
        def in_subsegment(self, name: str, **_: Any) -> Iterator[Any]:
            opened.append(name)

            class Segment:
                def put_annotation(self, **_: Any) -> None: ...

                def put_metadata(self, **_: Any) -> None: ...

            yield Segment()

    monkeypatch.setattr(tracer, "provider", Provider())

    def handler(event: Any, context: Any) -> str:
        return "answered"

    wrapped = entry_point(handler)
    # When the entry point runs with tracing off, then on
    monkeypatch.setattr(tracer, "disabled", True)
    assert wrapped({}, LocalContext()) == "answered"
    assert opened == []
    monkeypatch.setattr(tracer, "disabled", False)
    assert wrapped({}, LocalContext()) == "answered"
    # Then only the traced invocation opened its subsegment
    assert opened == ["## handler"]
