"""Faults of the AWS services, injected under the real API handler: throttling and 5xx from DynamoDB, S3,
Step Functions, OpenSearch and Bedrock (SPEC §6.2, §12; docs/api.md "When AWS fails").

The API runs in process on the AWS backend: DynamoDB Local (a table of the test's own), moto's S3 and Step
Functions, the OpenSearch fake and a Bedrock embedder, each client configured as agentmem configures it. A
``before-send`` hook answers a service's requests with the error until the fault clears (the request never
leaves), and botocore's backoff is recorded instead of slept. For each fault: what the client sees (retried and
answered, a 503 ``unavailable`` with ``Retry-After``, or recall in keyword mode with its ``fallback``), and once
the fault clears, the store is as if the failed request had never been made.
"""

from __future__ import annotations

import io
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from unittest import mock

import boto3
import dynamodb_local
import fake_opensearch
import pytest
from agentmem.adapters.aws.bedrock_embedder import BedrockTitanEmbedder
from agentmem.adapters.aws.config import MAX_ATTEMPTS
from agentmem.adapters.aws.dynamodb import build_dynamodb_stores
from agentmem.adapters.aws.opensearch import OpenSearchIndex
from agentmem.adapters.aws.s3 import S3BlobStore
from agentmem.adapters.aws.stepfunctions import StepFunctionsJobs
from agentmem.api.app import lambda_handler
from agentmem.bootstrap import Adapters, Stores, build_container, set_container
from agentmem.local.events import build_rest_event, decode_lambda_response
from agentmem.settings import Settings
from botocore.awsrequest import AWSResponse
from botocore.credentials import Credentials
from moto_server import FakeLambdaContext, MotoServer

AGENT = "support"
DIMENSION = 256  # Titan V2's smallest
PASS_STATE_MACHINE = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


@dataclass
class Fault:
    """Answers the requests of one client with an error while ``failing`` (or for the next ``times``)."""

    xml: bool = False  # S3 answers errors in XML; the JSON protocols with ``__type``
    status: int = 400
    code: str = "ThrottlingException"
    failing: bool = False
    times: int = 0
    answered: int = 0
    operations: tuple[str, ...] = ()  # the operations (X-Amz-Target) it fails; all of them when empty
    body: Callable[[Any], bytes] | None = None  # the error's body, when not the plain one
    ok: Callable[[Any], bytes] | None = None  # the service's answer when not failing (None: the request goes)

    def set(self, status: int, code: str, *, times: int = 0) -> None:
        self.status, self.code, self.answered = status, code, 0
        self.failing, self.times = times == 0, times

    def clear(self) -> None:
        self.failing, self.times = False, 0

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else str(target)).rpartition(".")[2]
        if (self.operations and operation not in self.operations) or (not self.failing and self.times <= 0):
            return None if self.ok is None else _response(request.url, 200, self.ok(request),
                                                           {"Content-Type": "application/json"})
        self.times -= 1
        self.answered += 1
        if self.body is not None:
            body = self.body(request)
        elif self.xml:
            body = f"<Error><Code>{self.code}</Code><Message>injected fault</Message></Error>".encode()
        else:
            body = json.dumps({"__type": f"com.amazonaws#{self.code}", "message": "injected fault"}).encode()
        return _response(request.url, self.status, body, {"x-amzn-ErrorType": self.code, "x-amzn-RequestId": "fault",
                                                         "Content-Type": "application/xml" if self.xml
                                                         else "application/x-amz-json-1.0"})


def _response(url: str, status: int, body: bytes, headers: dict[str, str]) -> AWSResponse:
    class Raw(io.BytesIO):  # what botocore reads of urllib3's response: whole, or as a stream (InvokeModel's body)
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield body

    return AWSResponse(url, status, headers, Raw(body))  # type: ignore[arg-type]


