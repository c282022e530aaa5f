"""A context build sends the reads of the last build for the same caller, agent and user ahead, beside the
agent's record (``ConversationService._read_ahead``): on DynamoDB the build is then one round of requests. What
it sends is a guess, never an answer: after any change, made here or by another process, and in any other
conversation, the next build is exactly what a process that never built a context before builds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from agentmem.domain.agents import Attachment
from agentmem.domain.errors import ForbiddenError, NotFoundError
from contract_world import World, twin_container
from test_contract_conversations import AGENT, OWN, Chat, assistant, make_agent, user

PINNED = {"category": "user_profile", "importance": 0.9}


def fresh(world: World, chat: Chat) -> dict[str, Any]:
    """The context as a new process builds it: nothing read before, nothing kept."""
    twin = twin_container(world.container, world.clock)
    built: dict[str, Any] = twin.conversations.context(chat.caller, chat.agent, chat.key, user=chat.user)
    return built


def given_an_agent_with_pinned_entries_in_three_memories(world: World) -> Chat:
    world.container.memories.create(world.account, "handbook")
    make_agent(world, memories=(Attachment("company"), Attachment("handbook")))
    world.save("co-policy", "Refunds within 14 days.", "Refund policy", visibility="read_only")
    world.save("co-note", "Ana likes the blue plan.", "Ana's plan", user="ana")
    world.save("hb-rule", "Always greet by name.", "Greeting rule", memory="handbook", visibility="read_only")
    world.save("own-diet", "Ana eats no fish.", "Ana's diet", memory=OWN, user="ana", **PINNED)
    world.save("own-note", "Shared note.", "A note for every user", memory=OWN)
    chat = Chat(world)
    chat.say(user("Hello, I need help with a refund."), assistant("Of course, what did you buy?"))
    return chat


CHANGES: dict[str, Callable[[World, Chat], None]] = {
    "a memory detached": lambda w, c: make_agent(w, memories=(Attachment("handbook"),)),
    "a memory attached in its place": lambda w, c: make_agent(w, memories=(Attachment("handbook"),
                                                                           Attachment("company"))),
    "an entry pinned": lambda w, c: w.save("own-pet", "Ana has a cat named Miso.", "Ana's cat", memory=OWN,
                                           user="ana", **PINNED),
    "a pinned entry unpinned": lambda w, c: w.save("own-diet", "Ana eats no fish.", "Ana's diet", memory=OWN,
                                                   user="ana", category="user_profile", importance=0.2),
    "a pinned entry changed": lambda w, c: w.save("co-policy", "Refunds within 30 days.", "Refund policy",
                                                  visibility="read_only"),
    "a pinned entry deleted": lambda w, c: w.container.entries.delete(w.account, "handbook", "hb-rule"),
    "the user's copy shadowing the account's": lambda w, c: w.save("own-note", "Ana's own note.", "Ana's copy",
                                                                   memory=OWN, user="ana"),
    "a message said": lambda w, c: c.say(user("It was a kettle."), assistant("Thanks, one moment.")),
    "the window shortened": lambda w, c: make_agent(w, memories=(Attachment("handbook"), Attachment("company")),
                                                    window_messages=2),
    "an entry saved by another process": lambda w, c: twin_container(w.container, w.clock).entries.save(
        w.account, "company", "co-late", _request("Late news.", "Saved elsewhere", visibility="read_only"),
        user=None),
    "an agent changed by another process": lambda w, c: twin_container(w.container, w.clock).agents.put(
        w.account, AGENT, _settings(memories=(Attachment("handbook"),))),
}


def _request(content: str, description: str, **fields: Any) -> Any:
    from agentmem.services.entries import SaveRequest

    return SaveRequest(content=content, description=description, **fields)


def _settings(**fields: Any) -> Any:
    from agentmem.services.agents import AgentSettings
    from test_contract_conversations import SUMMARY_MESSAGES

    return AgentSettings(summary_messages=SUMMARY_MESSAGES, **fields)


def test_every_build_after_a_change_is_what_a_new_process_builds(world: World) -> None:
    # Given a conversation whose context was built before, with pinned entries and an index in three memories
    chat = given_an_agent_with_pinned_entries_in_three_memories(world)
    assert chat.context() == fresh(world, chat)
    for what, change in CHANGES.items():
        # When something the last build read changes, after a build that kept what it read
        before = chat.context()
        change(world, chat)
        # Then the next build shows the change, exactly as a process that never built it before
        after = chat.context()
        assert after == fresh(world, chat), what
        assert after != before, f"{what}: the change does not show in the context"


def test_another_caller_of_the_same_conversation_reads_only_what_it_may(world: World) -> None:
    # Given ana's conversation, whose context ana's key built (and its reads were kept)
    chat = given_an_agent_with_pinned_entries_in_three_memories(world)
    as_ana = Chat(world, principal=world.ana)
    built = as_ana.context()
    # When bob's key asks for ana's conversation, then it is refused as before, nothing of ana's in the answer
    with pytest.raises(ForbiddenError):
        Chat(world, principal=world.bob).context()
    # and the account's key, acting for ana, builds what ana's key built
    assert chat.context() == built == fresh(world, chat)


def test_a_build_after_the_agent_is_gone_is_refused(world: World) -> None:
    # Given a context built once (its reads kept)
    chat = given_an_agent_with_pinned_entries_in_three_memories(world)
    chat.context()
    # When the agent goes to the trash
    world.container.agents.delete(world.account, AGENT)
    # Then the next build is the 404 it always was
    with pytest.raises(NotFoundError):
        chat.context()


def test_another_conversation_with_the_same_user_is_built_as_a_new_process_builds_it(world: World) -> None:
    # Given a context built for one of ana's conversations (its reads kept)
    chat = given_an_agent_with_pinned_entries_in_three_memories(world)
    chat.context()
    # When ana's next conversation, new and then with messages of its own, is built
    other = Chat(world, key="c2")
    empty = other.context()
    # Then each is what a new process builds: its own window, never the first conversation's
    assert empty == fresh(world, other) and empty["window"]["messages"] == []
    other.say(user("A new question about shipping."), assistant("Happy to help."))
    said = other.context()
    assert said == fresh(world, other)
    assert [m["content"] for m in said["window"]["messages"]] == ["A new question about shipping.", "Happy to help."]


@pytest.mark.parametrize("caller", ["the account's key, for bob", "bob's own key", "the account's key, for itself"])
def test_the_first_build_for_another_user_of_the_agent_is_a_new_process_build_reading_nothing_of_the_first(
        world: World, monkeypatch: pytest.MonkeyPatch, caller: str) -> None:
    # Given ana's context built (its reads kept, ana's pinned entry among them), and bob with a pinned entry too
    chat = given_an_agent_with_pinned_entries_in_three_memories(world)
    chat.context()
    world.save("own-bike", "Bob rides to work.", "Bob's commute", memory=OWN, user="bob", **PINNED)
    sent: list[Any] = []
    store = world.container.conversations.agent_memory.entries.store
    prefetch = store.prefetch

    def spy(layers: Any, now: str, *, entries: Any = ()) -> None:
        sent.extend([*layers, *(layer for layer, _ in entries)])
        prefetch(layers, now, entries=entries)

    monkeypatch.setattr(store, "prefetch", spy)
    # When the first conversation with the agent of another user (or of the account itself) is built
    whom = None if caller.endswith("itself") else "bob"
    other = Chat(world, key="other-1", user=whom, principal=world.bob if caller == "bob's own key" else None)
    other.say(user("Can I expense a bike repair?"), assistant("Let me check."))
    built = other.context()
    # Then it is what a new process builds: that caller's pinned entries, none of ana's
    assert built == fresh(world, other)
    shown = str(built)
    assert "Ana eats no fish." not in shown
    assert ("Bob rides to work." in shown) == (whom == "bob")
    # and nothing of ana's was read for it, ahead or not
    assert sent and all(layer.user_id in (None, whom) for layer in sent), sent
    # And the next build is its own again, ana's too
    assert other.context() == fresh(world, other)
    assert chat.context() == fresh(world, chat)


# -- a first build: what the agent's record names, read ahead beside its memories' records ------------------------
def built_or_refused(build: Callable[[], Any]) -> Any:
    try:
        return build()
    except (ForbiddenError, NotFoundError) as error:
        return type(error).__name__, str(error)


def first_build(world: World, chat: Chat, surface: str | None, *, ahead: bool,
                monkeypatch: pytest.MonkeyPatch) -> Any:
    """The context as a new process builds it, reading ahead as it does, or (``ahead=False``) each read when it
    comes: nothing sent ahead by either store."""
    twin = twin_container(world.container, world.clock)
    service = twin.conversations
    if not ahead:
        monkeypatch.setattr(service.agent_memory.entries.store, "prefetch", lambda *_, **__: None)
        monkeypatch.setattr(service.store, "prefetch", lambda *_, **__: None)
    return built_or_refused(lambda: service.context(chat.caller, chat.agent, chat.key, user=chat.user,
                                                    surface=surface))


def _users_own_agent(world: World, whom: str | None) -> Chat:
    """Ana's own agent (its memory is hers) with a memory of hers attached, a pinned entry in each."""
    world.container.memories.create(world.ana, "ana-notes")
    world.save("ana-pin", "Ana's locker is 12.", "Ana's locker", memory="ana-notes", principal=world.ana, **PINNED)
    world.container.agents.put(world.ana, "ana-helper", _settings(memories=(Attachment("ana-notes"),)))
    world.save("helper-pin", "Ana prefers short answers.", "Ana's style", memory="agent:ana-helper",
               principal=world.ana, **PINNED)
    return Chat(world, key="first-1", agent="ana-helper", principal=world.ana, user=whom)


