"""AWS requests per operation: what each API operation and each DynamoDB store call sends to AWS.

    .venv/bin/python bench/aws_calls.py                  # about 80 s: prints the tables, writes the JSON
    .venv/bin/python bench/aws_calls.py --context        # only the context build's rows, writes nothing
    .venv/bin/python bench/aws_calls.py --update-docs    # also replaces the generated block of docs/benchmarks.md
    .venv/bin/python bench/aws_calls.py --markdown bench/results/aws_calls.json   # the tables, measuring nothing

Runs the AWS backend on DynamoDB Local (AWS's own engine, started on a free port by
``tests/support/dynamodb_local.py``; ``make emulators`` installs it) and counts, with botocore's event
hooks on the boto3 session every client is made from:

* requests: ``before-send`` (one per HTTP request, botocore's retries included) and ``before-call`` (one per
  API call), by operation (GetItem, Query, TransactWriteItems, ...) and by service;
* consumed capacity: ``before-parameter-build`` sets ``ReturnConsumedCapacity=INDEXES`` on every DynamoDB
  operation that takes it (pynamodb already asks for ``TOTAL``; INDEXES adds the table / index split),
  and ``after-call`` reads ``ConsumedCapacity`` from the parsed response. An error response (a cancelled
  transaction, a failed condition) carries none, so those requests count 0 units here.

Two levels:

1. **API operations** through ``agentmem.api.app.lambda_handler`` with API Gateway REST events
   (``agentmem.local.events.build_rest_event``), as on Lambda. Each operation runs twice: *authorizer-cached*
   (the event carries ``requestContext.authorizer`` = {account_id, key_id, kind, user_id}, as API Gateway
   passes the cached answer of the API-key authorizer, and the handler trusts it) and *with authenticate*
   (no authorizer context: the handler looks the key up itself, as the local server does, and keeps the
   answer 300 s on the AWS backend). A row above its physical minimum carries the reason (``note``), shown in
   the tables' last column.
2. **Store calls**: the DynamoDB adapters called directly (``DynamoEntryStore``, ``DynamoMemoryStore``,
   ``DynamoAccountStore``, ``DynamoConversationStore``), with their cache warm or cold (a new store = a new
   process). A conversation append is one transaction when the process's cache knows the conversation.

A context build (``GET …/context``) is measured through the API too, on an agent with two attached memories
(500 entries a layer, 60 messages), with its *rounds*: ``before-call`` / ``after-call`` note when each API call
starts and ends, and the rounds are the longest chain of requests each sent after the previous one ended
(requests in flight together count once). In those rows each request is held 20 ms before it is sent, as a
network's round trip would, so that requests sent together overlap however loaded the machine is (DynamoDB Local
on the same host answers in a millisecond or two). ``--context`` runs only those rows and writes nothing.

Each row is set up first (uncounted), then only the measured call is counted. Usage metering is held back
during the measurements (its flush is measured on its own row), so no row picks up a flush by chance.

Recall with its semantic side is measured against OpenSearch too: the fake of
``tests/integration/fake_opensearch.py`` (which records every request it gets), filled from the table by the
rebuild of ``agentmem reindex``, with the hashing embedder (no model call to count).

Apart from those rows, the entries and these conversation calls only touch DynamoDB: S3, Step Functions and
OpenSearch are not built by them (the container's adapters stay unbuilt, and the conversation store's journal
bucket is made on first use, which none of them is; the run checks that no other service was called), so moto's
server is not started. Sealing and reading sealed messages back are counted by
tests/integration/test_dynamodb_journal.py.

DynamoDB Local returns consumed capacity, but nothing is billed, and its figures for transactions do not
follow AWS's published per-item rule (see ``--markdown`` notes and docs/benchmarks.md); the JSON also
holds an estimate of a transaction's table WCU by AWS's rule.

Writes ``bench/results/aws_calls.json``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote_plus

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # functions.authorizer
sys.path.insert(0, str(ROOT / "tests" / "support"))  # dynamodb_local
sys.path.insert(0, str(ROOT / "bench"))  # corpus
sys.path.insert(0, str(ROOT / "tests" / "integration"))  # fake_opensearch

# Locally there is no CloudWatch or X-Ray: metrics and traces off, as the local server does (before imports)
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "agentmem")

RESULTS = ROOT / "bench" / "results" / "aws_calls.json"
NEW_INSTANCE = "a new instance: GetItem of the memory's record (then kept 5 s); "
STORE_COLD = "a new store has not seen the entry: GetItem (the transaction is conditioned on the exact stored item)"
DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- bench/aws_calls.py --markdown: begin -->"
END = "<!-- bench/aws_calls.py --markdown: end -->"
MB = 1024 * 1024
KB = 1024
TABLE = "agentmem-bench-aws-calls"
SEARCH_QUERY_WORDS = 2

# DynamoDB operations that take ReturnConsumedCapacity
CAPACITY_OPERATIONS = frozenset({
    "GetItem", "Query", "Scan", "PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "TransactGetItems",
    "BatchGetItem", "BatchWriteItem",
})
READ_OPERATIONS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})


# -- counting ------------------------------------------------------------------------------------------------
@dataclass
class Tally:
    """What one measured call sent: HTTP requests and API calls by operation, and the capacity reported."""

    sends: Counter[str] = field(default_factory=Counter)  # "dynamodb.GetItem" → HTTP requests
    calls: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # "TransactWriteItems:TransactionCanceledException"
    rcu: float = 0.0
    wcu: float = 0.0
    rcu_index: float = 0.0  # the part of rcu / wcu read from or written to indexes
    wcu_index: float = 0.0
    tx_wcu_aws_rule: float = 0.0  # AWS's rule for the table writes of successful transactions (estimate)
    query_pages: int = 0
    query_items_read: int = 0  # ScannedCount: items read before any filter
    spans: list[tuple[float, float]] = field(default_factory=list)  # each API call's start and end (perf_counter)
    connections: int = 0  # connections opened (a TCP and TLS handshake each on AWS)


def rounds(spans: Sequence[tuple[float, float]]) -> int:
    """How many requests the call waited for one after another: the longest chain of requests each of which
    started after the one before it had ended. Requests in flight together (sent at once) make one round."""
    ordered = sorted(spans)
    depth: list[int] = []
    for i, (start, _) in enumerate(ordered):
        depth.append(1 + max((depth[j] for j in range(i) if ordered[j][1] <= start), default=0))
    return max(depth, default=0)


def item_size(item: dict[str, Any]) -> int:
    """An item's size in bytes by DynamoDB's published rule (names + values)."""
    return sum(len(name.encode("utf-8")) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    (kind, inner), = value.items()
    if kind == "S":
        return len(inner.encode("utf-8"))
    if kind == "N":
        digits = inner.lstrip("-").replace(".", "").strip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(_value_size({kind[0]: v}) for v in inner)
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + _value_size(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in inner)
    raise ValueError(f"unknown attribute type {kind}")


def _tx_rule_wcu(params: dict[str, Any]) -> float:
    """AWS's rule for a TransactWriteItems: 2 WCU per item per KB, each item rounded up on its own.

    A Put's item is in the request; an Update, Delete or ConditionCheck is counted as 1 KB (the counters,
    memory items and entries these benchmarks delete are all below 1 KB). Index writes are left out."""
    units = 0
    for action in params.get("TransactItems", []):
        (kind, body), = action.items()
        units += math.ceil(item_size(body["Item"]) / KB) if kind == "Put" else 1
    return 2.0 * units


class Meter:
    """Hooks on a boto3 session: every client made from it afterwards is counted."""

    def __init__(self) -> None:
        self.tally = Tally()
        self.enabled = True
        self._pending_rule: dict[int, float] = {}
        self._started: dict[int, float] = {}  # thread → when its API call under way started
        self.latency_s = 0.0  # held before each counted request is sent: a network's round trip (rounds rows)

    def attach(self, session: Any) -> None:
        self._count_connections()
        events = session.events
        events.register("before-parameter-build", self._before_parameter_build)
        events.register("before-call", self._before_call)
        events.register("before-send", self._before_send)
        events.register("after-call", self._after_call)
        events.register("after-call-error", self._after_call_error)

    def _count_connections(self) -> None:
        """Count the connections botocore's pools open (urllib3's, under botocore's pool classes)."""
        import urllib3.connectionpool

        pool_class = urllib3.connectionpool.HTTPConnectionPool
        new_conn = pool_class._new_conn
        meter = self

        def counted(pool: Any) -> Any:
            if meter.enabled:
                meter.tally.connections += 1
            return new_conn(pool)

        pool_class._new_conn = counted  # type: ignore[method-assign,assignment]

    @staticmethod
    def _parts(event_name: str) -> tuple[str, str]:
        _, service, operation = event_name.split(".", 2)
        return service, operation

    def _before_parameter_build(self, params: dict[str, Any], model: Any, context: dict[str, Any],
                                event_name: str, **_: Any) -> None:
        service, operation = self._parts(event_name)
        if service == "dynamodb" and operation in CAPACITY_OPERATIONS:
            params["ReturnConsumedCapacity"] = "INDEXES"
        if service == "dynamodb" and operation == "TransactWriteItems":
            context["bench_tx_rule_wcu"] = _tx_rule_wcu(params)

    def _before_call(self, event_name: str, **_: Any) -> None:
        if self.enabled:
            service, operation = self._parts(event_name)
            self.tally.calls[f"{service}.{operation}"] += 1
            self._started[threading.get_ident()] = time.perf_counter()

    def _ended(self) -> None:
        started = self._started.pop(threading.get_ident(), None)
        if self.enabled and started is not None:
            self.tally.spans.append((started, time.perf_counter()))

    def _after_call_error(self, **_: Any) -> None:
        self._ended()

    def _before_send(self, request: Any, event_name: str, **_: Any) -> None:
        if self.enabled:
            service, operation = self._parts(event_name)
            self.tally.sends[f"{service}.{operation}"] += 1
        if self.latency_s:  # uncounted requests too: requests sent at once overlap, as on a network
            time.sleep(self.latency_s)
        # returning None: botocore sends the request

    def _after_call(self, http_response: Any, parsed: dict[str, Any], model: Any, context: dict[str, Any],
                    event_name: str, **_: Any) -> None:
        self._ended()
        if not self.enabled:
            return
        service, operation = self._parts(event_name)
        error = (parsed or {}).get("Error")
        if error:
            self.tally.errors[f"{operation}:{error.get('Code')}"] += 1
            return
        if service != "dynamodb":
            return
        consumed = parsed.get("ConsumedCapacity")
        reports = consumed if isinstance(consumed, list) else [consumed] if consumed else []
        for report in reports:
            total = float(report.get("CapacityUnits", 0.0))
            indexes = [*(report.get("GlobalSecondaryIndexes") or {}).values(),
                       *(report.get("LocalSecondaryIndexes") or {}).values()]
            index = sum(float(i.get("CapacityUnits", 0.0)) for i in indexes)
            if operation in READ_OPERATIONS:
                self.tally.rcu += total
                self.tally.rcu_index += index
            else:
                self.tally.wcu += total
                self.tally.wcu_index += index
        if operation == "TransactWriteItems":
            self.tally.tx_wcu_aws_rule += float(context.get("bench_tx_rule_wcu", 0.0))
        if operation in ("Query", "Scan"):
            self.tally.query_pages += 1
            self.tally.query_items_read += int(parsed.get("ScannedCount", 0))

    @contextmanager
    def measuring(self) -> Iterator[Tally]:
        self.tally = Tally()
        self.enabled = True
        try:
            yield self.tally
        finally:
            self.tally = Tally()

    @contextmanager
    def paused(self) -> Iterator[None]:
        before, self.enabled = self.enabled, False
        try:
            yield
        finally:
            self.enabled = before