def _titan_answer(request: Any) -> bytes:
    """Bedrock's InvokeModel answer for Titan V2: an embedding of the asked dimension (no request leaves)."""
    text = json.loads(request.body)["inputText"]
    seed = sum(text.encode()) % 97 + 1
    return json.dumps({"embedding": [((seed * (i + 1)) % 13 - 6) / 6 for i in range(DIMENSION)],
                       "inputTextTokenCount": len(text.split())}).encode()


@dataclass
class Stack:
    key: str
    dynamodb: Fault
    s3: Fault
    sfn: Fault
    bedrock: Fault
    search: fake_opensearch.FakeOpenSearch
    sfn_client: Any
    backoff: list[float] = field(default_factory=list)

    def call(self, method: str, path: str, body: Any = None, query: str = "",
             raw: bytes | None = None) -> tuple[int, dict[str, str], Any]:
        headers = {"Authorization": f"Bearer {self.key}"}
        data = raw
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        elif raw is not None:
            headers["Content-Type"] = "application/octet-stream"
        event = build_rest_event(method, path, query, headers, data)
        status, pairs, payload = decode_lambda_response(lambda_handler(event, FakeLambdaContext("agentmem-api")))
        parsed = json.loads(payload) if payload and payload[:1] in (b"{", b"[") else payload
        return status, {k.lower(): v for k, v in pairs}, parsed


@pytest.fixture
def stack(tmp_path: Path, moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stack]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    backoff: list[float] = []
    monkeypatch.setattr(time, "sleep", backoff.append)  # the backoff (botocore's, the adapters'), recorded
    table = f"agentmem-{uuid.uuid4().hex[:12]}"
    session = moto.session()
    machine = moto.client("stepfunctions").create_state_machine(
        name=f"passes-{table}", definition=PASS_STATE_MACHINE, roleArn="arn:aws:iam::123456789012:role/passes")
    # recall's semantic side gets a deadline no loaded machine misses: a fallback then says what the fault was
    # (index_unavailable), never that this machine was slow (timeout)
    settings = Settings(backend="aws", data_dir=tmp_path, table=table, state_machine_arn=machine["stateMachineArn"],
                        recall_deadline_ms=30_000)
    journal = S3BlobStore(f"{table}-journal", boto3_client=moto.client("s3"))
    journal.ensure_bucket()
    with mock.patch.dict(os.environ, dynamodb_local.shared().environment()):
        dynamodb = build_dynamodb_stores(settings, boto3.Session(), journal=journal)
    dynamodb_local.create_table(dynamodb.client, table)  # without its stream (dynamodb_local says why)
    workspaces = S3BlobStore(f"{table}-files", boto3_client=moto.client("s3"), boto3_session=session)
    workspaces.ensure_bucket()
    sfn_client = moto.client("stepfunctions")
    bedrock_client = boto3.session.Session(region_name="us-east-1", aws_access_key_id="testing",
                                           aws_secret_access_key="testing").client("bedrock-runtime")
    embedder = BedrockTitanEmbedder(dimension=DIMENSION, client=bedrock_client, sleep=backoff.append)
    faults = {"dynamodb": Fault(), "s3": Fault(xml=True), "sfn": Fault(), "bedrock": Fault(ok=_titan_answer)}
    for client, fault in ((dynamodb.client, faults["dynamodb"]), (workspaces.client, faults["s3"]),
                          (sfn_client, faults["sfn"]), (bedrock_client, faults["bedrock"])):
        cast(Any, client).meta.events.register("before-send", fault)  # its answer replaces the service's
    with fake_opensearch.serve() as (search, url):
        index = OpenSearchIndex.connect(url, dimension=DIMENSION, region="us-east-1",
                                        credentials=Credentials("AKIDEXAMPLE", "secret"))
        stores = Stores(accounts=dynamodb.accounts, agents=dynamodb.agents, memories=dynamodb.memories,
                        entries=dynamodb.entries, usage=dynamodb.usage, conversations=dynamodb.conversations)
        adapters = Adapters(embedder=embedder, journal=journal, workspaces=workspaces,
                            search_index=index, jobs=StepFunctionsJobs(settings.state_machine_arn or "",
                                                                       boto3_client=sfn_client))
        container = build_container(settings, stores=stores, adapters=adapters)
        _, key = container.keys.create_account("faults")
        set_container(container)
        try:
            world = Stack(key, faults["dynamodb"], faults["s3"], faults["sfn"], faults["bedrock"], search, sfn_client,
                          backoff)
            assert world.call("PUT", f"/v1/agents/{AGENT}", {"context": {"summary_messages": 4}})[0] in (200, 201)
            yield world
        finally:
            set_container(None)
            faults["dynamodb"].clear()
            dynamodb.client.delete_table(TableName=table)


