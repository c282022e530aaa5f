"""The DynamoDB adapters: accounts, agents, memories, entries and usage in one table (see ``table`` and ``layout``).

``build_dynamodb_stores(settings, session=None)`` makes them: one boto3 client (``client_config()``: retries
with backoff, timeouts; the endpoint from ``AWS_ENDPOINT_URL_DYNAMODB`` when set), pynamodb models
bound to ``settings.table``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import boto3

from ....settings import Settings
from ..config import client_config
from .accounts import DynamoAccountStore
from .agents import DynamoAgentStore
from .entries import DynamoEntryStore
from .memories import DynamoMemoryStore
from .models import BoundModels, bind_models
from .table import create_table
from .usage import DynamoUsageStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DEFAULT_REGION = "us-east-1"

__all__ = ["DynamoDBStores", "build_dynamodb_stores", "create_table"]


@dataclass(frozen=True)
class DynamoDBStores:
    accounts: DynamoAccountStore
    agents: DynamoAgentStore
    memories: DynamoMemoryStore
    entries: DynamoEntryStore
    usage: DynamoUsageStore
    models: BoundModels
    client: DynamoDBClient


def dynamodb_client(session: boto3.Session | None = None) -> DynamoDBClient:
    """A DynamoDB client with agentmem's client configuration (region: the session's, else ``AWS_REGION``,
    else us-east-1 — Lambda sets both ``AWS_REGION`` and ``AWS_DEFAULT_REGION``)."""
    session = session or boto3.Session()
    region = session.region_name or os.environ.get("AWS_REGION") or DEFAULT_REGION
    return session.client("dynamodb", region_name=region, config=client_config())


def build_dynamodb_stores(
    settings: Settings, session: boto3.Session | None = None, *, create_missing_table: bool = False
) -> DynamoDBStores:
    """The stores on the table ``settings.table``; ``create_missing_table`` for local AWS mode."""
    client = dynamodb_client(session)
    if create_missing_table:
        create_table(settings, client)
    models = bind_models(settings.table, client.meta.region_name, client)
    return DynamoDBStores(
        accounts=DynamoAccountStore(models),
        agents=DynamoAgentStore(models),
        memories=DynamoMemoryStore(models),
        entries=DynamoEntryStore(models),
        usage=DynamoUsageStore(models),
        models=models,
        client=client,
    )
