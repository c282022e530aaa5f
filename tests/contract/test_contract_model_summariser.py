"""A pass through a model at an OpenAI-compatible endpoint (a local server that answers like the API), on
every backend: the checkpoint's passes name the summariser that wrote each version, and when the model
fails the pass still writes a summary — the extractive one — and says so, losing nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agentmem.adapters.openai_summariser import OpenAICompatibleSummariser
from agentmem.domain.summary import ExtractiveSummariser
from agentmem.services.summary_fallback import FallbackSummariser
from contract_world import World
from fake_chat_api import FakeChatAPI, serve_chat_api
from test_contract_conversations import AGENT, KEY, Chat, PassRunner, make_agent, rows, run_passes, small_talk, user

MODEL = "qwen2.5:0.5b"


@pytest.fixture
def jobs(world: World) -> Iterator[PassRunner]:
    yield from run_passes(world)


def test_the_passes_name_the_model_and_the_fallback_when_it_fails(
    world: World, jobs: PassRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_chat_api(FakeChatAPI()) as api:
        # Given an agent whose passes go to a model at a local endpoint, with the extractive one behind it
        make_agent(world)
        model = FallbackSummariser(OpenAICompatibleSummariser(api.url, MODEL, sleep=lambda s: None),
                                   ExtractiveSummariser())
        monkeypatch.setattr(world.container, "summariser", lambda: model)
        chat = Chat(world)

        # When a conversation runs past the threshold
        chat.say(user("Please remember my bike lock is 0815."), *rows(small_talk(12)))
        jobs.settle()

        # Then the model wrote the checkpoint, and its passes say so
        entry, _, passes = world.container.conversations.checkpoint(world.account, AGENT, KEY, user="ana")
        assert len(api.seen) == 1 and "my bike lock is 0815" in (entry.content or "")
        assert passes.items[0]["summariser"] == f"openai:{MODEL}" and passes.items[0]["by"] == "system"

        # When the model fails every time at the next pass
        api.script = [("status", 503)] * 3
        chat.say(user("Also remember the shed key is under the mat."), *rows(small_talk(12, start=20)))
        jobs.settle()

        # Then the extractive summary was written instead, named, and nothing was lost
        entry, record, passes = world.container.conversations.checkpoint(world.account, AGENT, KEY, user="ana")
        assert len(api.seen) == 4 and api.script == []
        assert passes.items[0]["summariser"] == f"extractive (fallback: openai:{MODEL} failed)"
        assert passes.items[1]["summariser"] == f"openai:{MODEL}"
        text = entry.content or ""
        assert "my bike lock is 0815" in text and "the shed key is under the mat" in text
        assert record.folded_through > 26