# -- rows ------------------------------------------------------------------------------------------------------
@dataclass
class Row:
    level: str  # "api" | "around" (the authorizer, usage) | "store"
    operation: str
    minimum: int
    minimum_text: str
    requests: dict[str, int]  # operation → HTTP requests (authorizer-cached path for api rows)
    rcu: float
    wcu: float
    rcu_index: float
    wcu_index: float
    tx_wcu_aws_rule: float
    query_pages: int
    query_items_read: int
    api_calls: int  # before-call: HTTP requests above this are botocore's retries
    errors: dict[str, int]
    outcome: str  # HTTP status or the exception raised
    with_authenticate: dict[str, int] | None = None  # api rows: the same call with the handler's key lookup
    with_authenticate_rcu: float | None = None
    note: str = ""
    rounds: int = 0  # requests waited for one after another (``rounds``); requests sent at once are one
    connections: int = 0  # connections the call opened
    min_rounds: int | None = None  # the rows that measure rounds: the fewest the data dependencies allow

    @property
    def total(self) -> int:
        return sum(self.requests.values())

    @property
    def meets(self) -> bool:
        return self.total <= self.minimum and (self.min_rounds is None or self.rounds <= self.min_rounds)


def _by_operation(tally: Tally) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, count in sorted(tally.sends.items()):
        service, operation = key.split(".", 1)
        out[operation if service == "dynamodb" else key] = count
    return out


def _row(level: str, operation: str, minimum: int, minimum_text: str, tally: Tally, outcome: str,
         note: str = "") -> Row:
    return Row(
        level=level, operation=operation, minimum=minimum, minimum_text=minimum_text,
        requests=_by_operation(tally), rcu=tally.rcu, wcu=tally.wcu, rcu_index=tally.rcu_index,
        wcu_index=tally.wcu_index, tx_wcu_aws_rule=tally.tx_wcu_aws_rule, query_pages=tally.query_pages,
        query_items_read=tally.query_items_read, api_calls=sum(tally.calls.values()), errors=dict(tally.errors),
        outcome=outcome, note=note, rounds=rounds(tally.spans), connections=tally.connections,
    )


