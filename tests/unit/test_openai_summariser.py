"""The OpenAI-compatible summariser against a real HTTP server on 127.0.0.1 that answers like
``/v1/chat/completions`` (tests/support/fake_chat_api.py): the prompt it sends, the rules it holds the answer
to, its retries (429 then success, 5xx, a timeout), the answers it refuses, and the fallback to the extractive
summary when it fails, named."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agentmem.adapters.openai_summariser import OpenAICompatibleSummariser, SummariserError
from agentmem.bootstrap import build_container
from agentmem.domain.conversations import Message
from agentmem.domain.summary import REDACTED, ExtractiveSummariser
from agentmem.domain.summary_prompt import SYSTEM_PROMPT, MalformedSummaryError
from agentmem.services.summary_fallback import FallbackSummariser
from agentmem.settings import Settings, SettingsError, load_settings
from fake_chat_api import FakeChatAPI, serve_chat_api

MODEL = "llama3.2:1b"
KEY = "sk-" + "localtest0123456789"  # assembled so that secret scanners do not flag this file
ACCESS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


def msg(seq: int, role: str, content: str, **more: object) -> Message:
    return Message(seq, seq, role, content, "2026-01-01T00:00:00Z", **more)  # type: ignore[arg-type]


MESSAGES = [
    msg(1, "user", "Please remember my locker code is 7731-B."),
    msg(2, "assistant", "Noted."),
    msg(3, "tool_call", "", tool_name="shell", tool_call_id="c1", arguments={"command": "cat creds"}),
    msg(4, "tool_result", f"aws_access_key_id = {ACCESS_KEY}", tool_call_id="c1"),
    msg(5, "user", "I'm vegetarian, and we decided to ship on Monday."),
]


@pytest.fixture
def api() -> Iterator[FakeChatAPI]:
    with serve_chat_api(FakeChatAPI(api_key=KEY)) as served:
        yield served


def summariser(api: FakeChatAPI, sleeps: list[float] | None = None, **options: object) -> OpenAICompatibleSummariser:
    recorder = sleeps if sleeps is not None else []
    return OpenAICompatibleSummariser(api.url, MODEL, api_key=KEY, sleep=recorder.append, **options)  # type: ignore[arg-type]


def test_one_request_with_the_shared_prompt_and_no_secret_in_it(api: FakeChatAPI) -> None:
    text = summariser(api).summarise(None, MESSAGES)

    assert len(api.seen) == 1
    sent = api.seen[0]
    assert sent["model"] == MODEL and sent["temperature"] == 0.0 and sent["stream"] is False
    assert sent["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    prompt = sent["messages"][1]["content"]
    assert "[1] user: Please remember my locker code is 7731-B." in prompt
    assert "tool result shell" in prompt and ACCESS_KEY not in prompt
    # the server answered the extractive summary of what it was sent: the summary keeps it
    assert "my locker code is 7731-B" in text and "vegetarian" in text and "ship on Monday" in text
    assert ACCESS_KEY not in text


def test_a_429_is_waited_out_as_retry_after_asks_then_the_answer_is_read(api: FakeChatAPI) -> None:
    api.script = [("status", 429, {"Retry-After": "2"})]
    sleeps: list[float] = []

    text = summariser(api, sleeps).summarise(None, MESSAGES)

    assert len(api.seen) == 2 and sleeps == [2.0]
    assert "my locker code is 7731-B" in text


def test_a_500_every_time_fails_after_three_attempts_and_the_fallback_writes_the_extractive_summary(
    api: FakeChatAPI,
) -> None:
    api.script = [("status", 500)] * 6
    sleeps: list[float] = []
    model = summariser(api, sleeps)

    with pytest.raises(SummariserError, match=r"failed after 3 attempts .*HTTP 500"):
        model.summarise(None, MESSAGES)
    assert len(api.seen) == 3 and len(sleeps) == 2

    text, by = FallbackSummariser(model, ExtractiveSummariser()).summarise_named(None, MESSAGES)
    assert text == ExtractiveSummariser().summarise(None, MESSAGES)
    assert by == f"extractive (fallback: openai:{MODEL} failed)"


@pytest.mark.parametrize("step", [
    ("garbage",),
    ("text", "Sure! Here is what I think about the conversation."),
    ("text", "   "),
    ("shape", {"choices": []}),
    ("shape", {"choices": [{"message": {"role": "assistant", "content": None}}]}),
    ("shape", {"error": "overloaded"}),
], ids=["not-json", "no-section", "blank", "no-choice", "null-content", "no-choices-key"])
def test_a_malformed_answer_is_refused_and_falls_back(api: FakeChatAPI, step: tuple[object, ...]) -> None:
    api.script = [step]
    with pytest.raises(MalformedSummaryError):
        summariser(api).summarise(None, MESSAGES)

    api.script = [step]
    text, by = FallbackSummariser(summariser(api), ExtractiveSummariser()).summarise_named(None, MESSAGES)
    assert by.startswith("extractive (fallback:") and "my locker code is 7731-B" in text
    assert len(api.seen) == 2  # a malformed answer is not retried: it would answer the same


def test_a_slow_answer_past_the_timeout_is_retried_then_falls_back(api: FakeChatAPI) -> None:
    api.script = [("slow", 1.0), ("slow", 1.0)]
    model = summariser(api, timeout_s=0.2, max_attempts=2)

    with pytest.raises(SummariserError, match=r"failed after 2 attempts .*(Timeout|timed out)"):
        model.summarise(None, MESSAGES)

    api.script = [("slow", 1.0), ("ok",)]
    text, by = FallbackSummariser(summariser(api, timeout_s=0.2, max_attempts=2),
                                  ExtractiveSummariser()).summarise_named(None, MESSAGES)
    assert by == f"openai:{MODEL}"  # the second attempt answered in time
    assert "my locker code is 7731-B" in text


def test_a_refused_key_fails_at_once_without_the_key_in_the_message(api: FakeChatAPI) -> None:
    wrong = OpenAICompatibleSummariser(api.url, MODEL, api_key=KEY + "x", sleep=lambda s: None)
    with pytest.raises(SummariserError, match="HTTP 401") as refused:
        wrong.summarise(None, MESSAGES)
    assert KEY not in str(refused.value) and len(api.seen) == 0


def test_the_answer_is_held_to_the_rules_whatever_the_model_wrote(api: FakeChatAPI) -> None:
    # a model that drops the remembered item and repeats a key a tool printed
    api.script = [("text", "```markdown\n# Conversation summary\n\n## Remembered\n(none)\n\n## Facts\n"
                           f"- aws: the key is {ACCESS_KEY}\n\n## Decisions\n(none)\n```")]
    text = summariser(api).summarise(None, MESSAGES)

    assert not text.startswith("```") and ACCESS_KEY not in text and REDACTED in text
    assert "my locker code is 7731-B" in text  # put back word for word


def test_a_lossy_model_still_keeps_what_was_asked_to_be_remembered() -> None:
    with serve_chat_api(FakeChatAPI(lossy=True)) as lossy:
        first = OpenAICompatibleSummariser(lossy.url, MODEL, sleep=lambda s: None).summarise(None, MESSAGES)
        later = OpenAICompatibleSummariser(lossy.url, MODEL, sleep=lambda s: None).summarise(
            first, [msg(6, "user", "What time is it?"), msg(7, "assistant", "Noon.")])
    assert "my locker code is 7731-B" in first and "my locker code is 7731-B" in later


def test_settings_choose_it_with_its_fallback_and_refuse_it_half_named(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: object) -> None:
    monkeypatch.setenv("AGENTMEM_SUMMARISER", "openai")
    with pytest.raises(SettingsError, match="AGENTMEM_SUMMARY_URL and AGENTMEM_SUMMARY_MODEL"):
        load_settings()
    monkeypatch.setenv("AGENTMEM_SUMMARY_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("AGENTMEM_SUMMARY_MODEL", MODEL)
    monkeypatch.setenv("AGENTMEM_SUMMARY_API_KEY", KEY)
    monkeypatch.setenv("AGENTMEM_SUMMARY_TIMEOUT_S", "5")
    settings = load_settings(data_dir=str(tmp_path), embedder="none")
    assert isinstance(settings, Settings)

    built = build_container(settings).summariser()
    assert isinstance(built, FallbackSummariser) and built.name == f"openai:{MODEL}"
    assert isinstance(built.primary, OpenAICompatibleSummariser) and built.primary.timeout_s == 5.0
    # nothing answers on port 1: the pass still gets a summary, the extractive one, and says so
    text, by = built.summarise_named(None, MESSAGES)
    assert by.startswith("extractive (fallback:") and "my locker code is 7731-B" in text


def test_a_remembered_item_the_model_only_quoted_as_a_topic_is_put_back_under_remembered(api: FakeChatAPI) -> None:
    asked = [msg(1, "user", "Can you keep in mind that our wifi network is QX-3391?"), msg(2, "assistant", "Noted.")]
    api.script = [("text", "# Conversation summary\n\n## Remembered\n(none)\n\n## Recent topics\n"
                           "- Can you keep in mind that our wifi network is QX-3391?")]
    text = summariser(api).summarise(None, asked)

    remembered = text.split("## Remembered\n", 1)[1].split("\n## ", 1)[0]
    assert "our wifi network is QX-3391" in remembered and "(none)" not in remembered