# --- DynamoDB -----------------------------------------------------------------------------------------------

DYNAMODB_FAULTS = [
    pytest.param(400, "ProvisionedThroughputExceededException", id="provisioned-throughput"),
    pytest.param(400, "ThrottlingException", id="throttling"),
    pytest.param(500, "InternalServerError", id="internal-server-error"),
]
ENTRY = f"/v1/memories/agent:{AGENT}/entries/plan"
SAVE = {"content": "The customer is on the Team plan.", "description": "plan"}


@pytest.mark.parametrize(("status", "code"), DYNAMODB_FAULTS)
def test_a_dynamodb_fault_that_passes_is_retried_with_backoff_and_the_save_lands_once(
    stack: Stack, status: int, code: str
) -> None:
    # Given DynamoDB failing the next two requests
    stack.dynamodb.set(status, code, times=2)
    # When an entry is saved
    answer, _, body = stack.call("PUT", ENTRY, SAVE)
    # Then the client's retries, with backoff, got it through: one entry, at version 1, one history item
    assert answer == 201, body
    assert stack.dynamodb.answered == 2 and len(stack.backoff) >= 2 and all(d >= 0 for d in stack.backoff)
    assert stack.call("GET", ENTRY)[2]["version"] == 1
    assert [h["version"] for h in stack.call("GET", ENTRY + "/history")[2]["items"]] == [1]


@pytest.mark.parametrize(("status", "code"), DYNAMODB_FAULTS)
def test_a_dynamodb_fault_past_the_retries_is_a_503_with_retry_after_and_the_save_is_absent(
    stack: Stack, status: int, code: str
) -> None:
    # Given DynamoDB failing every request
    stack.dynamodb.set(status, code)
    # When an entry is saved
    answer, headers, body = stack.call("PUT", ENTRY, SAVE)
    # Then the answer is a 503 in the error shape, saying when to come back, after the client's retries
    assert answer == 503, body
    assert body["error"]["code"] == "unavailable" and "retry" in body["error"]["message"]
    assert int(headers["retry-after"]) >= 1
    assert stack.dynamodb.answered >= MAX_ATTEMPTS
    # And once the fault clears nothing of the save is there: no entry, no history, the layer empty
    stack.dynamodb.clear()
    assert stack.call("GET", ENTRY)[0] == 404
    assert stack.call("GET", f"/v1/memories/agent:{AGENT}/entries")[2]["items"] == []
    # And the same save then creates the entry at version 1
    assert stack.call("PUT", ENTRY, SAVE)[0] == 201
    assert [h["version"] for h in stack.call("GET", ENTRY + "/history")[2]["items"]] == [1]


def _cancelled_for_throughput(request: Any) -> bytes:
    """DynamoDB's answer to a transaction it cancelled for throughput: a reason per action."""
    actions = len(json.loads(request.body)["TransactItems"])
    reason = {"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity"}
    return json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                       "Message": "Transaction cancelled", "CancellationReasons": [reason] * actions}).encode()