# -- the run ---------------------------------------------------------------------------------------------------
class Bench:
    def __init__(self) -> None:
        import boto3
        import dynamodb_local
        from agentmem.bootstrap import Stores, build_container, set_container
        from agentmem.settings import Settings

        started = time.perf_counter()
        self.server = dynamodb_local.shared()
        self.server_start_s = time.perf_counter() - started
        os.environ.update(self.server.environment())
        self.settings = Settings(backend="aws", table=TABLE)
        self.session = boto3.Session()
        self.meter = Meter()
        self.meter.attach(self.session)
        self._stores_type = Stores
        self._build_container = build_container
        self._set_container = set_container
        with self.meter.paused():
            self.dynamo = self._dynamo(create=True)
            self.container = self._container(self.dynamo)
            set_container(self.container)
            account, self.secret = self.container.keys.create_account("bench")
            self.principal = self.container.keys.authenticate(f"Bearer {self.secret}")
        self.account_id = account.account_id
        self.rows: list[Row] = []
        self.layers: list[dict[str, Any]] = []

    # building blocks ------------------------------------------------------------------------------------------
    def _dynamo(self, *, create: bool = False) -> Any:
        from agentmem.adapters.aws.dynamodb import build_dynamodb_stores

        return build_dynamodb_stores(self.settings, self.session, create_missing_table=create)

    def _container(self, dynamo: Any, settings: Any = None) -> Any:
        stores = self._stores_type(
            accounts=dynamo.accounts, agents=dynamo.agents, memories=dynamo.memories, entries=dynamo.entries,
            usage=dynamo.usage, conversations=dynamo.conversations,
        )
        container = self._build_container(settings or self.settings, stores=stores)
        container.usage.flush_every_s = 10**9  # the flush is measured on a row of its own
        return container

    @contextmanager
    def cold_process(self) -> Iterator[Any]:
        """A second container with its own client and empty caches: another Lambda instance."""
        with self.meter.paused():
            other = self._container(self._dynamo())
        self._set_container(other)
        try:
            yield other
        finally:
            other.usage.flush_every_s = 10**9
            with self.meter.paused():
                other.usage.flush()
            self._set_container(self.container)

    def event(self, method: str, path: str, query: str = "", body: dict[str, Any] | None = None,
              headers: dict[str, str] | None = None, *, cached: bool) -> dict[str, Any]:
        from agentmem.local.events import build_rest_event

        all_headers = {"Authorization": f"Bearer {self.secret}", **(headers or {})}
        raw = None
        if body is not None:
            all_headers["Content-Type"] = "application/json"
            raw = json.dumps(body).encode("utf-8")
        event = build_rest_event(method, path, query, all_headers, raw)
        if cached:
            p = self.principal
            event["requestContext"]["authorizer"] = {
                "principalId": p.key_id, "account_id": p.account_id, "key_id": p.key_id, "kind": p.kind,
                "user_id": p.user_id or "",
            }
        return event

    def call(self, method: str, path: str, query: str = "", body: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None, *, cached: bool = True) -> tuple[int, Any]:
        from agentmem.api.app import lambda_handler
        from agentmem.local.server import LocalContext

        context: Any = LocalContext()  # the parts of a Lambda context the handler reads
        result = lambda_handler(self.event(method, path, query, body, headers, cached=cached), context)
        status = int(result["statusCode"])
        text = result.get("body") or ""
        return status, (json.loads(text) if text else None)

    def setup_call(self, *args: Any, **kwargs: Any) -> Any:
        with self.meter.paused():
            status, body = self.call(*args, **kwargs)
        if status >= 400:
            raise RuntimeError(f"set-up call {args} failed: {status} {body}")
        return body

    def api(self, operation: str, minimum: int, minimum_text: str, prepare: Callable[[str], Callable[[bool], Any]],
            note: str = "", min_rounds: int | None = None) -> Row:
        """One API row: ``prepare(tag)`` sets up (uncounted) and returns the call, made with ``cached``."""
        results: dict[bool, tuple[Tally, str]] = {}
        for cached in (True, False):
            act = prepare("c" if cached else "a")
            with self.meter.measuring() as tally:
                outcome = act(cached)
                results[cached] = (tally, str(outcome))
        tally, outcome = results[True]
        row = _row("api", operation, minimum, minimum_text, tally, outcome, note)
        row.min_rounds = min_rounds
        auth_tally, auth_outcome = results[False]
        if auth_outcome != outcome:
            raise RuntimeError(f"{operation}: {outcome} authorizer-cached but {auth_outcome} with authenticate")
        row.with_authenticate = _by_operation(auth_tally)
        row.with_authenticate_rcu = auth_tally.rcu
        self.rows.append(row)
        print(f"  api   {operation:<58} {row.total} requests, {row.rounds} rounds, "
              f"{row.connections} connections opened", flush=True)
        return row

    def store(self, operation: str, minimum: int, minimum_text: str, act: Callable[[], Any], note: str = "",
              level: str = "store") -> Row:
        with self.meter.measuring() as tally:
            try:
                act()
                outcome = "ok"
            except Exception as error:  # the conflict rows end in VersionConflictError: that is their answer
                outcome = type(error).__name__
        row = _row(level, operation, minimum, minimum_text, tally, outcome, note)
        self.rows.append(row)
        print(f"  {level:<6}{operation:<58} {row.total} requests", flush=True)
        return row

    # data -----------------------------------------------------------------------------------------------------
    def fill_layer(self, memory: str, entries: Sequence[Any], content_chars: int | None = None) -> None:
        """Create the memory and save ``entries`` into its account layer through the store (uncounted)."""
        from agentmem.domain.clock import iso, utcnow
        from agentmem.domain.models import EntryDraft, Layer

        self.setup_call("PUT", f"/v1/memories/{memory}")
        layer = Layer(self.account_id, memory, None)
        store = self.dynamo.entries
        with self.meter.paused():
            for entry in entries:
                content = entry.content if content_chars is None else _long_content(entry.content, content_chars)
                now = utcnow()
                store.save(
                    layer,
                    EntryDraft(name=entry.name, content=content, description=entry.description,
                               category=entry.category, importance=entry.importance, visibility="shared"),
                    expected_version=None, now=iso(now), keep_history_until=iso(now + dt.timedelta(days=30)),
                    layer_limit=500,
                )

    def fill_at(self, layer: Any, entries: Sequence[Any], *, pinned_every: int = 0) -> None:
        """Save ``entries`` into ``layer`` of a memory that exists, through the store (uncounted); every
        ``pinned_every``-th one a user_profile of importance 0.9 (it qualifies for the pinned block)."""
        from agentmem.domain.clock import iso, utcnow
        from agentmem.domain.models import EntryDraft

        with self.meter.paused():
            for n, entry in enumerate(entries):
                pinned = pinned_every and n % pinned_every == 0
                now = utcnow()
                self.dynamo.entries.save(
                    layer,
                    EntryDraft(name=entry.name, content=entry.content, description=entry.description,
                               category="user_profile" if pinned else entry.category,
                               importance=0.9 if pinned else min(entry.importance, 0.6), visibility="shared"),
                    expected_version=None, now=iso(now), keep_history_until=iso(now + dt.timedelta(days=30)),
                    layer_limit=500,
                )

    def layer_bytes(self, memory: str) -> dict[str, Any]:
        """The layer's entry items and their size by DynamoDB's rule (what a search query reads)."""
        from agentmem.adapters.aws.dynamodb import layout
        from agentmem.domain.models import Layer

        pk = layout.layer_pk(Layer(self.account_id, memory, None))
        sizes: list[int] = []
        content: list[int] = []
        with self.meter.paused():
            paginator = self.dynamo.client.get_paginator("query")
            pages = paginator.paginate(
                TableName=TABLE, KeyConditionExpression="PK = :pk AND begins_with(SK, :e)",
                ExpressionAttributeValues={":pk": {"S": pk}, ":e": {"S": layout.ENTRY_PREFIX}}, ConsistentRead=True,
            )
            for page in pages:
                for item in page["Items"]:
                    sizes.append(item_size(item))
                    content.append(len(item["content"]["S"]))
        total = sum(sizes)
        return {
            "memory": memory, "entries": len(sizes), "content_chars_mean": round(sum(content) / len(content)),
            "item_bytes_mean": round(total / len(sizes)), "bytes": total, "mb": round(total / MB, 3),
            "min_pages": max(1, math.ceil(total / MB)),
        }


def _long_content(seed_text: str, chars: int) -> str:
    """About ``chars`` characters of corpus text: the entry's own content, repeated with variations."""
    out = seed_text
    n = 0
    while len(out) < chars:
        n += 1
        out += f"\n\n({n}) " + seed_text
    return out[:chars].rstrip()


