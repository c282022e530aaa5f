"""Fixtures of the unit tests that run against DynamoDB Local."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from unittest import mock

import boto3
import dynamodb_local
import pytest
from agentmem.adapters.aws.dynamodb import DynamoDBStores, build_dynamodb_stores
from agentmem.domain.models import MemoryRecord
from agentmem.settings import Settings
from dynamodb_layer import LAYER, T0


@pytest.fixture(scope="session")
def server() -> Iterator[dynamodb_local.DynamoDBLocal]:
    yield dynamodb_local.shared()
    dynamodb_local.stop_shared()


def _stores(server: dynamodb_local.DynamoDBLocal, *, streamed: bool) -> Iterator[DynamoDBStores]:
    settings = Settings(backend="aws", table=f"agentmem-{uuid.uuid4().hex[:12]}")
    with mock.patch.dict(os.environ, server.environment()):
        built = build_dynamodb_stores(settings, boto3.Session(), create_missing_table=streamed)
    if not streamed:
        dynamodb_local.create_table(built.client, settings.table)
    built.memories.create_memory(MemoryRecord(LAYER.account_id, LAYER.memory, None, T0))
    yield built
    built.client.delete_table(TableName=settings.table)


@pytest.fixture
def stores(server: dynamodb_local.DynamoDBLocal) -> Iterator[DynamoDBStores]:
    """A table of the test's own, as the adapter makes it but without its stream (``dynamodb_local.create_table``
    says why)."""
    yield from _stores(server, streamed=False)


@pytest.fixture
def adapters_table(server: dynamodb_local.DynamoDBLocal) -> Iterator[DynamoDBStores]:
    """A table of the test's own made by the adapter (``create_missing_table``), stream and all."""
    yield from _stores(server, streamed=True)
