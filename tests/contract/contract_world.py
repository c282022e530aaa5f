"""What every contract test starts from: a built container, a clock it can move, and the callers.

The contract suite only talks to the services the composition root builds, so the same tests run
against every backend. Backends are listed in ``BUILDERS`` (conftest.py parametrizes over it).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
import dynamodb_local
from agentmem.adapters.aws.dynamodb import build_dynamodb_stores
from agentmem.adapters.aws.dynamodb.entries import DynamoEntryStore
from agentmem.adapters.aws.lazy import LazyBlobStore
from agentmem.adapters.aws.s3 import S3BlobStore
from agentmem.adapters.embedded.embedder import HashingEmbedder
from agentmem.bootstrap import Adapters, Container, Stores, build_container
from agentmem.domain.conversations import MessageDraft
from agentmem.domain.models import Entry, HistoryItem, Principal, SaveResult
from agentmem.ports.blobs import BlobStore
from agentmem.services.agents import AgentSettings
from agentmem.services.conversations import JournalPage
from agentmem.services.entries import SaveRequest
from agentmem.settings import Settings
from moto_server import MotoServer

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class FakeClock:
    """A clock tests move by hand. Each reading ticks 1 ms, so every write gets its own ``updated_at``."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@contextmanager
def build_embedded(data_dir: Path, clock: FakeClock) -> Iterator[Container]:
    # the semantic side given all the time it needs (tests of its deadline set their own): on a loaded machine
    # the 300 ms default would let a search answer by words at random, and a test compare two different modes
    yield build_container(Settings(backend="embedded", data_dir=data_dir, recall_deadline_ms=30_000), clock=clock)


_boto3_session: boto3.Session | None = None


def _session() -> boto3.Session:
    """One boto3 session per process: it loads DynamoDB's service model once, not once per test."""
    global _boto3_session
    if _boto3_session is None:
        _boto3_session = boto3.Session()
    return _boto3_session


def aws_container(settings: Settings, clock: FakeClock, *, create_table: bool = False) -> Container:
    """The DynamoDB adapters on this process's DynamoDB Local, on the table ``settings.table``."""
    server = dynamodb_local.shared()
    journal = aws_journal(settings)
    # the endpoint and dummy credentials, as botocore reads them, while the client is made
    with mock.patch.dict(os.environ, server.environment()):
        dynamodb = build_dynamodb_stores(settings, _session(), journal=journal)
    if create_table:  # the adapter's table without its stream (dynamodb_local.create_table says why)
        dynamodb_local.create_table(dynamodb.client, settings.table)
    stores = Stores(
        accounts=dynamodb.accounts, agents=dynamodb.agents, memories=dynamodb.memories, entries=dynamodb.entries,
        usage=dynamodb.usage, conversations=dynamodb.conversations,
    )
    # the buckets on moto's S3 server; no search index and no state machine, as settings have none
    adapters = Adapters(embedder=HashingEmbedder(), journal=journal, workspaces=aws_workspaces(settings))
    return build_container(settings, clock=clock, stores=stores, adapters=adapters)


@contextmanager
def build_aws(data_dir: Path, clock: FakeClock) -> Iterator[Container]:
    """A table of this test's own, deleted afterwards (DynamoDB Local makes one in milliseconds)."""
    settings = Settings(backend="aws", data_dir=data_dir, table=f"agentmem-{uuid.uuid4().hex[:12]}")
    container = aws_container(settings, clock, create_table=True)
    try:
        yield container
    finally:
        dynamodb = container.stores.entries
        assert isinstance(dynamodb, DynamoEntryStore)
        dynamodb.models.connection.client.delete_table(TableName=settings.table)


# One line per backend.
BUILDERS: dict[str, Callable[[Path, FakeClock], AbstractContextManager[Container]]] = {
    "embedded": build_embedded,
    "aws": build_aws,
}


def twin_container(container: Container, clock: FakeClock) -> Container:
    """Another container on the same storage: a second process, or a second Lambda instance, with
    nothing in memory in common with the first."""
    if container.settings.backend == "aws":
        return aws_container(container.settings, clock)
    return build_container(container.settings, clock=clock)


# -- the AWS backend's journal bucket -----------------------------------------------------------------------
_journal_server: MotoServer | None = None
_journal_lock = threading.Lock()


def journal_s3() -> MotoServer:
    """This process's moto S3 server for journal buckets, started on first use (it stops at exit)."""
    global _journal_server
    with _journal_lock:
        if _journal_server is None:
            _journal_server = MotoServer().start()
        return _journal_server


def aws_journal(settings: Settings) -> BlobStore:
    """The AWS conversation store's journal bucket: on moto's S3 server, named after the table (so a twin
    container shares it), made on first use — moto starts only for a test that seals, reads sealed
    messages or purges."""

    def make() -> BlobStore:
        bucket = S3BlobStore(settings.table, boto3_client=journal_s3().client("s3"))
        bucket.ensure_bucket()
        return bucket

    return LazyBlobStore(make)