def run() -> dict[str, Any]:
    from agentmem.domain.clock import iso, utcnow
    from agentmem.domain.models import EntryDraft, Layer
    from corpus import Corpus

    started = time.perf_counter()
    print("starting DynamoDB Local ...", flush=True)
    bench = Bench()
    print(f"  DynamoDB Local on {bench.server.endpoint} in {bench.server_start_s:.1f} s", flush=True)
    corpus = Corpus()
    small = corpus.entries(1, 500)
    big = [corpus.entry(1, i) for i in range(500)]
    print("filling a 500-entry layer (~330 characters each) and a 500 × 6,000-character layer ...", flush=True)
    fill_started = time.perf_counter()
    bench.fill_layer("notes", small)
    bench.fill_layer("big", big, content_chars=6000)
    fill_s = time.perf_counter() - fill_started
    bench.layers = [bench.layer_bytes("notes"), bench.layer_bytes("big")]
    for info in bench.layers:
        print(f"  {info['memory']}: {info['entries']} entries, {info['mb']} MB ({info['item_bytes_mean']} B/item)")
    bench.setup_call("PUT", "/v1/memories/work")
    queries = [q for _, q in Corpus.queries(small, 40) if len(q.split()) == SEARCH_QUERY_WORDS]
    query = queries[0]

    def body(text: str = "Ask Dana before you book any flight above the usual budget.", **more: Any) -> dict[str, Any]:
        return {"content": text, **more}

    def entry_path(name: str, memory: str = "work") -> str:
        return f"/v1/memories/{memory}/entries/{name}"

    def create(name: str, memory: str = "work", query: str = "") -> None:
        bench.setup_call("PUT", entry_path(name, memory), query, body(description="Travel approvals"))

    print("API operations (lambda_handler, API Gateway REST events) ...", flush=True)

    # create memory
    def seen(memory: str, call: Callable[[bool], Any]) -> Callable[[bool], Any]:
        """The call, once this instance has just seen the memory (its record cached, as in a busy instance)."""
        bench.setup_call("GET", f"/v1/memories/{memory}")
        return call

    bench.api("create memory", 1, "1 conditional PutItem", lambda tag: (
        lambda cached: bench.call("PUT", f"/v1/memories/fresh-{tag}", cached=cached)[0]))

    # save (create)
    bench.api("save (create)", 1, "1 TransactWriteItems", lambda tag: seen("work", (
        lambda cached: bench.call("PUT", entry_path(f"create-{tag}"), body=body(description="Travel approvals"),
                                  cached=cached)[0])))

    def prep_update_version(tag: str) -> Callable[[bool], Any]:
        create(f"upd-v-{tag}")
        return lambda cached: bench.call("PUT", entry_path(f"upd-v-{tag}"), body=body("New text."),
                                         headers={"If-Match": '"1"'}, cached=cached)[0]

    bench.api("save (update, with version)", 1, "1 TransactWriteItems", prep_update_version)

    def prep_update_version_visibility(tag: str) -> Callable[[bool], Any]:
        create(f"upd-vv-{tag}")
        return lambda cached: bench.call("PUT", entry_path(f"upd-vv-{tag}"),
                                         body=body("New text.", visibility="shared"),
                                         headers={"If-Match": '"1"'}, cached=cached)[0]

    bench.api("save (update, with version, visibility given)", 1, "1 TransactWriteItems",
              prep_update_version_visibility)

    def prep_update_cold(tag: str) -> Callable[[bool], Any]:
        create(f"upd-cold-{tag}")

        def act(cached: bool) -> Any:
            with bench.cold_process():
                return bench.call("PUT", entry_path(f"upd-cold-{tag}"), body=body("New text."), cached=cached)[0]
        return act

    bench.api("save (update, no version), cold process", 1, "1 TransactWriteItems", prep_update_cold,
              note=NEW_INSTANCE + STORE_COLD)

    def prep_update_after_read(tag: str) -> Callable[[bool], Any]:
        name = f"upd-read-{tag}"
        with bench.cold_process():  # written by another instance; this one only reads it
            create(name)
        bench.setup_call("GET", entry_path(name))
        return lambda cached: bench.call("PUT", entry_path(name), body=body("New text."), cached=cached)[0]

    bench.api("save (update, no version), after a read", 1, "1 TransactWriteItems", prep_update_after_read)

    def prep_user_layer(tag: str) -> Callable[[bool], Any]:
        name = f"upd-user-{tag}"
        bench.setup_call("PUT", entry_path(name), "user=u1", body(description="Seat preference"))
        return lambda cached: bench.call("PUT", entry_path(name), "user=u1", body("Aisle, not window."),
                                         headers={"If-Match": '"1"'}, cached=cached)[0]

    bench.api("save (update, with version) in a user's layer", 1, "1 TransactWriteItems", prep_user_layer,
              note="GetItem: whether the user has their own copy yet (_copy_of_shared, a save without description)")

    def prep_conflict(tag: str) -> Callable[[bool], Any]:
        name = f"conflict-{tag}"
        create(name)
        bench.setup_call("PUT", entry_path(name), body=body("Second text."))  # now at version 2
        return lambda cached: bench.call("PUT", entry_path(name), body=body("Stale text."),
                                         headers={"If-Match": '"1"'}, cached=cached)[0]

    bench.api("save conflict (stale If-Match)", 1, "1 request (the failed write returns the item)",
              prep_conflict)

    def prep_conflict_other(tag: str) -> Callable[[bool], Any]:
        name = f"conflict-o-{tag}"
        create(name)
        with bench.cold_process():  # another instance moves it on: this one's cached copy is stale
            bench.setup_call("PUT", entry_path(name), body=body("Second text."))
        return lambda cached: bench.call("PUT", entry_path(name), body=body("Stale text."),
                                         headers={"If-Match": '"1"'}, cached=cached)[0]

    bench.api("save conflict (stale If-Match), another instance wrote", 1, "1 request", prep_conflict_other)

    def prep_read(tag: str) -> Callable[[bool], Any]:
        create(f"read-{tag}")
        return lambda cached: bench.call("GET", entry_path(f"read-{tag}"), cached=cached)[0]

    bench.api("read", 1, "1 GetItem", prep_read)

    def prep_read_old(tag: str) -> Callable[[bool], Any]:
        name = f"old-{tag}"
        create(name)
        bench.setup_call("PUT", entry_path(name), body=body("Second text."))
        return lambda cached: bench.call("GET", entry_path(name), "version=1", cached=cached)[0]

    bench.api("read old version", 1, "1 Query of the history rows", prep_read_old)

    bench.api("list page (50 of 500)", 1, "1 Query of the index", lambda tag: seen("notes", (
        lambda cached: bench.call("GET", "/v1/memories/notes/entries", "limit=50", cached=cached)[0])))

    def prep_history(tag: str) -> Callable[[bool], Any]:
        name = f"hist-{tag}"
        create(name)
        bench.setup_call("PUT", entry_path(name), body=body("Second text."))
        return lambda cached: bench.call("GET", entry_path(name) + "/history", cached=cached)[0]

    bench.api("history", 1, "1 Query", prep_history)

    def prep_delete(tag: str) -> Callable[[bool], Any]:
        create(f"del-{tag}")
        return lambda cached: bench.call("DELETE", entry_path(f"del-{tag}"), cached=cached)[0]

    bench.api("delete (entry written by this instance)", 1, "1 TransactWriteItems", prep_delete)

    def prep_delete_cold(tag: str) -> Callable[[bool], Any]:
        create(f"del-cold-{tag}")

        def act(cached: bool) -> Any:
            with bench.cold_process():
                return bench.call("DELETE", entry_path(f"del-cold-{tag}"), cached=cached)[0]
        return act

    bench.api("delete, cold process", 1, "1 TransactWriteItems", prep_delete_cold,
              note=NEW_INSTANCE + "GetItem of the entry (the transaction is conditioned on the exact stored item)")

    notes, big_info = bench.layers
    q = "q=" + quote_plus(query)
    bench.api(f"search, 500 entries ({notes['mb']:.2f} MB)", notes["min_pages"],
              f"{notes['min_pages']} Query page (1 per MB)", lambda tag: seen("notes", (
                  lambda cached: bench.call("GET", "/v1/memories/notes/search", q, cached=cached)[0])))
    bench.api(f"search, 500 × 6,000 chars ({big_info['mb']:.2f} MB)", big_info["min_pages"],
              f"{big_info['min_pages']} Query pages (1 per MB)", lambda tag: seen("big", (
                  lambda cached: bench.call("GET", "/v1/memories/big/search", q, cached=cached)[0])))
    bench.api("search as a user (own layer empty + 500-entry account layer)", 2,
              "2 Query pages (1 per layer, each < 1 MB)", lambda tag: seen("notes", (
                  lambda cached: bench.call("GET", "/v1/memories/notes/search", q + "&user=u9", cached=cached)[0])),
              note="BatchGetItem: which account names found the user has own copies of (shadowing, 100 keys each)")

    recall_rows(bench, query)
    context_rows(bench)

    print("around the API ...", flush=True)
    from agentmem.local.server import LocalContext

    from functions.authorizer.handler import lambda_handler as authorizer

    token_event = {
        "type": "TOKEN", "authorizationToken": f"Bearer {bench.secret}",
        "methodArn": "arn:aws:execute-api:us-east-1:123456789012:abc123/prod/GET/v1/memories",
    }
    keys = bench.container.keys  # the authorizer's function keeps no answers (API Gateway caches them)
    keys.cache_seconds, kept = 0, keys.cache_seconds
    keys.forget_key(bench.principal.key_id)
    bench.store("authorizer Lambda, a cache miss (once per key per 300 s)", 1, "1 GetItem",
                lambda: authorizer(token_event, cast(Any, LocalContext())), level="around")
    keys.cache_seconds = kept
    with bench.meter.paused():
        bench.container.usage.flush()  # what the rows above counted
    for _ in range(3):  # an agent's few seconds: reads, a save, a search
        bench.setup_call("GET", entry_path("read-c"))
        bench.setup_call("GET", "/v1/memories/notes/search", "q=" + quote_plus(query))
    bench.setup_call("PUT", entry_path("read-c"), body=body("Changed."))
    bench.store("usage flush (at most once per 5 s per instance; 3 operation kinds counted)", 1,
                "1 UpdateItem (one item per account and day)", bench.container.usage.flush, level="around",
                note="one UpdateItem per (account, day, operation, billable) counted since the last flush")

    print("store calls (the DynamoDB adapters called directly) ...", flush=True)
    from agentmem.adapters.aws.dynamodb.entries import DynamoEntryStore
    from agentmem.adapters.aws.dynamodb.memories import DynamoMemoryStore
    from agentmem.domain.models import MemoryRecord
    from agentmem.services.keys import hash_secret

    models = bench.dynamo.models
    layer = Layer(bench.account_id, "work", None)
    warm = DynamoEntryStore(models)

    def cold() -> DynamoEntryStore:
        return DynamoEntryStore(models)  # an empty snapshot cache: another process

    def now() -> str:
        return iso(utcnow())

    def save(store: DynamoEntryStore, name: str, *, version: int | None, description: str | None = "About it",
             text: str = "Some text.") -> Any:
        moment = utcnow()
        return store.save(layer, EntryDraft(name=name, content=text, description=description), expected_version=version,
                          now=iso(moment), keep_history_until=iso(moment + dt.timedelta(days=30)), layer_limit=500)

    def setup(fn: Callable[[], Any]) -> Any:
        with bench.meter.paused():
            return fn()

    bench.store("accounts.get_key_by_hash (authenticate)", 1, "1 GetItem",
                lambda: bench.dynamo.accounts.get_key_by_hash(hash_secret(bench.secret)))
    bench.store("memories.create_memory", 1, "1 PutItem",
                lambda: bench.dynamo.memories.create_memory(MemoryRecord(bench.account_id, "fresh-s", None, now())))
    bench.store("memories.get_memory(counts=False), not seen for 5 s", 1, "1 GetItem",
                lambda: DynamoMemoryStore(models).get_memory(bench.account_id, "work", now(), counts=False))
    bench.store("memories.get_memory(counts=False), seen within 5 s", 0, "none (the record kept)",
                lambda: bench.dynamo.memories.get_memory(bench.account_id, "work", now(), counts=False))
    bench.store("entries.save create", 1, "1 TransactWriteItems", lambda: save(warm, "s-create", version=None))
    setup(lambda: save(warm, "s-v", version=None))
    bench.store("entries.save version=N, cache warm", 1, "1 TransactWriteItems", lambda: save(warm, "s-v", version=1))
    setup(lambda: save(warm, "s-vc", version=None))
    bench.store("entries.save version=N, cold", 1, "1 TransactWriteItems", lambda: save(cold(), "s-vc", version=1),
                note=STORE_COLD)
    setup(lambda: save(warm, "s-n", version=None))
    bench.store("entries.save no version, cache warm", 1, "1 TransactWriteItems",
                lambda: save(warm, "s-n", version=None))
    setup(lambda: save(warm, "s-nc", version=None))
    bench.store("entries.save no version, cold, description given", 1, "1 TransactWriteItems",
                lambda: save(cold(), "s-nc", version=None),
                note="a new store tries a create: the failed condition returns the item (ALL_OLD), then the update")
    setup(lambda: save(warm, "s-nd", version=None))
    bench.store("entries.save no version, cold, no description", 1, "1 TransactWriteItems",
                lambda: save(cold(), "s-nd", version=None, description=None), note=STORE_COLD)
    setup(lambda: (save(warm, "s-x", version=None), save(warm, "s-x", version=None)))
    bench.store("entries.save stale version, cache current", 1, "1 request",
                lambda: save(warm, "s-x", version=1))
    other = cold()
    setup(lambda: (save(warm, "s-y", version=None), save(other, "s-y", version=1)))
    bench.store("entries.save stale version, cache stale", 1, "1 request", lambda: save(warm, "s-y", version=1))
    bench.store("entries.save stale version, cold", 1, "1 request", lambda: save(cold(), "s-y", version=1))
    bench.store("entries.get", 1, "1 GetItem", lambda: warm.get(layer, "s-y", now()))
    bench.store("entries.history", 1, "1 Query", lambda: warm.history(layer, "s-y", now()))
    notes_layer = Layer(bench.account_id, "notes", None)
    bench.store("entries.list_layer (50 of 500)", 1, "1 Query",
                lambda: warm.list_layer(notes_layer, now(), limit=50, cursor=None))
    setup(lambda: save(warm, "s-del", version=None))
    bench.store("entries.delete, cache warm", 1, "1 TransactWriteItems",
                lambda: warm.delete(layer, "s-del", expected_version=None, now=now(),
                                    keep_history_until=now(), updated_by="api"))
    setup(lambda: save(warm, "s-delc", version=None))
    bench.store("entries.delete, cold", 1, "1 TransactWriteItems",
                lambda: cold().delete(layer, "s-delc", expected_version=None, now=now(),
                                      keep_history_until=now(), updated_by="api"), note=STORE_COLD)
    words = query.split()
    bench.store(f"entries.search_candidates, 500 entries ({notes['mb']:.2f} MB)", notes["min_pages"],
                f"{notes['min_pages']} Query page", lambda: warm.search_candidates([notes_layer], words, query, now()))
    big_layer = Layer(bench.account_id, "big", None)
    bench.store(f"entries.search_candidates, 500 × 6,000 chars ({big_info['mb']:.2f} MB)", big_info["min_pages"],
                f"{big_info['min_pages']} Query pages",
                lambda: warm.search_candidates([big_layer], words, query, now()))
    names = [e.name for e in small]
    bench.store("entries.existing_names (500 names)", 5, "5 BatchGetItem (100 keys each)",
                lambda: warm.existing_names(Layer(bench.account_id, "notes", "u9"), names, now()),
                note="what a user's search sends to drop shadowed account entries")

    conversation_rows(bench, setup)

    with bench.meter.paused():
        calibration = calibrate(bench.dynamo.client)
    retried = sum(row.total - row.api_calls for row in bench.rows)
    other_services = sorted({k for row in bench.rows for k in row.requests if "." in k})
    adapters_built = bench.container.adapters is not None
    total_s = time.perf_counter() - started
    return {
        "generated_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "run_seconds": round(total_s, 1),
        "fill_seconds": round(fill_s, 1),
        "machine": machine(),
        "search_query": query,
        "layers": bench.layers,
        "other_services_called": other_services,
        "adapters_built": adapters_built,
        "retried_requests": retried,
        "capacity_calibration": calibration,
        "rows": [{**asdict(row), "total": row.total, "meets": row.meets} for row in bench.rows],
    }


