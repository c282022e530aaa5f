"""The DynamoDB adapters: accounts, agents, memories, entries, usage and conversations in one table (see
``table`` and ``layout``).

``build_dynamodb_stores(settings, session=None)`` makes them: one boto3 client (``client_config()``: retries
with backoff, timeouts; ``CONNECTIONS`` kept open; the endpoint from ``AWS_ENDPOINT_URL_DYNAMODB`` when set),
pynamodb models bound to ``settings.table``. The conversation store also gets the journal bucket
(``settings.journal_bucket``) and, when ``settings.opensearch_endpoint`` is set, the search index for journal
search; both are made on first use (``adapters/aws/lazy``), so a cold start that only appends or reads the hot
tail makes neither.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import boto3

from ....ports.blobs import BlobStore
from ....ports.search_index import SearchIndex
from ....settings import Settings
from ..config import client_config
from ..lazy import LazyBlobStore, LazySearchIndex
from .accounts import DynamoAccountStore
from .agents import DynamoAgentStore
from .conversations import DynamoConversationStore
from .entries import DynamoEntryStore
from .memories import DynamoMemoryStore
from .models import BoundModels, bind_models
from .table import create_table
from .usage import DynamoUsageStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DEFAULT_REGION = "us-east-1"
# The connections the client keeps open: more than one call can have in flight (the entry store's 16 I/O threads,
# the memory and conversation stores' 8 each, the calling threads of a local server), so that a warm instance
# sends every request on a connection already open. botocore keeps 10: a context build, which sends 15 requests
# at once, opened and dropped 5 connections each time, a TCP and TLS handshake each on AWS.
CONNECTIONS = 64

__all__ = ["DynamoDBStores", "build_dynamodb_stores", "create_table"]


@dataclass(frozen=True)
class DynamoDBStores:
    accounts: DynamoAccountStore
    agents: DynamoAgentStore
    memories: DynamoMemoryStore
    entries: DynamoEntryStore
    usage: DynamoUsageStore
    conversations: DynamoConversationStore
    models: BoundModels
    client: DynamoDBClient


def dynamodb_client(session: boto3.Session | None = None) -> DynamoDBClient:
    """A DynamoDB client with agentmem's client configuration (region: the session's, else ``AWS_REGION``,
    else us-east-1 — Lambda sets both ``AWS_REGION`` and ``AWS_DEFAULT_REGION``)."""
    session = session or boto3.Session()
    region = session.region_name or os.environ.get("AWS_REGION") or DEFAULT_REGION
    return session.client("dynamodb", region_name=region, config=client_config(max_pool_connections=CONNECTIONS))


def build_dynamodb_stores(
    settings: Settings, session: boto3.Session | None = None, *, create_missing_table: bool = False,
    journal: BlobStore | None = None, index: SearchIndex | None = None,
) -> DynamoDBStores:
    """The stores on the table ``settings.table``; ``create_missing_table`` for local AWS mode.

    ``journal`` and ``index`` replace the conversation store's journal bucket and search index (tests)."""
    session = session or boto3.Session()
    client = dynamodb_client(session)
    if create_missing_table:
        create_table(settings, client)
    models = bind_models(settings.table, client.meta.region_name, client)
    memories = DynamoMemoryStore(models)
    return DynamoDBStores(
        accounts=DynamoAccountStore(models),
        agents=DynamoAgentStore(models, memories),
        memories=memories,
        entries=DynamoEntryStore(models),
        usage=DynamoUsageStore(models),
        conversations=DynamoConversationStore(
            models, journal or journal_bucket(settings, session),
            index if index is not None else journal_search_index(settings, session),
        ),
        models=models,
        client=client,
    )


def journal_bucket(settings: Settings, session: boto3.Session) -> BlobStore:
    """The journal bucket ``settings.journal_bucket`` on S3, its client made on first use."""

    def make() -> BlobStore:
        from ..s3 import S3BlobStore

        return S3BlobStore(settings.journal_bucket, boto3_session=session)

    return LazyBlobStore(make)


def journal_search_index(settings: Settings, session: boto3.Session) -> SearchIndex | None:
    """The OpenSearch index journal search queries (None without ``settings.opensearch_endpoint``: the store
    then searches the hot rows), connected on first use. Its dimension is the indexer's embedder's."""
    endpoint = settings.opensearch_endpoint
    if not endpoint:
        return None

    def make() -> SearchIndex:
        from ....bootstrap import build_embedder
        from ..opensearch import OpenSearchIndex

        embedder = build_embedder(settings)  # the indexer's: the same settings choose it
        dimension = embedder.dimension if embedder is not None else settings.embedding_dimension or 512
        return OpenSearchIndex.connect(endpoint, dimension=dimension, boto3_session=session)

    return LazySearchIndex(make)