def aws_workspaces(settings: Settings) -> BlobStore:
    """The AWS backend's workspace bucket, as the journal's: on the same moto S3 server, named after the
    table (a twin container shares it), made on first use. Its presigned links are signed with moto's
    dummy credentials (the server's session), as boto3 would sign them with the Lambda's."""

    def make() -> BlobStore:
        server = journal_s3()
        bucket = S3BlobStore(f"{settings.table}-workspaces", boto3_client=server.client("s3"),
                             boto3_session=server.session())
        bucket.ensure_bucket()
        return bucket

    return LazyBlobStore(make)


@dataclass
class World:
    """An account ``acme`` with a memory ``company``, a user key for ``ana``, and a second account."""

    container: Container
    clock: FakeClock
    account: Principal  # acme's account key
    ana: Principal  # acme's user key for user "ana"
    bob: Principal  # acme's user key for user "bob"
    other: Principal  # the account key of another tenant, "globex"
    memory: str = "company"

    # -- short ways to do what a caller does -----------------------------------------------------------
    def save(
        self,
        name: str,
        content: str = "Refunds are paid back within 14 days.",
        description: str | None = "How refunds work",
        *,
        principal: Principal | None = None,
        user: str | None = None,
        memory: str | None = None,
        **fields: Any,
    ) -> SaveResult:
        return self.container.entries.save(
            principal or self.account,
            memory or self.memory,
            name,
            SaveRequest(content=content, description=description, **fields),
            user=user,
        )

    def read(
        self,
        name: str,
        *,
        principal: Principal | None = None,
        user: str | None = None,
        memory: str | None = None,
        version: int | None = None,
    ) -> Entry:
        return self.container.entries.read(
            principal or self.account, memory or self.memory, name, user=user, version=version
        )

    def names(
        self, *, principal: Principal | None = None, user: str | None = None, memory: str | None = None
    ) -> list[str]:
        """One layer's entry names, newest first (the whole layer, page by page)."""
        names: list[str] = []
        cursor: str | None = None
        while True:
            page = self.container.entries.list_entries(
                principal or self.account, memory or self.memory, user=user, limit=100, cursor=cursor
            )
            names += [e.name for e in page.items]
            if page.next_cursor is None:
                return names
            cursor = page.next_cursor

    def history(self, name: str, *, user: str | None = None) -> list[HistoryItem]:
        return self.container.entries.history(self.account, self.memory, name, user=user)

    def search(
        self,
        query: str,
        *,
        principal: Principal | None = None,
        user: str | None = None,
        limit: int | None = None,
        memory: str | None = None,
        mode: str = "keyword",
    ) -> list[Entry]:
        """The word rules of SPEC §6.1 unless another mode is asked for (recall's own tests ask)."""
        ranked = self.container.entries.search(
            principal or self.account, memory or self.memory, query, user=user, limit=limit, mode=mode
        )
        return [r.entry for r in ranked]

    def found(self, query: str, **kwargs: Any) -> list[str]:
        """Names a search returns, best first."""
        return [e.name for e in self.search(query, **kwargs)]

    def converse(self, agent: str, conversation: str, talk: Sequence[tuple[Any, str]]) -> None:
        """An agent of default settings with one conversation of ``talk`` ((role, text) pairs, in order), the
        semantic side given all the time it needs: its deadline is no part of what a test of ranking checks."""
        if self.container.entries.semantic is not None:
            self.container.entries.semantic.deadline_s = 120.0
        self.container.agents.put(self.account, agent, AgentSettings())
        self.container.conversations.append(self.account, agent, conversation,
                                            [MessageDraft(role, text) for role, text in talk])

    def journal_page(self, agent: str, question: str, conversation: str, **options: Any) -> JournalPage:
        """One page of a journal search within ``conversation``, as the account asks it."""
        page: JournalPage = self.container.conversations.search_page(self.account, agent, question,
                                                                      conversation=conversation, **options)
        return page


def make_world(container: Container, clock: FakeClock) -> World:
    keys = container.keys
    _, acme_secret = keys.create_account("acme")
    account = keys.authenticate("Bearer " + acme_secret)
    _, ana_secret = keys.create_key(account, user="ana")
    _, bob_secret = keys.create_key(account, user="bob")
    _, globex_secret = keys.create_account("globex")
    world = World(
        container=container,
        clock=clock,
        account=account,
        ana=keys.authenticate("Bearer " + ana_secret),
        bob=keys.authenticate("Bearer " + bob_secret),
        other=keys.authenticate("Bearer " + globex_secret),
    )
    container.memories.create(account, world.memory)
    return world