def recall_rows(bench: Bench, query: str) -> None:
    """Recall with its semantic side on: OpenSearch (the fake of tests/integration/fake_opensearch.py, which
    records every request), filled from the table by the rebuild of ``agentmem reindex``; the hashing embedder,
    so no model call is counted (on AWS, Bedrock's one InvokeModel per query comes on top). The rows above are
    the same searches with no index configured (``"fallback": "not_configured"``)."""
    from agentmem.adapters.aws.reindex import TableRebuild
    from agentmem.domain.clock import iso, utcnow
    from fake_opensearch import serve

    print("recall with the semantic side (a fake OpenSearch, filled by agentmem reindex) ...", flush=True)
    with serve() as (fake, url):
        settings = bench.settings.model_copy(update={"opensearch_endpoint": url, "embedder": "hashing"})
        bench.setup_call("PUT", "/v1/agents/helper", body={"memories": [{"name": "notes"}]})
        for i in range(30):  # a journal of 60 messages to search
            bench.setup_call("POST", "/v1/agents/helper/conversations/chat-1/messages", body={"messages": [
                {"role": "user", "content": f"Question {i}: can I book the {i}th flight above budget?"},
                {"role": "assistant", "content": f"Answer {i}: ask Dana before booking flight {i}."},
            ]})
        with bench.meter.paused():
            from agentmem.adapters.aws.dynamodb import build_dynamodb_stores

            dynamo = build_dynamodb_stores(settings, bench.session)  # its journal searches the index too
            container = bench._container(dynamo, settings)
            index, embedder = container.search_index, container.embedder
            index.setup()
            for _ in TableRebuild(dynamo.client, TABLE, index, embedder, dynamo.conversations, iso(utcnow())).run():
                pass

        def counted(search: Callable[[bool], Any]) -> Callable[[bool], Any]:
            def act(cached: bool) -> Any:
                before = len(fake.requests)
                outcome = search(cached)
                for request in fake.requests[before:]:
                    name = f"opensearch.{request.path.split('?')[0].rsplit('/', 1)[-1]}"
                    bench.meter.tally.sends[name] += 1
                    bench.meter.tally.calls[name] += 1  # opensearch-py retries none of these
                return outcome
            return act

        def searching(path: str, extra: str = "") -> Callable[[str], Callable[[bool], Any]]:
            q = "q=" + quote_plus(query) + extra
            bench.setup_call("GET", "/v1/memories/notes")  # this instance has just seen the memory

            return lambda tag: counted(lambda cached: bench.call("GET", path, q, cached=cached)[0])

        bench._set_container(container)
        try:
            why = ("the keyword side reads the layer from the table "
                   "(read-your-writes, SPEC §6.2): 1 Query page per MB of each layer")
            bench.api("recall (hybrid), 500 entries", 2, "1 OpenSearch _search + 1 BatchGetItem",
                      searching("/v1/memories/notes/search"), note=why)
            bench.api("recall (hybrid) as a user (own layer empty + 500-entry account layer)", 2,
                      "1 OpenSearch _search + 1 BatchGetItem", searching("/v1/memories/notes/search", "&user=u9"),
                      note=why + "; the user's copies that shadow account entries come from the same Query")
            bench.api("recall (semantic), 500 entries", 2, "1 OpenSearch _search + 1 BatchGetItem",
                      searching("/v1/memories/notes/search", "&mode=semantic"),
                      note="")
            bench.api("journal search (hybrid), 60 messages", 2, "1 OpenSearch _search + 1 read of the hits",
                      searching("/v1/agents/helper/messages/search"),
                      note="GetItem: the agent's record; two _search (words and meaning, sent in parallel); "
                           "BatchGetItem: the conversations' records, then the hits' rows")
        finally:
            bench._set_container(bench.container)


