"""Each function as Lambda would start it: its environment read from the synthesised template, its settings
loaded the way the function loads them (``load_settings``: an unknown AGENTMEM_* variable stops it), its
container built by the composition root, and the adapters it gets checked against what its role may use.

Drift between the stack and the code fails here: a variable the stack sets that no setting reads, a model
the code would call that IAM does not grant, a grant no adapter uses. Nothing reaches the network: clients
are only made, and any connection attempt fails the test.
"""

from __future__ import annotations

import json
import os
import re
import socket
from dataclasses import dataclass
from typing import Any

import pytest
from agentmem.adapters.aws.bedrock import BedrockSummariser
from agentmem.adapters.aws.bedrock_embedder import BedrockTitanEmbedder
from agentmem.adapters.aws.cloudfront_links import CloudFrontLinkSigner
from agentmem.adapters.aws.dynamodb.accounts import DynamoAccountStore
from agentmem.adapters.aws.dynamodb.agents import DynamoAgentStore
from agentmem.adapters.aws.dynamodb.conversations import DynamoConversationStore
from agentmem.adapters.aws.dynamodb.entries import DynamoEntryStore
from agentmem.adapters.aws.dynamodb.memories import DynamoMemoryStore
from agentmem.adapters.aws.dynamodb.usage import DynamoUsageStore
from agentmem.adapters.aws.opensearch import OpenSearchIndex
from agentmem.adapters.aws.s3 import S3BlobStore
from agentmem.adapters.aws.stepfunctions import StepFunctionsJobs
from agentmem.bootstrap import Container, build_container
from agentmem.domain.summary import ExtractiveSummariser
from agentmem.settings import load_settings

REGION = "eu-west-1"  # what Lambda puts in AWS_REGION
# what the template's references (imports from the stateful stack, the state machine's ARN) stand for here
RESOLVED = {
    "AGENTMEM_TABLE": "agentmem-table-from-the-stack",
    "AGENTMEM_JOURNAL_BUCKET": "agentmem-journal-from-the-stack",
    "AGENTMEM_WORKSPACE_BUCKET": "agentmem-workspace-from-the-stack",
    "AGENTMEM_OPENSEARCH_ENDPOINT": f"https://0123456789abcdef.{REGION}.aoss.amazonaws.com",
    "AGENTMEM_STATE_MACHINE_ARN": f"arn:aws:states:{REGION}:123456789012:stateMachine:agentmem-summary",
    "AGENTMEM_DOWNLOAD_DOMAIN": "d111111abcdef8.cloudfront.net",
    "AGENTMEM_DOWNLOAD_KEY_PAIR_ID": "K2JCJMDEHXQW5F",
    "AGENTMEM_DOWNLOAD_KEY_SECRET_ARN": f"arn:aws:secretsmanager:{REGION}:123456789012:secret:agentmem-link-key-AbCdEf",
}
EMBEDDING_MODEL = "amazon.titan-embed-text-v2:0"
SUMMARY_MODEL = "amazon.nova-micro-v1:0"


@dataclass(frozen=True)
class Expected:
    """What a function's container holds besides its DynamoDB stores and S3 buckets (every one has those)."""

    jobs: type | None  # where it starts summary passes; None: it starts none
    index: type | None  # the search index it queries or writes
    embedder: type | None
    summariser: type
    download_links: bool = False  # it makes workspace download links: CloudFront signed URLs, with the key's secret


EXPECTED = {
    # the API starts passes on the state machine, recalls (the index, a query embedded), summarises nothing, and
    # makes the workspace links
    "api": Expected(StepFunctionsJobs, OpenSearchIndex, BedrockTitanEmbedder, ExtractiveSummariser, True),
    # the agent tools recall like the API, and start no pass
    "mcp": Expected(None, OpenSearchIndex, BedrockTitanEmbedder, ExtractiveSummariser),
    "authorizer": Expected(None, None, None, ExtractiveSummariser),
    "indexer": Expected(None, OpenSearchIndex, BedrockTitanEmbedder, ExtractiveSummariser),
    # the state machine's task writes the summaries, with the model on Bedrock
    "summarise": Expected(None, None, None, BedrockSummariser),
    "compaction": Expected(StepFunctionsJobs, None, None, ExtractiveSummariser),
}
# a small install (agentmem:searchCollection=false): no function has an index or embeds; recall answers in keyword
# mode, saying "not_configured" (tests/contract/test_contract_recall.py, on the AWS backend without an index)
EXPECTED_SMALL = {
    name: Expected(expected.jobs, None, None, expected.summariser, expected.download_links)
    for name, expected in EXPECTED.items()
}
INSTALLS = {"default": ("synthesis", EXPECTED), "small install": ("small_synthesis", EXPECTED_SMALL)}


