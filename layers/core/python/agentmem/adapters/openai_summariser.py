"""A summariser for any OpenAI-compatible ``POST {base_url}/chat/completions``: Ollama's ``/v1``, vLLM, LM
Studio, llama.cpp's server, OpenAI itself and hosted providers (SPEC §4.3).

One request per pass, with the prompt every model summariser sends (``domain.summary_prompt``: the rules
in the system message, the previous summary and the folded messages in the user message, credentials left
out of both), and the answer read by the same rules (a fenced answer unfenced; no text or no section of a
summary is a ``MalformedSummaryError``; credentials left out of it but for remembered items; every
remembered item there word for word; cut under the hard bound).

HTTP as every OpenAI-compatible adapter speaks it (``adapters.openai_http``): a timeout per request;
429, a 5xx, a dropped or timed-out connection retried with backoff (waiting what a ``Retry-After`` asks
for, up to 10 s); any other status a ``SummariserError`` at once; the api key, sent as a bearer token, is
never in a message. Whatever fails propagates: ``bootstrap`` puts this summariser behind
``FallbackSummariser``, which writes the extractive summary instead and says so.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import requests

from ..domain.conversations import Message
from ..domain.summary import track_remembered
from ..domain.summary_prompt import DEFAULT_MAX_TOKENS, SYSTEM_PROMPT, MalformedSummaryError, finish, user_prompt
from ..ports.summariser import Summariser
from .openai_http import JsonEndpoint

DEFAULT_TIMEOUT_S = 120.0  # a local model on a CPU writes a 2,000-token summary for a while
DEFAULT_MAX_ATTEMPTS = 3

_log = logging.getLogger(__name__)


class SummariserError(RuntimeError):
    """The endpoint refused the request, or kept failing past the retries."""


class OpenAICompatibleSummariser(Summariser):
    """``summarise`` with ``model`` at ``base_url`` (``http://localhost:11434/v1``); ``api_key`` goes as a
    bearer token. ``session`` is used as given (else one is made); ``sleep`` is how the backoff waits
    (tests pass a recorder)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url or not base_url.strip("/"):
            raise ValueError("base_url must be the API's root, e.g. http://localhost:11434/v1")
        if not model:
            raise ValueError("model must name a chat model")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self.model = model
        self._api_key = api_key or None
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.session = session or requests.Session()
        self._http = JsonEndpoint(self.url, where=self._where, doing="summarising", error=SummariserError,
                                  api_key=self._api_key, timeout_s=timeout_s, max_attempts=max_attempts,
                                  session=self.session, sleep=sleep, log=_log)

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    def request(self, previous: str | None, messages: Sequence[Message], *, keep: Sequence[str] = ()) -> dict[str, Any]:
        """The Chat Completions body of one pass."""
        return {
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_prompt(previous, messages, keep=keep)},
            ],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stream": False,
        }

    def summarise(self, previous: str | None, messages: Sequence[Message]) -> str:
        remembered, forgotten = track_remembered(previous, messages)
        answer = self._post(self.request(previous, messages, keep=remembered))
        text, stop = self._text(answer)
        return finish(text, remembered=remembered, forgotten=forgotten, model=self.name, stop_reason=stop)

    # --- one request -----------------------------------------------------------------------------

    def _post(self, payload: dict[str, Any]) -> Any:
        response = self._http.post(payload)
        try:
            return response.json()
        except ValueError:
            raise MalformedSummaryError(f"{self._where} answered HTTP {response.status_code} that is not JSON: "
                                        f"{len(response.content):,} bytes") from None

    def _text(self, answer: Any) -> tuple[str, object]:
        """The first choice's text and finish reason; ``MalformedSummaryError`` for any other shape."""
        choices = answer.get("choices") if isinstance(answer, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # content parts, as some servers answer
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if not isinstance(content, str):
            raise MalformedSummaryError(f"{self._where} answered without a message's text")
        return content, choice.get("finish_reason") if isinstance(choice, dict) else None

    # --- messages ----------------------------------------------------------------------------------

    @property
    def _where(self) -> str:
        return f"{self.model} at {self.url}"