CONTEXT_LAYER_ENTRIES = 500
CONTEXT_TURNS = 30  # of two messages: a journal of 60
ROUND_TRIP_S = 0.02  # the rounds rows hold each request this long before it is sent


def context_rows(bench: Bench) -> None:
    """A context build (``GET …/conversations/{key}/context``): a user's conversation of 60 messages with an agent
    whose own memory has 500 entries in the user's layer and 500 in the account's, and two attached account
    memories of 500 entries each (their user layers empty): six layers, ten entries pinned.

    *Rounds*: how many requests the build waited for one after another (``rounds``: the longest chain of
    requests each sent after the one before it ended; requests in flight together are one round)."""
    from agentmem.domain.agents import own_memory_name
    from agentmem.domain.conversations import ConversationRef
    from agentmem.domain.models import Layer
    from corpus import Corpus

    print("a context build (an agent's memory with two attached, 500 entries a layer, 60 messages) ...",
          flush=True)
    corpus = Corpus()
    for memory in ("ctx-a", "ctx-b"):
        bench.setup_call("PUT", f"/v1/memories/{memory}")
    bench.setup_call("PUT", "/v1/agents/ctx", body={"memories": [{"name": "ctx-a"}, {"name": "ctx-b"}]})
    own = own_memory_name("ctx")
    layers = [Layer(bench.account_id, own, "u1"), Layer(bench.account_id, own, None),
              Layer(bench.account_id, "ctx-a", None), Layer(bench.account_id, "ctx-b", None)]
    for n, layer in enumerate(layers):
        entries = [corpus.entry(n + 2, i) for i in range(CONTEXT_LAYER_ENTRIES)]
        bench.fill_at(layer, entries, pinned_every=50 if n < 2 else 0)
    path = "/v1/agents/ctx/conversations/chat-ctx"
    for i in range(CONTEXT_TURNS):
        bench.setup_call("POST", f"{path}/messages", "user=u1", body={"messages": [
            {"role": "user", "content": f"Question {i}: which fares does the travel policy allow for trip {i}?"},
            {"role": "assistant", "content": f"Answer {i}: economy, unless the flight is over six hours ({i})."},
        ]})

    settle_passes(bench, ConversationRef(bench.account_id, "ctx", "u1", "chat-ctx"))

    def warm(tag: str) -> Callable[[bool], Any]:
        # this instance has built it before, more than once: the first build sent its requests one round after
        # another, the second at once, opening the connections beyond those (an instance's client keeps them)
        bench.setup_call("GET", f"{path}/context", "user=u1")
        bench.setup_call("GET", f"{path}/context", "user=u1")
        return lambda cached: bench.call("GET", f"{path}/context", "user=u1", cached=cached)[0]

    def another_conversation(tag: str) -> Callable[[bool], Any]:
        bench.setup_call("GET", f"{path}/context", "user=u1")  # this instance built one of u1's conversations
        other = f"/v1/agents/ctx/conversations/chat-ctx-{tag}"
        bench.setup_call("POST", f"{other}/messages", "user=u1", body={"messages": [
            {"role": "user", "content": "Another question: can I bring a bike on the train?"}]})
        return lambda cached: bench.call("GET", f"{other}/context", "user=u1", cached=cached)[0]

    def another_user(tag: str) -> Callable[[bool], Any]:
        bench.setup_call("GET", f"{path}/context", "user=u1")  # this instance built u1's context, not this user's
        newcomer = f"/v1/agents/ctx/conversations/chat-new-{tag}"
        bench.setup_call("POST", f"{newcomer}/messages", f"user=new-{tag}", body={"messages": [
            {"role": "user", "content": "My first question: how do I book a train?"}]})
        return lambda cached: bench.call("GET", f"{newcomer}/context", f"user=new-{tag}", cached=cached)[0]

    def later_turn(tag: str) -> Callable[[bool], Any]:
        bench.setup_call("GET", f"{path}/context", "user=u1")  # this instance built it at the last turn ...

        def act(cached: bool) -> Any:
            memories = bench.container.memories.store
            for name in (own, "ctx-a", "ctx-b"):  # ... more than the 5 s it keeps memory records ago
                memories.cache.forget(bench.account_id, name)
            return bench.call("GET", f"{path}/context", "user=u1", cached=cached)[0]
        return act

    def cold(tag: str) -> Callable[[bool], Any]:
        def act(cached: bool) -> Any:
            with bench.cold_process():
                return bench.call("GET", f"{path}/context", "user=u1", cached=cached)[0]
        return act

    reads = ("at once: GetItem of the agent; the 6 layers' reads (one Query each: the user's layer of the agent's "
             "memory whole, and the account's layer it shadows whole too, its user's names being more than 16; "
             "the first 101 entries of each other layer); of the 2 attached layers too large to read whole, the "
             "counters (one BatchGetItem), the expired counts (a Query of the expiry index each) and the best pin "
             "items (a Query each); the conversation's record (GetItem) and tail (Query), the checkpoint and the "
             "pinned entries' content (one BatchGetItem), all sent ahead as the last build for this user and agent "
             "on this instance read them")
    first = ("GetItem of the agent; then at once: the 3 memories' records (one BatchGetItem, then kept 5 s), the "
             "6 layer reads of the memories the agent's record names, the conversation's record (GetItem) and tail "
             "(Query), the checkpoint (GetItem); then at once the rest of the shadowed layer and, of the layers not "
             "read whole, the counters (one BatchGetItem), expired counts and pin items; then the pinned entries' "
             "content")
    bench.meter.latency_s = ROUND_TRIP_S  # requests sent together overlap, whatever the machine's load
    bench.api("context build, warm instance", 15, "15 in 1 round: " + reads, warm, min_rounds=1)
    bench.api("context build, another conversation of the same user", 15, "15 in 1 round: the same reads, "
              "of that conversation", another_conversation, min_rounds=1)
    bench.api("context build, another user's first (warm instance)", 15, "15 in 1 round: the reads of the last "
              "build of the agent on this instance (u1's), this user's layers in place of u1's and u1's pinned "
              "entries left out", another_user, min_rounds=1)
    bench.api("context build, a later turn (memory records no longer kept)", 16,
              "16 in 1 round: the same, and the 3 memories' records (one BatchGetItem) beside them", later_turn,
              min_rounds=1)
    bench.api("context build, cold instance", 20, "20 in 4 rounds: the first build for this user and agent on "
              f"the instance: {first}", cold, min_rounds=4)
    bench.meter.latency_s = 0.0