@pytest.mark.parametrize("times", [2, 0], ids=["passes", "outlasts-the-retries"])
def test_a_transaction_cancelled_for_throughput_is_retried_then_a_503_never_a_conflict(
    stack: Stack, times: int
) -> None:
    # Given DynamoDB cancelling transactions for throughput (botocore does not retry a cancellation)
    stack.dynamodb.operations, stack.dynamodb.body = ("TransactWriteItems",), _cancelled_for_throughput
    stack.dynamodb.set(400, "TransactionCanceledException", times=times)
    # When an entry is saved
    answer, headers, body = stack.call("PUT", ENTRY, SAVE)
    if times:
        # Then, the throttling passing, the adapter's own retries save it once
        assert answer == 201, body
        assert stack.dynamodb.answered == times
        assert [h["version"] for h in stack.call("GET", ENTRY + "/history")[2]["items"]] == [1]
        return
    # Then, throttled past the retries, it is a 503 with Retry-After, never a 409 or a 500; nothing was written
    assert answer == 503, body
    assert body["error"]["code"] == "unavailable" and int(headers["retry-after"]) >= 1
    assert stack.dynamodb.answered > 1
    stack.dynamodb.clear()
    assert stack.call("GET", ENTRY)[0] == 404
    assert stack.call("PUT", ENTRY, SAVE)[0] == 201


@pytest.mark.parametrize(("status", "code"), DYNAMODB_FAULTS)
def test_an_append_failed_by_dynamodb_is_absent_and_the_journal_has_no_gap(
    stack: Stack, status: int, code: str
) -> None:
    messages = f"/v1/agents/{AGENT}/conversations/c1/messages"
    first = {"messages": [{"role": "user", "content": "Hello", "client_id": "m1"}]}
    assert stack.call("POST", messages, first)[0] == 201
    # Given DynamoDB failing every request
    stack.dynamodb.set(status, code)
    # When two more messages are appended
    second = {"messages": [{"role": "assistant", "content": "Hi", "client_id": "m2"},
                           {"role": "user", "content": "Which plan am I on?", "client_id": "m3"}]}
    answer, headers, body = stack.call("POST", messages, second)
    assert answer == 503 and body["error"]["code"] == "unavailable" and "retry-after" in headers
    # Then, the fault cleared, the journal holds only the first message
    stack.dynamodb.clear()
    assert [m["client_id"] for m in stack.call("GET", messages)[2]["items"]] == ["m1"]
    # And the client's retry of the same append lands once, numbered on without a gap
    assert stack.call("POST", messages, second)[0] == 201
    assert stack.call("POST", messages, second)[2]["added"] == 0  # and a second retry adds nothing
    rows = stack.call("GET", messages)[2]["items"]
    assert [(m["seq"], m["client_id"]) for m in rows] == [(1, "m1"), (2, "m2"), (3, "m3")]


# --- S3 -----------------------------------------------------------------------------------------------------

S3_FAULTS = [pytest.param(503, "SlowDown", id="slow-down"), pytest.param(500, "InternalError", id="internal-error")]
FILE = f"/v1/agents/{AGENT}/conversations/c1/workspace/files/report.md"


@pytest.mark.parametrize(("status", "code"), S3_FAULTS)
def test_an_s3_fault_that_passes_is_retried_and_the_file_is_written_whole(stack: Stack, status: int, code: str) -> None:
    stack.s3.set(status, code, times=2)
    assert stack.call("PUT", FILE, raw=b"# Report\n" * 100)[0] in (200, 201)
    assert stack.s3.answered == 2 and len(stack.backoff) >= 2
    assert stack.call("GET", FILE)[2] == b"# Report\n" * 100


@pytest.mark.parametrize(("status", "code"), S3_FAULTS)
def test_an_s3_fault_past_the_retries_is_a_503_and_the_file_is_absent(stack: Stack, status: int, code: str) -> None:
    # Given S3 failing every request
    stack.s3.set(status, code)
    # When a workspace file is written
    answer, headers, body = stack.call("PUT", FILE, raw=b"# Report\n")
    # Then the answer is a 503 with Retry-After
    assert answer == 503, body
    assert body["error"]["code"] == "unavailable" and int(headers["retry-after"]) >= 1
    # And once S3 answers again, there is no such file, and writing it works
    stack.s3.clear()
    assert stack.call("GET", FILE)[0] == 404
    assert stack.call("GET", f"/v1/agents/{AGENT}/conversations/c1/workspace/files")[2]["items"] == []
    assert stack.call("PUT", FILE, raw=b"# Report\n")[0] in (200, 201)