def _no_memory(world: World, whom: str | None) -> Chat:
    make_agent(world, memories=())
    return Chat(world, key="first-1", user=whom)


FIRST_BUILDS: dict[str, Callable[[World, str | None], Chat]] = {
    "memories of the account's": lambda w, whom: Chat(w, key="first-1", user=whom),
    "a user's own agent and memory": _users_own_agent,
    "no memory attached": _no_memory,
}


@pytest.mark.parametrize("surface", [None, "browser"])
@pytest.mark.parametrize("whom", ["ana", None])
@pytest.mark.parametrize("setup", list(FIRST_BUILDS))
def test_a_first_build_reading_ahead_what_the_agent_names_is_the_build_that_reads_nothing_ahead(
        world: World, monkeypatch: pytest.MonkeyPatch, setup: str, whom: str | None, surface: str | None) -> None:
    # Given an agent whose memories are the account's, a user's own agent and memory, or none; a conversation
    given_an_agent_with_pinned_entries_in_three_memories(world)
    chat = FIRST_BUILDS[setup](world, whom)
    said = built_or_refused(lambda: chat.say(user("Where is my locker?"), assistant("Let me look."),
                                             surface=surface))
    # When a new process builds its context for the first time, reading ahead what the agent's record names
    ahead = first_build(world, chat, surface, ahead=True, monkeypatch=monkeypatch)
    # Then it is the context built reading each thing only when the build comes to it
    assert ahead == first_build(world, chat, surface, ahead=False, monkeypatch=monkeypatch), said