def _function(synthesis: Any, name: str) -> dict[str, Any]:
    function: dict[str, Any] = synthesis.function(name)
    return function


def _environment(function: dict[str, Any]) -> dict[str, str]:
    """The function's variables; a reference (a token in the template) takes the value it stands for here."""
    env = {}
    for key, value in function["Properties"]["Environment"]["Variables"].items():
        if not isinstance(value, str):
            assert key in RESOLVED, f"{key} is a reference in the template: give it a stand-in in RESOLVED"
            value = RESOLVED[key]
        env[key] = value
    return env


def _role_statements(synthesis: Any, function: dict[str, Any]) -> list[dict[str, Any]]:
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        statement
        for policy in synthesis.resources("Stateless", "AWS::IAM::Policy").values()
        if any(r.get("Ref") == role for r in policy["Properties"].get("Roles", []))
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _granted_secrets(synthesis: Any, function: dict[str, Any]) -> list[Any]:
    """What the function's role may read of Secrets Manager: (actions, resource) of each statement."""
    found = []
    for statement in _role_statements(synthesis, function):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if any(a.startswith("secretsmanager:") for a in actions):
            found.append((actions, statement["Resource"]))
    return found


def _granted_models(synthesis: Any, function: dict[str, Any]) -> set[str]:
    """The Bedrock models (or inference profiles) the function's role may invoke."""
    models: set[str] = set()
    for statement in _role_statements(synthesis, function):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if not any(a.startswith("bedrock:") for a in actions):
            continue
        assert actions == ["bedrock:InvokeModel"], actions  # Converse and InvokeModel need this one action
        found = re.findall(r"(?:foundation-model|inference-profile)/([^\"\]]+)", json.dumps(statement["Resource"]))
        assert found, statement
        models |= set(found)
    return models


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"building the container tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def _start(env: dict[str, str], name: str, monkeypatch: pytest.MonkeyPatch) -> Container:
    """The function's process: only its own AGENTMEM_* variables, and what Lambda sets itself."""
    for key in list(os.environ):
        if key.startswith(("AGENTMEM_", "AWS_")):
            monkeypatch.delenv(key)
    lambda_env = {
        "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION, "AWS_LAMBDA_FUNCTION_NAME": f"agentmem-{name}",
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
    }
    for key, value in {**env, **lambda_env}.items():
        monkeypatch.setenv(key, value)
    return build_container(load_settings())


