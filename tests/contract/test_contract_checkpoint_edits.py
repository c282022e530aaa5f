"""An edit of the checkpoint wins (SPEC §4.4), through the services on every backend: every line a person
wrote into it survives each later pass — whichever summariser wrote it, after the history has gone —
until the conversation contradicts it or the person edits it away; deleting the checkpoint still forgets.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from agentmem.adapters.aws.bedrock import BedrockSummariser
from agentmem.domain.conversations import Message
from agentmem.domain.models import Entry
from agentmem.domain.summary import ExtractiveSummariser
from agentmem.ports.summariser import Summariser
from agentmem.services.entries import SaveRequest
from contract_world import World
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_contract_conversations import (
    AGENT,
    OWN,
    Chat,
    PassRunner,
    assistant,
    long_script,
    make_agent,
    rows,
    run_passes,
    small_talk,
    user,
)

CORRECTED = "CORRECTED-BY-HAND: the deadline is Friday."


@pytest.fixture
def jobs(world: World) -> Iterator[PassRunner]:
    yield from run_passes(world)


def edit(world: World, entry: Entry, content: str) -> Entry:
    """Save the checkpoint's new text through the API's service, at the version read."""
    saved = world.container.entries.save(world.account, OWN, entry.name,
                                         SaveRequest(content=content, version=entry.version), user="ana")
    assert not saved.created and saved.entry.version == entry.version + 1
    return world.read(entry.name, memory=OWN, user="ana")


def more(chat: Chat, jobs: PassRunner, turns: int, *, start: int, topic: str = "the harbour of town") -> Entry:
    """Append ``turns`` turns (in appends of at most 20 rows) and wait for every pass they start."""
    drafts = rows(small_talk(turns, start=start, topic=topic))
    for at in range(0, len(drafts), 20):
        chat.say(*drafts[at : at + 20])
        jobs.settle()
    found = chat.checkpoint()
    assert found is not None
    return found[0]


def pass_versions(world: World, entry: Entry, after: int) -> list[str]:
    """The content of every version a pass wrote after version ``after``."""
    return [h.content for h in world.container.entries.history(world.account, OWN, entry.name, user="ana")
            if h.version > after and h.updated_by == "system" and h.operation != "delete"]


def test_a_line_added_by_hand_survives_every_later_pass_until_the_conversation_contradicts_it(
    world: World, jobs: PassRunner
) -> None:
    # Given a checkpoint, corrected by hand: a line appended at its very end (under "Recent topics")
    make_agent(world)
    chat = Chat(world)
    chat.say(*long_script())
    first, _ = chat.summarised(jobs)
    edited = edit(world, first, (first.content or "").rstrip("\n") + "\n" + CORRECTED + "\n")

    # When 60 more messages come and passes fold them
    after = more(chat, jobs, 30, start=100)
    # Then passes wrote new versions, and every one of them kept the line, word for word
    written = pass_versions(world, after, edited.version)
    assert len(written) >= 2 and after.updated_by == "system"
    assert all(CORRECTED in text for text in written)
    assert chat.record().lines_by_hand  # the record knows which line is the person's

    # When the conversation itself says otherwise
    chat.say(user("Small change: the deadline is now Monday."), assistant("Noted, Monday it is."))
    later = more(chat, jobs, 12, start=200)
    # Then the corrected line is gone, and the summary holds what the conversation said
    assert CORRECTED not in (later.content or "")
    assert "the deadline is now Monday" in (later.content or "")
    assert chat.record().lines_by_hand == ()


def test_a_line_by_hand_stays_after_the_history_that_showed_it_has_gone(world: World, jobs: PassRunner) -> None:
    # Given a corrected checkpoint and a pass that carried the correction
    make_agent(world)
    chat = Chat(world)
    chat.say(*long_script())
    first, _ = chat.summarised(jobs)
    note = "Escalate to Bo Chen before any refund."
    text = (first.content or "").replace("## Facts\n", f"## Facts\n- {note}\n")
    edit(world, first, text)
    more(chat, jobs, 6, start=100)

    # When more than the 30 days the history keeps go by, and passes go on
    world.clock.advance(days=31)
    assert world.container.entries.history(world.account, OWN, first.name, user="ana") == []
    later = more(chat, jobs, 24, start=300)
    # Then the line is still there, in its section
    facts = (later.content or "").split("## Facts\n", 1)[1].split("\n## ", 1)[0]
    assert f"- {note}" in facts


def test_a_line_the_person_edits_away_is_not_brought_back(world: World, jobs: PassRunner) -> None:
    # Given a correction that a pass carried
    make_agent(world)
    chat = Chat(world)
    chat.say(*long_script())
    first, _ = chat.summarised(jobs)
    edit(world, first, (first.content or "") + "\n## Notes\nCall her back on Tuesday.\n")
    carried = more(chat, jobs, 6, start=100)
    assert "## Notes\nCall her back on Tuesday." in (carried.content or "")

    # When the person removes it again
    edit(world, carried, "\n".join(ln for ln in (carried.content or "").split("\n")
                                    if ln != "Call her back on Tuesday."))
    later = more(chat, jobs, 12, start=200)
    # Then no pass brings it back
    assert "Call her back on Tuesday." not in (later.content or "")


class ScriptedModel:
    """A Bedrock runtime client whose model writes a summary of its own, without the person's lines."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def converse(self, **request: Any) -> dict[str, Any]:
        self.asked.append(request)
        text = ("# Conversation summary\n\n## Remembered\n- my door code is 4471\n\n## Facts\n(none)\n\n"
                "## Decisions\n(none)\n\n## Open questions\n(none)\n\n## Recent topics\n- the harbour of town\n")
        return {"output": {"message": {"role": "assistant", "content": [{"text": text}]}}, "stopReason": "end_turn"}


