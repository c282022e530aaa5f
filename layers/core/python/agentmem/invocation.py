"""What every Lambda entry point runs inside: the invocation's log keys, built only when a line is logged,
and the X-Ray subsegment, opened only when tracing is on.

Powertools' ``logger.inject_lambda_context`` writes the invocation's keys (function, request id, cold
start) into the logger's state on every event, and ``tracer.capture_lambda_handler`` opens a subsegment on
every event, a dummy one when tracing is off (outside Lambda, or ``POWERTOOLS_TRACE_DISABLED``). Most
events log nothing, and tracing is off wherever no daemon listens, so both cost on every request for
nothing. Here an event only keeps a reference to its Lambda context and a dict of the keys it adds
(``log_keys``); a filter on the logger writes them into a record when one is emitted, in the shape
``inject_lambda_context`` gives (``function_name``, ``function_request_id``, ``cold_start``, ...). Each
event starts with no keys of the last one's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from .observability import SERVICE, tracer

Result = TypeVar("Result")


class _Invocation:
    """The invocation being served: one at a time in a process (Lambda's rule, and api/app.py's lock)."""

    context: ClassVar[Any] = None
    cold_start: ClassVar[bool] = False
    keys: ClassVar[dict[str, Any]] = {}
    first: ClassVar[bool] = True  # no invocation has started in this process yet


_CONTEXT_KEYS = (  # the record's key, the Lambda context's attribute
    ("function_name", "function_name"), ("function_memory_size", "memory_limit_in_mb"),
    ("function_arn", "invoked_function_arn"), ("function_request_id", "aws_request_id"),
)


class _InvocationKeys(logging.Filter):
    """Adds the invocation's keys to a record being emitted (a filter runs only for records past the level)."""

    def filter(self, record: logging.LogRecord) -> bool:
        added: dict[str, Any] = {}
        context = _Invocation.context
        if context is not None:
            added = {key: getattr(context, attribute, None) for key, attribute in _CONTEXT_KEYS}
            added["cold_start"] = _Invocation.cold_start
        added.update(_Invocation.keys)
        for key, value in added.items():
            if key not in record.__dict__:  # what the line itself passed in ``extra`` wins
                setattr(record, key, value)
        return True


logging.getLogger(SERVICE).addFilter(_InvocationKeys())


def log_keys(**keys: Any) -> None:
    """Keys every line logged for the rest of this invocation carries (``account_id=...``)."""
    _Invocation.keys.update(keys)


def entry_point(handler: Callable[[Any, Any], Result]) -> Callable[[Any, Any], Result]:
    """``handler(event, context)`` as a Lambda entry point: with the invocation's log keys, traced when on."""
    traced = tracer.capture_lambda_handler(handler, capture_response=False)

    def invoked(event: Any, context: Any) -> Result:
        _Invocation.context, _Invocation.keys = context, {}
        _Invocation.cold_start, _Invocation.first = _Invocation.first, False
        try:
            return handler(event, context) if tracer.disabled else traced(event, context)
        finally:
            _Invocation.context, _Invocation.keys = None, {}

    invoked.__name__ = getattr(handler, "__name__", "handler")
    invoked.__doc__ = handler.__doc__
    return invoked