def settle_passes(bench: Bench, ref: Any) -> None:
    """Wait for the conversation's summary pass (its appends crossed the threshold) to end, uncounted: its
    writes run in the background and would otherwise land in a measured row."""
    service = bench.container.conversations
    with bench.meter.paused():
        # the run under way for the record's mark, or (that one done) a pass after it: either way, its end
        record, jobs = service.store.get(ref), service.jobs()
        run = service.start_pass(record, reason="threshold") if record is not None and jobs else None
        if run is not None and hasattr(jobs, "wait"):
            jobs.wait(run, timeout=120)


def conversation_rows(bench: Bench, setup: Callable[[Callable[[], Any]], Any]) -> None:
    """The conversation store's append and reads: a warm process (its cache knows the conversation) and a
    cold one (a new store: another Lambda instance). The journal bucket is never touched by these."""
    from agentmem.adapters.aws.dynamodb import journal_bucket
    from agentmem.adapters.aws.dynamodb.conversations import DynamoConversationStore
    from agentmem.domain.clock import iso, utcnow
    from agentmem.domain.conversations import ConversationRef, MessageDraft

    warm = bench.dynamo.conversations
    journal = journal_bucket(bench.settings, bench.session)

    def cold() -> DynamoConversationStore:
        return DynamoConversationStore(bench.dynamo.models, journal)

    def ref(key: str) -> ConversationRef:
        return ConversationRef(bench.account_id, "support", "u1", key)

    def append(store: DynamoConversationStore, key: str, *drafts: MessageDraft) -> Any:
        return store.append(ref(key), list(drafts), now=iso(utcnow()), surface="agent", thresholds=(32_000, 40))

    turn = [MessageDraft("user", "Where is my refund?", client_id="c-1", tokens=6),
            MessageDraft("tool_call", "", tool_name="lookup_order", tool_call_id="t1", arguments={"order": 42}),
            MessageDraft("tool_result", "refunded", tool_call_id="t1", result={"status": "refunded"}),
            MessageDraft("assistant", "It was refunded yesterday.", tokens=7)]
    bench.store("conversations.append, a new conversation (4 messages)", 2, "GetItem + TransactWriteItems",
                lambda: append(warm, "new", *turn),
                note="the GetItem finds no record (this process has not seen the conversation)")
    setup(lambda: append(warm, "warm", MessageDraft("user", "Hello")))
    bench.store("conversations.append, cache warm (4 messages)", 1, "1 TransactWriteItems",
                lambda: append(warm, "warm", *turn))
    setup(lambda: append(warm, "cold", MessageDraft("user", "Hello")))
    bench.store("conversations.append, cold process", 2, "GetItem + TransactWriteItems",
                lambda: append(cold(), "cold", *turn), note="the record's revision is read first")
    other = cold()
    setup(lambda: (append(warm, "raced", MessageDraft("user", "Hello")),
                   append(other, "raced", MessageDraft("user", "Hi"))))
    bench.store("conversations.append, another instance appended since", 2, "2 TransactWriteItems",
                lambda: append(warm, "raced", MessageDraft("user", "Again")),
                note="the cancelled transaction returns the record (ALL_OLD); the second one lands")
    bench.store("conversations.append, a retry of a stored client id", 2, "TransactWriteItems + BatchGetItem",
                lambda: append(warm, "warm", turn[0]),
                note="the cancelled transaction names the stored seq; a BatchGetItem reads the message back")
    bench.store("conversations.tail (20), cold process", 2, "GetItem + Query, sent at once",
                lambda: cold().tail(ref("warm"), 20))
    bench.store("conversations.get", 1, "1 GetItem", lambda: warm.get(ref("warm")))


def calibrate(client: Any) -> list[dict[str, Any]]:
    """How DynamoDB Local charges writes, on a scratch table without indexes: its figure beside AWS's rule."""
    table = "agentmem-bench-calibration"
    client.create_table(
        TableName=table, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
    )

    def put(key: str, chars: int) -> dict[str, Any]:
        return {"Put": {"TableName": table, "Item": {"PK": {"S": key}, "v": {"S": "x" * chars}}}}

    cases = [[put("a", 10)], [put("b", 10), put("c", 10)], [put(k, 10) for k in "defg"], [put("h", 1500)],
             [put("i", 700), put("j", 700)], [put("k", 1100), put("l", 1100)], [put("m", 1100), put("n", 10)]]
    out = []
    try:
        for items in cases:
            sizes = [item_size(action["Put"]["Item"]) for action in items]
            shown = f"{len(sizes)} × {sizes[0]:,}" if len(set(sizes)) == 1 else " + ".join(f"{n:,}" for n in sizes)
            label = f"TransactWriteItems, Put{'s' if len(items) > 1 else ''} of {shown} bytes"
            response = client.transact_write_items(TransactItems=items, ReturnConsumedCapacity="TOTAL")
            local = sum(float(c["CapacityUnits"]) for c in response["ConsumedCapacity"])
            rule = _tx_rule_wcu({"TransactItems": items})
            out.append({"case": label, "dynamodb_local_wcu": local, "aws_rule_wcu": rule})
        item = {"PK": {"S": "k"}, "v": {"S": "x" * 1500}}
        response = client.put_item(TableName=table, Item=item, ReturnConsumedCapacity="TOTAL")
        out.append({"case": f"PutItem of {item_size(item):,} bytes", "aws_rule_wcu": 2.0,
                    "dynamodb_local_wcu": float(response["ConsumedCapacity"]["CapacityUnits"])})
    finally:
        client.delete_table(TableName=table)
    return out


def machine() -> dict[str, Any]:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "?"

    simulator = ROOT / "node_modules" / "amplify-dynamodb-simulator" / "package.json"
    try:
        simulator_version = json.loads(simulator.read_text())["version"]
    except (OSError, ValueError, KeyError):
        simulator_version = "?"
    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "boto3": version("boto3"),
        "botocore": version("botocore"),
        "pynamodb": version("pynamodb"),
        "aws_lambda_powertools": version("aws-lambda-powertools"),
        "dynamodb_local": f"DynamoDB Local from amplify-dynamodb-simulator {simulator_version}",
    }


