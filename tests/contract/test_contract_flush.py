"""The flush catches what a person would (SPEC §4.5), on every backend: a preference, the city a move
changed, an item asked to be remembered, saved to the agent's own memory in the user's layer; a later
statement of the same fact updates its entry (same name, version + 1), never a second one; an entry that
already said a fact in other words is updated instead when the embedder reads them as one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agentmem.services.entries import SaveRequest
from contract_world import World
from test_contract_conversations import OWN, Chat, PassRunner, flushed, make_agent, rows, run_passes, small_talk, user


@pytest.fixture
def jobs(world: World) -> Iterator[PassRunner]:
    yield from run_passes(world)


def test_a_flush_writes_what_a_person_would_note_and_a_changed_city_updates_its_entry(
    world: World, jobs: PassRunner
) -> None:
    # Given a conversation with a preference, a move and an item to remember, which leaves the window
    make_agent(world)
    chat = Chat(world)
    chat.say(user("I'm vegetarian, by the way."), user("I moved from Porto to Lisbon last spring."),
             user("Please remember my code 5521."), *rows(small_talk(12)))
    jobs.settle()

    # Then the flush wrote one entry for each, in the user's words, the old city left out
    first = flushed(world)
    assert first == {
        "preference-diet": "I'm vegetarian, by the way.",
        "profile-location": "I moved to Lisbon last spring.",
        "remembered-code": "my code 5521.",
    }
    location = world.read("profile-location", memory=OWN, user="ana")
    assert location.version == 1 and location.category == "user_profile" and location.updated_by == "system"
    assert world.read("preference-diet", memory=OWN, user="ana").category == "preference"

    # When a later message changes the city, and it leaves the window too
    chat.say(user("I'm now in Madrid."), *rows(small_talk(12, start=20)))
    jobs.settle()

    # Then the city's entry is updated — version 2 — and nothing was added beside it
    second = flushed(world)
    assert second == {**first, "profile-location": "I'm now in Madrid."}
    assert world.read("profile-location", memory=OWN, user="ana").version == 2
    assert world.read("preference-diet", memory=OWN, user="ana").version == 1


def test_an_entry_that_says_the_fact_in_other_words_is_updated_rather_than_duplicated(
    world: World, jobs: PassRunner
) -> None:
    # Given an entry the agent wrote itself, under a name of its own, in the user's layer
    make_agent(world)
    world.container.entries.save(world.account, OWN, "diet", SaveRequest(
        content="The user is vegetarian", description="Diet", category="preference"), user="ana")
    chat = Chat(world)

    # When the user says it in their words, and the flush reads it
    chat.say(user("I'm vegetarian."), user("My husband is called Piet."), *rows(small_talk(12)))
    jobs.settle()

    # Then with an embedder that reads meaning the agent's entry is updated; with the hashing stand-in (no
    # meaning to compare) the fact has its own entry; either way the family fact is part of the profile
    found = flushed(world)
    if world.container.embedder is not None and world.container.embedder.name.startswith("wordllama/"):
        assert found["diet"] == "I'm vegetarian." and "preference-diet" not in found
        assert world.read("diet", memory=OWN, user="ana").version == 2
    else:
        assert found["diet"] == "The user is vegetarian" and found["preference-diet"] == "I'm vegetarian."
    assert world.read("profile-husband", memory=OWN, user="ana").category == "user_profile"


def test_a_pass_of_many_facts_reads_the_layer_once_and_still_updates_rather_than_duplicates(
    world: World, jobs: PassRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a layer that already holds entries, among them one that says a fact of this pass in other words
    make_agent(world)
    for n in range(30):
        world.container.entries.save(world.account, OWN, f"note-{n:02d}", SaveRequest(
            content=f"An older note, number {n}", description="Note", category="other"), user="ana")
    world.container.entries.save(world.account, OWN, "diet", SaveRequest(
        content="I'm vegetarian.", description="Diet", category="preference"), user="ana")
    store = world.container.entries.store
    calls = {"list_layer": 0, "get_many": 0, "get": 0}

    def counted(name: str) -> None:
        method = getattr(store, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            calls[name] += 1
            return method(*args, **kwargs)

        monkeypatch.setattr(store, name, wrapper)

    for name in calls:
        counted(name)

    # When one pass flushes many facts, the diet among them in the same words
    chat = Chat(world)
    chat.say(user("I'm vegetarian."), user("My husband is called Piet."), user("I moved to Lisbon last spring."),
             user("My sister is called Ana."), user("Please remember my locker code 4471."),
             user("I work as a nurse."), *rows(small_talk(12)))
    jobs.settle()
    during = dict(calls)

    # Then the diet's entry is updated, not a second one beside it, and every other fact has its entry
    found = flushed(world)
    assert found["diet"] == "I'm vegetarian." and "preference-diet" not in found
    assert world.read("diet", memory=OWN, user="ana").version == 2
    assert {"profile-husband", "profile-location"} <= set(found), sorted(found)
    # and the layer was listed once to forget and once to compare, not once for each fact; each fact costs a
    # read of its name and a read of its entry as saved (and the save its own), not a read of every entry listed
    saved = len(found) - 31 + 1  # (the 30 notes and the diet were there before)
    assert during["list_layer"] <= 2 and during["get_many"] <= saved + 1, (during, saved)
    assert during["get"] <= 2 * saved + 4, (during, saved)