# --- Step Functions -----------------------------------------------------------------------------------------


def _executions(stack: Stack) -> int:
    arn = stack.sfn_client.list_state_machines()["stateMachines"]
    return sum(len(stack.sfn_client.list_executions(stateMachineArn=m["stateMachineArn"])["executions"])
               for m in arn)


def test_a_throttled_state_machine_never_fails_an_append_and_the_pass_starts_once_it_clears(stack: Stack) -> None:
    messages = f"/v1/agents/{AGENT}/conversations/c2/messages"
    rows = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"line {i}", "client_id": f"r{i}"}
            for i in range(6)]
    before = _executions(stack)
    # Given Step Functions throttling every StartExecution
    stack.sfn.set(400, "ThrottlingException")
    # When an append crosses the summary threshold
    answer, _, body = stack.call("POST", messages, {"messages": rows})
    # Then the append is stored and answered; the conversation stays due for the next pass
    assert answer == 201, body
    assert body["added"] == 6 and body["conversation"]["summary_due"] is True
    assert stack.sfn.answered >= MAX_ATTEMPTS
    # And a pass asked for now is a 503 with Retry-After
    answer, headers, body = stack.call("POST", f"/v1/agents/{AGENT}/conversations/c2/compact")
    assert answer == 503 and body["error"]["code"] == "unavailable" and int(headers["retry-after"]) >= 1
    stack.sfn.clear()
    assert _executions(stack) == before
    # And once it clears, the pass starts, and the journal is whole
    assert stack.call("POST", f"/v1/agents/{AGENT}/conversations/c2/compact")[0] == 202
    assert _executions(stack) == before + 1
    assert [m["client_id"] for m in stack.call("GET", messages)[2]["items"]] == [r["client_id"] for r in rows]


# --- OpenSearch and Bedrock: recall falls back to keyword --------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 503])
def test_recall_falls_back_to_keyword_while_opensearch_fails_and_is_hybrid_again_after(
    stack: Stack, status: int
) -> None:
    assert stack.call("PUT", ENTRY, SAVE)[0] == 201
    search = f"/v1/agents/{AGENT}/search"
    # Given the OpenSearch collection answering every request with the error
    stack.search.fail_with = status
    # When the agent recalls
    answer, _, body = stack.call("GET", search, query="q=team+plan")
    # Then recall answers from the keyword side, and says why
    assert answer == 200, body
    assert (body["mode"], body["fallback"]) == ("keyword", "index_unavailable")
    assert [hit["name"] for hit in body["items"]] == ["plan"]
    # And once it answers again, recall is hybrid with the same entry
    stack.search.fail_with = None
    answer, _, body = stack.call("GET", search, query="q=team+plan")
    assert (answer, body["mode"], body.get("fallback")) == (200, "hybrid", None), body
    assert [hit["name"] for hit in body["items"]] == ["plan"]


@pytest.mark.parametrize(("status", "code"), [(429, "ThrottlingException"), (503, "ServiceUnavailableException"),
                                              (500, "InternalServerException")])
def test_recall_falls_back_to_keyword_while_bedrock_cannot_embed_the_query(
    stack: Stack, status: int, code: str
) -> None:
    assert stack.call("PUT", ENTRY, SAVE)[0] == 201
    stack.bedrock.set(status, code)
    answer, _, body = stack.call("GET", f"/v1/agents/{AGENT}/search", query="q=team+plan")
    assert answer == 200, body
    assert (body["mode"], body["fallback"]) == ("keyword", "index_unavailable")
    assert [hit["name"] for hit in body["items"]] == ["plan"]
    stack.bedrock.clear()