def test_a_model_that_rewrites_the_summary_still_keeps_the_lines_by_hand(
    world: World, jobs: PassRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a checkpoint corrected in two places, and then a Bedrock model that rewrites it from scratch
    make_agent(world)
    chat = Chat(world)
    chat.say(*long_script())
    first, _ = chat.summarised(jobs)
    preamble = "Read this before the renewal call."
    text = (first.content or "").replace("# Conversation summary\n", f"# Conversation summary\n{preamble}\n")
    edit(world, first, text.rstrip("\n") + "\n" + CORRECTED + "\n")
    model = ScriptedModel()
    bedrock = BedrockSummariser("anthropic.claude-3-5-haiku-20241022-v1:0", bedrock_client=model)  # type: ignore[arg-type]
    monkeypatch.setattr(world.container, "summariser", lambda: bedrock)

    # When passes run
    later = more(chat, jobs, 12, start=100)
    # Then the model wrote them, and both lines are in its summary, where the person put them
    assert model.asked, "the model was asked"
    content = later.content or ""
    assert content.startswith(f"# Conversation summary\n{preamble}\n")
    assert content.rstrip("\n").endswith("## Recent topics\n- the harbour of town\n" + CORRECTED)


def test_deleting_a_corrected_checkpoint_forgets_the_corrections_too(world: World, jobs: PassRunner) -> None:
    # Given a correction that a pass carried
    make_agent(world)
    chat = Chat(world)
    chat.say(*long_script())
    first, _ = chat.summarised(jobs)
    edit(world, first, (first.content or "") + CORRECTED + "\n")
    carried = more(chat, jobs, 6, start=100)
    assert CORRECTED in (carried.content or "")

    # When the checkpoint is deleted and the conversation goes on
    world.container.entries.delete(world.account, OWN, carried.name, user="ana")
    assert chat.record().lines_by_hand == () and chat.record().passes == 0
    rebuilt = more(chat, jobs, 24, start=300, topic="the lighthouse of island")
    # Then the new checkpoint holds neither the correction nor anything before the deletion
    assert CORRECTED not in (rebuilt.content or "")
    assert "harbour" not in (rebuilt.content or "")


def test_the_checkpoint_lists_its_newest_passes_and_counts_them_all(world: World, jobs: PassRunner) -> None:
    # Given a conversation summarised by many passes, one of its versions an edit
    make_agent(world)
    chat = Chat(world)
    chat.say(*long_script())
    entry, _ = chat.summarised(jobs)
    edit(world, entry, (entry.content or "") + "\nCall her before noon.\n")
    for n in range(23):
        more(chat, jobs, 3, start=100 + 3 * n)
    # Then its record lists the newest 20 passes, newest first, and counts all 24
    _, record, passes = world.container.conversations.checkpoint(world.account, AGENT, chat.key, user="ana")
    history = world.container.entries.history(world.account, OWN, entry.name, user="ana")
    by_passes = [h.version for h in history if h.updated_by == "system"]
    assert [p["version"] for p in passes.items] == by_passes[:20]
    assert all(p["by"] == "system" for p in passes.items)
    assert passes.total == record.passes == len(by_passes) == 24
    # and what it covers is exact: every message before the window
    window = chat.context()["window"]["messages"]
    assert record.folded_through == window[0]["seq"] - 1


# == the property: random edits anywhere, random passes ===================================================
THINGS = ("deadline", "venue", "budget", "kickoff room", "launch date", "caterer")
# ("edit", where, thing) | ("note", where, n) | ("unedit", which, 0) | ("contradict", thing, 0) | ("pass", turns, 0)
# | ("delete", 0, 0)
Step = tuple[str, int, int]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("edit"), st.integers(0, 10_000), st.integers(0, len(THINGS) - 1)),
        st.tuples(st.just("note"), st.integers(0, 10_000), st.integers(0, 99)),
        st.tuples(st.just("unedit"), st.integers(0, 10_000), st.just(0)),
        st.tuples(st.just("contradict"), st.integers(0, len(THINGS) - 1), st.just(0)),
        st.tuples(st.just("pass"), st.integers(3, 8), st.just(0)),
        st.tuples(st.just("delete"), st.just(0), st.just(0)),
    ),
    min_size=3, max_size=9,
)


