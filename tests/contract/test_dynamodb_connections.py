"""A warm instance sends its DynamoDB requests on connections it already has open: the client keeps as many
connections as one call sends requests at once (``adapters/aws/dynamodb.CONNECTIONS``). With botocore's 10, a
context build, which sends 15 requests at once, opened and dropped five connections every time: on AWS a TCP and
TLS handshake each, in the one round the build waits for."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dynamodb_local
import pytest
import urllib3.connectionpool
from agentmem.adapters.aws.dynamodb import CONNECTIONS
from agentmem.adapters.aws.dynamodb.entries import DynamoEntryStore
from agentmem.domain.agents import Attachment
from contract_world import FakeClock, World, build_aws, make_world
from test_contract_conversations import OWN, Chat, assistant, make_agent, user

ATTACHED = [f"handbook-{n}" for n in range(5)]


ROUND_TRIP_S = 0.02


def _a_network_away(**_: Any) -> None:
    """Held before each request is sent, as a network would hold it: requests sent at once are in flight together
    (DynamoDB Local on this machine answers before the next is sent)."""
    time.sleep(ROUND_TRIP_S)


@pytest.fixture
def aws_world(tmp_path: Path) -> Iterator[World]:
    clock = FakeClock()
    with build_aws(tmp_path, clock) as container:
        entries = container.stores.entries
        assert isinstance(entries, DynamoEntryStore)
        entries.models.connection.client.meta.events.register("before-send.dynamodb", _a_network_away)
        yield make_world(container, clock)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The connections opened to DynamoDB Local from here on, one item each."""
    port = dynamodb_local.shared().port
    made: list[int] = []
    new_conn = urllib3.connectionpool.HTTPConnectionPool._new_conn

    def counted(pool: Any) -> Any:
        if pool.port == port:
            made.append(port)
        return new_conn(pool)

    monkeypatch.setattr(urllib3.connectionpool.HTTPConnectionPool, "_new_conn", counted)
    return made


def given_an_agent_reading_six_memories_in_two_layers_each(world: World) -> Chat:
    """Twelve layers: a context build sends about twenty requests at once."""
    for memory in ATTACHED:
        world.container.memories.create(world.account, memory)
    make_agent(world, memories=tuple(Attachment(memory) for memory in ATTACHED))
    for memory in [OWN, *ATTACHED]:
        world.save("rule", f"The rule of {memory}.", f"{memory}'s rule", memory=memory, visibility="read_only")
        world.save("pref", "Ana prefers trains.", "Ana's travel", memory=memory, user="ana")
    chat = Chat(world)
    chat.say(user("Hello, I need a train."), assistant("Where to?"))
    return chat


def test_a_warm_instance_keeps_every_connection_it_opens(
        aws_world: World, opened: list[int], caplog: pytest.LogCaptureFixture) -> None:
    # Given an agent reading six memories, its context built twice on this instance (the client's connections
    # opened as the builds needed them)
    chat = given_an_agent_reading_six_memories_in_two_layers_each(aws_world)
    chat.context()
    chat.context()
    first = len(opened)
    # When the instance builds contexts of this conversation and others, and reads and saves entries
    with caplog.at_level(logging.WARNING, logger="urllib3.connectionpool"):
        for turn in range(3):
            chat.say(user(f"Question {turn}?"), assistant(f"Answer {turn}."))
            assert chat.context()["window"]["messages"][-1]["content"] == f"Answer {turn}."
            Chat(aws_world, key=f"other-{turn}").context()
            aws_world.save(f"note-{turn}", f"Note {turn}.", f"Note {turn}", memory=OWN, user="ana")
            assert aws_world.read(f"note-{turn}", memory=OWN, user="ana").content == f"Note {turn}."
    # Then no connection was dropped for want of room in the pool (each would be opened again by the next build:
    # with botocore's 10, every build dropped some): every one opened is kept (a new one is opened only when more
    # requests are in flight at once than ever before on this instance, which timing decides)
    dropped = [r.getMessage() for r in caplog.records if "pool is full" in r.getMessage()]
    assert dropped == []
    assert first <= len(opened) <= CONNECTIONS


def test_the_counter_sees_the_connections_a_new_instance_opens(aws_world: World, opened: list[int]) -> None:
    # Given a new instance (its client has no connection yet) ... when it builds a context
    from contract_world import twin_container

    chat = given_an_agent_reading_six_memories_in_two_layers_each(aws_world)
    opened.clear()
    twin = twin_container(aws_world.container, aws_world.clock)
    twin.conversations.context(chat.caller, chat.agent, chat.key, user=chat.user)
    # Then the connections it opens are counted (the test above is not blind)
    assert len(opened) >= 2