@pytest.mark.parametrize("install", list(INSTALLS))
@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_function_builds_the_adapters_its_environment_and_role_promise(
    request: pytest.FixtureRequest, install: str, name: str, monkeypatch: pytest.MonkeyPatch, no_network: None
) -> None:
    # Given the function's environment as the synthesised template sets it (by default, or as a small install)
    fixture, expectations = INSTALLS[install]
    synthesis = request.getfixturevalue(fixture)
    function = _function(synthesis, name)
    env = _environment(function)
    # When its process starts and builds its container (an unknown AGENTMEM_* variable would stop it here)
    container = _start(env, name, monkeypatch)
    adapters = container.require_adapters()
    expected = expectations[name]
    # Then its records are in the stack's DynamoDB table, in this region
    stores = container.stores
    for store, kind in ((stores.accounts, DynamoAccountStore), (stores.agents, DynamoAgentStore),
                        (stores.memories, DynamoMemoryStore), (stores.entries, DynamoEntryStore),
                        (stores.usage, DynamoUsageStore), (stores.conversations, DynamoConversationStore)):
        assert isinstance(store, kind), (name, store)
        assert store.models.table == RESOLVED["AGENTMEM_TABLE"]
    assert stores.entries.models.connection.client.meta.region_name == REGION
    if name == "indexer":  # with a collection or without, it counts TTL removals out of the layer counters
        assert callable(getattr(stores.entries, "on_ttl_removed", None))
    # and its files in the stack's S3 buckets
    assert isinstance(adapters.journal, S3BlobStore) and isinstance(adapters.workspaces, S3BlobStore)
    assert adapters.journal.bucket == RESOLVED["AGENTMEM_JOURNAL_BUCKET"]
    assert adapters.workspaces.bucket == RESOLVED["AGENTMEM_WORKSPACE_BUCKET"]
    assert adapters.journal.client.meta.region_name == REGION
    # and summary passes start on the stack's state machine, or not at all (never in a Lambda's own process)
    jobs = container.jobs()
    if expected.jobs is None:
        assert jobs is None, (name, jobs)
    else:
        assert isinstance(jobs, StepFunctionsJobs), (name, jobs)
        assert jobs.state_machine_arn == RESOLVED["AGENTMEM_STATE_MACHINE_ARN"]
    # and recall has the collection and Titan V2 at the stack's dimension where the role reaches them
    index, embedder = container.search_index, container.embedder
    assert type(index) is expected.index if expected.index else index is None, (name, index)
    assert type(embedder) is expected.embedder if expected.embedder else embedder is None, (name, embedder)
    if isinstance(embedder, BedrockTitanEmbedder):
        assert (embedder.model_id, embedder.dimension) == (env["AGENTMEM_EMBEDDING_MODEL_ID"], 512)
        assert embedder.model_id == EMBEDDING_MODEL
        assert embedder.client.meta.region_name == REGION
        assert isinstance(index, OpenSearchIndex) and index.dimension == embedder.dimension
    # and the summariser is the one it should be, Bedrock's with the configured model where it summarises
    summariser = container.summariser()
    assert type(summariser) is expected.summariser, (name, summariser)
    if isinstance(summariser, BedrockSummariser):
        assert summariser.model_id == env["AGENTMEM_SUMMARY_MODEL_ID"] == SUMMARY_MODEL
        assert summariser.client.meta.region_name == REGION
    # and its download links are CloudFront signed URLs on the stack's distribution where it makes links (the API:
    # the key pair id of the key group, the key read from the stack's secret on the first link, not at start), and
    # no other function can read that secret
    downloads = adapters.workspaces.downloads
    if expected.download_links:
        assert isinstance(downloads, CloudFrontLinkSigner), (name, downloads)
        assert (downloads.domain, downloads.key_pair_id) == (
            RESOLVED["AGENTMEM_DOWNLOAD_DOMAIN"], RESOLVED["AGENTMEM_DOWNLOAD_KEY_PAIR_ID"])
        assert not downloads.key_loaded  # nothing read yet: the cold start does not pay for the secret
        secret = function["Properties"]["Environment"]["Variables"]["AGENTMEM_DOWNLOAD_KEY_SECRET_ARN"]
        assert _granted_secrets(synthesis, function) == [(["secretsmanager:GetSecretValue"], secret)], name
        link = adapters.workspaces.signed_url("w/a/f/q3.csv", method="PUT", expires_in_s=60, size=3)
        assert "X-Amz-Signature=" in link  # upload links stay S3 presigned, their size signed
    else:
        assert downloads is None, (name, downloads)
        assert _granted_secrets(synthesis, function) == [], name
    # And its role may invoke exactly the models its adapters call, which are the model ids its environment
    # names, and no other
    called = {m.model_id for m in (embedder, summariser) if isinstance(m, BedrockTitanEmbedder | BedrockSummariser)}
    named = {value for key, value in env.items() if key.startswith("AGENTMEM_") and key.endswith("_MODEL_ID")}
    assert _granted_models(synthesis, function) == called == named, name


def test_the_stack_sets_only_variables_the_settings_read(synthesis: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given every function's environment, Then each loads as settings with nothing left over (load_settings
    # names any unknown AGENTMEM_* variable), and each model id the stack sets is one a setting carries
    for name in EXPECTED:
        env = _environment(_function(synthesis, name))
        container = _start(env, name, monkeypatch)
        settings = container.settings
        assert settings.backend == "aws"
        for key, value in env.items():
            if key.startswith("AGENTMEM_"):
                field = key.removeprefix("AGENTMEM_").lower()
                assert str(getattr(settings, field)) == value, (name, key)
