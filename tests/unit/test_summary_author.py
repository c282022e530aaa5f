"""A checkpoint version's description says what it covers and who wrote it, and both read back."""

from __future__ import annotations

import pytest
from agentmem.domain.summary_author import DESCRIPTION_MAX, checkpoint_description, covered_through, summariser_of


@pytest.mark.parametrize("key", ["chat-2", "k" * 400, "a through message 9, written by x"])
def test_a_description_reads_back_what_it_covers_and_its_summariser(key: str) -> None:
    described = checkpoint_description(key, 1234, "bedrock:anthropic.claude-3-5-haiku")
    assert len(described) <= DESCRIPTION_MAX
    assert covered_through(described) == 1234
    assert summariser_of(described) == "bedrock:anthropic.claude-3-5-haiku"


@pytest.mark.parametrize("text", ["", "Refund policy", "Summary of conversation c through message x, written by y",
                                  "Summary of conversation c, written by y"])
def test_a_description_no_pass_wrote_covers_nothing(text: str) -> None:
    assert covered_through(text) is None