class Forgetful(Summariser):
    """A model that drops every line a person wrote (and keeps the rest of what the extractive one writes)."""

    @property
    def name(self) -> str:
        return "forgetful"

    def summarise(self, previous: str | None, messages: Sequence[Message]) -> str:
        text = ExtractiveSummariser().summarise(previous, messages)
        return "\n".join(ln for ln in text.split("\n") if "CORRECTED" not in ln and "Note by hand" not in ln)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=steps, forgetful=st.booleans())
def test_property_every_line_by_hand_survives_until_a_message_or_an_edit_removes_it(
    world: World, jobs: PassRunner, script: Sequence[Step], forgetful: bool
) -> None:
    # Given a conversation with a checkpoint (each example its own conversation), summarised by the extractive
    # summariser or by a model that drops the person's lines
    summariser = world.container.summariser
    world.container.summariser = (lambda: Forgetful()) if forgetful else summariser  # type: ignore[method-assign]
    try:
        edits_and_passes(world, jobs, script)
    finally:
        world.container.summariser = summariser  # type: ignore[method-assign]


def edits_and_passes(world: World, jobs: PassRunner, script: Sequence[Step]) -> None:
    make_agent(world)
    chat = Chat(world, key=f"p{len(jobs.started)}-{world.clock().timestamp():.0f}")
    chat.say(*long_script())
    first, _ = chat.summarised(jobs)
    entry: Entry | None = first
    theirs: dict[str, str] = {}  # the person's lines still standing → the thing they state ("" for a note)
    forgotten: set[str] = set()  # what a deleted checkpoint held (the opening's door code, the person's lines)
    said = 1000
    for kind, a, b in script:
        if kind == "delete":
            # When the checkpoint is deleted
            if entry is None:
                continue
            world.container.entries.delete(world.account, OWN, entry.name, user="ana")
            forgotten |= {*theirs, "4471"}
            theirs, entry = {}, None
        elif kind in ("edit", "note", "unedit"):
            if entry is None:
                continue
            # When a person edits the checkpoint: a line in at any place, or one of theirs out
            lines = (entry.content or "").split("\n")
            if kind == "unedit":
                if not theirs:
                    continue
                gone = sorted(theirs)[a % len(theirs)]
                lines = [ln for ln in lines if ln != gone]
                del theirs[gone]
            else:
                line = (f"CORRECTED {len(theirs)}: the {THINGS[b]} is room {a}." if kind == "edit"
                        else f"Note by hand {b}-{a}: call before noon.")
                lines.insert(1 + a % len(lines), line)
                theirs[line] = THINGS[b] if kind == "edit" else ""
            entry = edit(world, entry, "\n".join(lines))
        elif kind == "contradict":
            # When the conversation says otherwise of one thing
            chat.say(user(f"Update: the {THINGS[a]} is now hall {said}."), assistant("Noted."))
            said += 1
            theirs = {line: thing for line, thing in theirs.items() if thing != THINGS[a]}
            # (a pass these messages start ends before the next step reads the checkpoint, which it may have
            # written: a person edits the checkpoint as it stands)
            jobs.settle()
            found = chat.checkpoint()
            if entry is not None and found is not None:
                entry = found[0]
        else:
            # When passes fold more of the conversation
            entry = more(chat, jobs, a + 10, start=said)
            said += a + 10
            # Then every line of the person's that nothing removed is there, word for word
            content = entry.content or ""
            for line in theirs:
                assert line in content.split("\n"), (line, content)
            # and nothing a deleted checkpoint held came back
            assert not any(gone in content for gone in forgotten), content
