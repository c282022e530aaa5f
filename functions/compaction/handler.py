"""The scheduled sweep (EventBridge): housekeeping the store does not do by itself.

It runs the container's sweep and logs what it did: summary passes for conversations left over their
threshold, and the trash purge of memories and agents past their 30 days (SPEC §3.1, §3.2) — an agent's
purge takes its conversations, their sealed journal segments and their workspace files. On backends
without a TTL it also removes expired entries.
"""

from __future__ import annotations

from typing import Any

from agentmem.bootstrap import Container, get_container
from agentmem.invocation import entry_point
from agentmem.observability import logger
from aws_lambda_powertools.utilities.typing import LambdaContext


def handle(container: Container) -> dict[str, int]:
    result = container.sweep()
    logger.info("compaction sweep done", extra=result)
    return result


_instrumented = entry_point(lambda event, context: handle(get_container()))


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    result: dict[str, int] = _instrumented(event, context)
    return result