# -- output ----------------------------------------------------------------------------------------------------
def _requests_text(requests: dict[str, int]) -> str:
    total = sum(requests.values())
    if not total:
        return "0"
    kinds = ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in requests.items())
    return f"**{total}**: {kinds}"


def _rounds_text(row: dict[str, Any]) -> str:
    """The rows that measure rounds: how many the requests took (requests in flight together are one)."""
    if row.get("min_rounds") is None:
        return ""
    rounds, opened = row["rounds"], row.get("connections", 0)
    return (f", in **{rounds} round{'' if rounds == 1 else 's'}**, "
            f"{opened} connection{'' if opened == 1 else 's'} opened")


def _units(value: float) -> str:
    return f"{value:g}"


def _meets(row: dict[str, Any]) -> str:
    return "✅" if row["meets"] else "❌"


def markdown(results: dict[str, Any]) -> str:
    info = results["machine"]
    rows = results["rows"]
    out: list[str] = []
    out.append(
        f"Run of {results['generated_at']} ({results['run_seconds']} s, of which {results['fill_seconds']} s "
        f"filling the layers): {info['dynamodb_local']}, Python {info['python']}, boto3 {info['boto3']}, "
        f"pynamodb {info['pynamodb']}, {info['platform']}. Search query: `{results['search_query']}`."
    )
    out.append("")
    out.append("**API operations** (`lambda_handler`, API Gateway REST events; requests to DynamoDB, by kind; "
               "RCU/WCU as DynamoDB Local reports them, authorizer-cached path)")
    out.append("")
    out.append("| operation | requests, authorizer-cached | with authenticate | RCU | WCU | physical minimum "
               "| meets? | why above the minimum |")
    out.append("|---|---|--:|--:|--:|---|:-:|---|")
    for row in rows:
        if row["level"] != "api":
            continue
        status = f" → {row['outcome']}" if row["outcome"] not in ("200", "201", "204") else ""
        out.append(
            f"| {row['operation']}{status} | {_requests_text(row['requests'])}{_rounds_text(row)} | "
            f"{sum((row['with_authenticate'] or {}).values())} | {_units(row['rcu'])} | {_units(row['wcu'])} | "
            f"{row['minimum_text']} | {_meets(row)} | {_why(row)} |"
        )
    out.append("")
    for level, title in (
        ("around", "**Around the API** (the API-key authorizer's Lambda; the usage meter's flush)"),
        ("store", "**Store calls** (the DynamoDB adapters called directly; *cold* = a new store, as in a new process)"),
    ):
        out.append(title)
        out.append("")
        out.append("| call | requests | RCU | WCU | physical minimum | meets? | why above the minimum |")
        out.append("|---|---|--:|--:|---|:-:|---|")
        for row in rows:
            if row["level"] != level:
                continue
            outcome = f" → {row['outcome']}" if row["outcome"] != "ok" else ""
            out.append(
                f"| {row['operation']}{outcome} | {_requests_text(row['requests'])} | {_units(row['rcu'])} | "
                f"{_units(row['wcu'])} | {row['minimum_text']} | {_meets(row)} | {_why(row)} |"
            )
        out.append("")
    out.append("**Search: Query pages per MB** (a consistent Query of the layer's entry items; DynamoDB stops a "
               "page at 1 MB read)")
    out.append("")
    out.append("| layer | entries | content, mean chars | item, mean bytes | layer MB | minimum pages | Query pages | "
               "items read | RCU |")
    out.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    searches = [r for r in rows if r["level"] == "store" and r["operation"].startswith("entries.search_candidates")]
    for info_layer, row in zip(results["layers"], searches, strict=True):
        out.append(
            f"| {info_layer['memory']} | {info_layer['entries']} | {info_layer['content_chars_mean']:,} | "
            f"{info_layer['item_bytes_mean']:,} | {info_layer['mb']:.2f} | {info_layer['min_pages']} | "
            f"{row['query_pages']} | {row['query_items_read']} | {_units(row['rcu'])} |"
        )
    out.append("")
    if results.get("capacity_calibration"):
        out.append("**How DynamoDB Local counts write capacity** (a scratch table without indexes)")
        out.append("")
        out.append("| request | DynamoDB Local WCU | AWS's rule |")
        out.append("|---|--:|--:|")
        for case in results["capacity_calibration"]:
            out.append(f"| {case['case']} | {_units(case['dynamodb_local_wcu'])} | {_units(case['aws_rule_wcu'])} |")
        out.append("")
    others = ", ".join(results["other_services_called"]) or "none"
    out.append(f"Other AWS services called by these operations: {others}; the container's S3 / Step Functions / "
               f"OpenSearch adapters built: {'yes' if results['adapters_built'] else 'no'}; requests retried by "
               f"botocore: {results.get('retried_requests', 0)}.")
    return "\n".join(out)


def _why(row: dict[str, Any]) -> str:
    """The reason a row needs more than its minimum (every such row must carry one)."""
    if row["meets"]:
        return ""
    return row.get("note") or "**no reason given**"


def print_tables(results: dict[str, Any]) -> None:
    rows = results["rows"]
    width = max(len(r["operation"]) + 10 for r in rows)
    print()
    print(f"{'operation':<{width}} {'requests (authorizer-cached / store)':<52} {'auth':>4} {'RCU':>6} {'WCU':>6}  "
          f"{'minimum':<9} meets")
    level = ""
    for row in rows:
        if row["level"] != level:
            level = row["level"]
            titles = {"api": "API operations (lambda_handler)", "around": "around the API", "store": "store calls"}
            print(f"-- {titles[level]} " + "-" * 40)
        kinds = ", ".join(f"{op}×{n}" for op, n in row["requests"].items()) or "-"
        auth = str(sum(row["with_authenticate"].values())) if row["with_authenticate"] is not None else ""
        name = row["operation"] + (f" → {row['outcome']}" if row["outcome"] not in ("ok", "200", "201", "204") else "")
        print(f"{name:<{width}} {row['total']:>2} {kinds:<49} {auth:>4} {row['rcu']:>6g} {row['wcu']:>6g}  "
              f"{row['minimum']:<9} {'yes' if row['meets'] else 'NO'}")
        if row.get("min_rounds") is not None:
            print(f"{'':<{width}}    rounds: {row['rounds']} (minimum {row['min_rounds']}), "
                  f"connections opened: {row.get('connections', 0)}")
        if not row["meets"]:
            print(f"{'':<{width}}    why: {_why(row)}")
    print()
    for layer in results["layers"]:
        print(f"layer {layer['memory']}: {layer['entries']} entries, {layer['bytes']:,} bytes ({layer['mb']} MB), "
              f"minimum {layer['min_pages']} page(s)")
    print(f"other services called: {results['other_services_called'] or 'none'}; "
          f"adapters built: {results['adapters_built']}")


def update_docs(text: str) -> bool:
    page = DOCS.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(page):
        print(f"{DOCS}: no {BEGIN} block; not changed", file=sys.stderr)
        return False
    DOCS.write_text(pattern.sub(lambda _: f"{BEGIN}\n{text}\n{END}", page))
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--markdown", type=Path, metavar="JSON", help="print the tables of saved results")
    parser.add_argument("--context", action="store_true",
                        help="only the context build's rows: print them, write nothing")
    parser.add_argument("--update-docs", action="store_true",
                        help=f"replace the generated block of {DOCS.relative_to(ROOT)} with this run's tables")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(args.markdown.read_text())))
        return 0
    if args.context:
        bench = Bench()
        context_rows(bench)
        for row in bench.rows:
            print(f"{row.operation}: {row.total} requests in {row.rounds} rounds (minimum {row.minimum} in "
                  f"{row.min_rounds}), {row.connections} connections opened, {row.requests}, "
                  f"with authenticate {row.with_authenticate}, RCU {row.rcu:g}")
        return 0
    results = run()
    print_tables(results)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {RESULTS.relative_to(ROOT)} ({results['run_seconds']} s)")
    if args.update_docs and update_docs(markdown(results)):
        print(f"updated {DOCS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
