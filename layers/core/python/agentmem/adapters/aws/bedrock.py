"""The summariser on AWS: a Bedrock model through the Converse API (SPEC §4.3).

One ``converse`` call per pass: a system prompt with the summary's sections and rules, and one user message
holding the previous summary and the folded messages as a transcript (tool calls and results shown with
their tool's name, results truncated) — the prompt every model summariser sends, ``domain.summary_prompt``
(the OpenAI-compatible one in ``adapters.openai_summariser`` too). The model's answer is then made to keep
the rules whatever it wrote (defence in depth, ``domain.summary_prompt.finish``):

* every credential in it is left out (``domain.summary.leave_out_secrets``), except in what the user asked
  to remember — the same filter runs over the transcript before it is sent, so the model rarely sees one;
* every item the conversation asked to remember is there word for word, and none it asked to forget
  (``domain.summary.track_remembered`` / ``keep_remembered``, the extractive summariser's rules).

Errors from Bedrock (throttling, access, validation …) propagate after botocore's own retries (standard
mode: the first try and ``MAX_ATTEMPTS`` retries, with backoff): the summary state machine retries the
step, and a failed pass never loses messages.

A malformed answer — no text, or text that is not a summary (none of its ``##`` sections: a refusal, a
chat reply) — **fails the pass cleanly** with ``MalformedSummaryError`` rather than falling back to another
summariser (SPEC §4.3: a failed pass is retried and never loses messages): nothing is written, the
checkpoint stays as it was and ``covers_through_seq`` does not move, so the next pass folds the same
messages again. Writing the extractive summary instead would replace the model's summary with a
different kind of text without anyone asking for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from ...domain.conversations import Message
from ...domain.summary import track_remembered
from ...domain.summary_prompt import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_RESULT_CHARS,
    SYSTEM_PROMPT,
    TRANSCRIPT_MAX_CHARS,
    EmptySummaryError,
    MalformedSummaryError,
    finish,
    transcript,
    user_prompt,
)
from ...ports.summariser import Summariser
from .config import client_config

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
else:
    BedrockRuntimeClient = Any

__all__ = ["SYSTEM_PROMPT", "TRANSCRIPT_MAX_CHARS", "BedrockSummariser", "EmptySummaryError", "MalformedSummaryError"]

READ_TIMEOUT_S = 120  # a model writes for a while; the other clients' 10 s would cut it off


class BedrockSummariser(Summariser):
    """``summarise`` through ``bedrock-runtime`` ``converse`` with ``model_id`` (a model id or an inference
    profile id). ``bedrock_client`` is used as given; else one is made from ``boto3_session`` (or a default
    session) with agentmem's client config and a longer read timeout."""

    def __init__(
        self,
        model_id: str,
        *,
        bedrock_client: BedrockRuntimeClient | None = None,
        boto3_session: boto3.session.Session | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_result_chars: int = DEFAULT_RESULT_CHARS,
        temperature: float = 0.0,
    ) -> None:
        if not model_id:
            raise ValueError("model_id must name a Bedrock model")
        self.model_id = model_id
        self.max_tokens = max_tokens
        self.max_result_chars = max_result_chars
        self.temperature = temperature
        self.client: BedrockRuntimeClient = bedrock_client or (boto3_session or boto3.session.Session()).client(
            "bedrock-runtime", config=client_config().merge(Config(read_timeout=READ_TIMEOUT_S))
        )

    @property
    def name(self) -> str:
        return f"bedrock:{self.model_id}"

    # --- the request ---------------------------------------------------------------------------

    def transcript(self, messages: Sequence[Message], *, keep: Sequence[str] = ()) -> str:
        """The messages as the prompt shows them (``domain.summary_prompt.transcript``)."""
        return transcript(messages, keep=keep, max_result_chars=self.max_result_chars)

    def request(self, previous: str | None, messages: Sequence[Message], *, keep: Sequence[str] = ()) -> dict[str, Any]:
        """The ``converse`` parameters of one pass."""
        user_text = user_prompt(previous, messages, keep=keep, max_result_chars=self.max_result_chars)
        return {
            "modelId": self.model_id,
            "system": [{"text": SYSTEM_PROMPT}],
            "messages": [{"role": "user", "content": [{"text": user_text}]}],
            "inferenceConfig": {"maxTokens": self.max_tokens, "temperature": self.temperature},
        }

    # --- the pass ------------------------------------------------------------------------------

    def summarise(self, previous: str | None, messages: Sequence[Message]) -> str:
        remembered, forgotten = track_remembered(previous, messages)
        response = self.client.converse(**self.request(previous, messages, keep=remembered))
        blocks = response.get("output", {}).get("message", {}).get("content", [])
        text = "".join(str(block["text"]) for block in blocks if "text" in block)
        return finish(text, remembered=remembered, forgotten=forgotten, model=self.model_id,
                      stop_reason=response.get("stopReason"))