def test_a_first_build_sends_the_named_memories_layers_beside_their_records(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an agent with its own memory and two attached, and ana's conversation, never built in this process
    chat = given_an_agent_with_pinned_entries_in_three_memories(world)
    service = twin_container(world.container, world.clock).conversations
    order: list[tuple[str, Any]] = []
    entries, memories = service.agent_memory.entries.store, service.agent_memory.entries.memories.store
    prefetch, read_ahead = entries.prefetch, memories.read_ahead

    def sent_ahead(layers: Any, now: str, *, entries: Any = ()) -> None:
        order.append(("layers", tuple(layers)))
        prefetch(layers, now, entries=entries)

    def records(account_id: str, names: Any, now: str, *, wait: bool = True) -> None:
        order.append(("records", tuple(names)))
        read_ahead(account_id, names, now, wait=wait)

    monkeypatch.setattr(entries, "prefetch", sent_ahead)
    monkeypatch.setattr(memories, "read_ahead", records)
    # When the context is built
    service.context(chat.caller, chat.agent, chat.key, user=chat.user)
    # Then every layer the build reads was sent before the memories' records were asked for
    first_records = next(i for i, (what, _) in enumerate(order) if what == "records")
    sent = {layer for what, layers in order[:first_records] if what == "layers" for layer in layers}
    read = {layer for what, layers in order if what == "layers" for layer in layers}
    assert sent and read <= sent
    assert {(layer.memory, layer.user_id) for layer in sent} == {
        (memory, who) for memory in (OWN, "company", "handbook") for who in ("ana", None)}
