"""Powertools logger, tracer and metrics, one of each for the process.

Metrics are emitted as single data points (CloudWatch embedded metric format) so nothing
accumulates between events; where no one reads metric logs (``agentmem serve`` sets
POWERTOOLS_METRICS_DISABLED) nothing is emitted at all.
"""

from __future__ import annotations

import os
from functools import cache

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

SERVICE = "agentmem"
NAMESPACE = "agentmem"

logger = Logger(service=SERVICE)
# Not auto_patch: Powertools would patch, at import, every library the X-Ray SDK knows of that is installed,
# importing each (botocore, requests, httpx, sqlite3, ...) before any request needs one. What a trace shows of
# the calls out (AWS's, and the OpenSearch client's HTTP) is patched in where the first AWS session is made.
tracer = Tracer(service=SERVICE, auto_patch=False)

TRACED_MODULES = ("botocore", "httplib")  # AWS calls; plain HTTP (http.client, under the OpenSearch client)


@cache
def trace_calls_out() -> None:
    """Subsegments for AWS and HTTP calls from now on (once per process; nothing when tracing is off)."""
    tracer.patch(modules=TRACED_MODULES)


_METRICS_SWITCHES = ("POWERTOOLS_METRICS_DISABLED", "POWERTOOLS_DEV")
_metrics_off: tuple[tuple[object, ...], bool] = ((object(),), False)  # the switches as last read, and their answer
# os.environ's own store and its keys for the switches: a lookup there is a dict's (``os.environ.get`` encodes
# the name and decodes the value through four Python calls, about 1 µs each time); ``os.environ.get`` where a
# platform's environ has no such store
_ENVIRON: dict[object, object] | None = getattr(os.environ, "_data", None)
_SWITCH_KEYS = tuple(getattr(os.environ, "encodekey", str)(name) for name in _METRICS_SWITCHES)


def metrics_disabled() -> bool:
    """Powertools' ``is_metrics_disabled``, worked out again only when one of its variables changed (it parses
    both on every call, and a request counts at least once)."""
    global _metrics_off
    if _ENVIRON is not None:
        switches: tuple[object, ...] = (_ENVIRON.get(_SWITCH_KEYS[0]), _ENVIRON.get(_SWITCH_KEYS[1]))
    else:
        switches = tuple(os.environ.get(name) for name in _METRICS_SWITCHES)
    if switches != _metrics_off[0]:
        _metrics_off = (switches, is_metrics_disabled())
    return _metrics_off[1]


def count(name: str, **dimensions: str) -> None:
    """One data point of the count ``name`` with these dimensions."""
    if metrics_disabled():
        return
    with single_metric(
        name=name, unit=MetricUnit.Count, value=1, namespace=NAMESPACE,
        default_dimensions={"service": SERVICE, **dimensions},
    ):
        pass


def count_request(operation: str, billable: bool) -> None:
    """A served request, by operation; memory tools are metered with billable=false (SPEC §9)."""
    count("Requests", operation=operation, billable=str(billable).lower())
