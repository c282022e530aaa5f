"""HTTP as every OpenAI-compatible adapter speaks it (the embedder, the summariser): one JSON ``POST`` with a
timeout; 429, a 5xx, a dropped or timed-out connection retried with backoff (waiting what a ``Retry-After``
asks for, up to ``RETRY_AFTER_MAX_S``); any other status an error at once, naming the status and the start of
the body (a 4xx will answer the same next time; a redirect would lose the POST). The api key goes as a bearer
token and is never in a message, even when a server echoes it back.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import requests

RETRY_AFTER_MAX_S = 10.0  # a longer Retry-After is a quota, not a hiccup: wait this much, then fail if still so
BACKOFF_BASE_S = 0.5  # the ceiling of the first wait; it doubles with each failed attempt ...
BACKOFF_MAX_S = 8.0  # ... up to this
BODY_CHARS = 200  # of an error answer, in the message
RETRYABLE_ERRORS = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)



def backoff_delay(attempt: int) -> float:
    """The wait after failed attempt ``attempt`` (1, 2, …): between half the ceiling and the ceiling, which
    doubles each time."""
    ceiling = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2.0 ** (attempt - 1))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def retry_after_s(value: str | None) -> float | None:
    """The wait a ``Retry-After`` header asks for (seconds or an HTTP date), at most ``RETRY_AFTER_MAX_S``;
    ``None`` when there is none worth reading."""
    if not value or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    if not math.isfinite(seconds):
        return None
    return min(RETRY_AFTER_MAX_S, max(0.0, seconds))


class JsonEndpoint:
    """``post`` to ``url`` as above. ``where`` names the endpoint in messages, ``doing`` the work in the log
    line of a retried attempt ("embedding"), and ``error`` is what a refusal, or a failure past the retries,
    raises."""

    def __init__(
        self, url: str, *, where: str, doing: str, error: type[Exception], api_key: str | None, timeout_s: float,
        max_attempts: int, session: requests.Session, sleep: Callable[[float], None] = time.sleep,
        log: logging.Logger | None = None,
    ) -> None:
        self.url = url
        self.where = where
        self.doing = doing
        self.error = error
        self.api_key = api_key or None
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.session = session
        self.sleep = sleep
        self.log = log or logging.getLogger(__name__)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            self.headers["Authorization"] = f"Bearer {self.api_key}"

    def post(self, payload: dict[str, Any]) -> requests.Response:
        """The 2xx answer to ``payload``, after retrying what passes."""
        attempt = 1
        while True:
            wait: float | None = None
            try:
                response = self.session.post(self.url, json=payload, headers=self.headers,
                                             timeout=self.timeout_s, allow_redirects=False)
            except RETRYABLE_ERRORS as error:
                reason = f"{type(error).__name__}: {self.scrub(str(error))}"
            else:
                status = response.status_code
                if status == 429 or status >= 500:
                    reason = f"HTTP {status}: {self.body(response)}"
                    wait = retry_after_s(response.headers.get("Retry-After"))
                elif 200 <= status < 300:
                    return response
                else:  # a refused request (or a redirect, which would lose the POST): the same next time
                    raise self.error(f"{self.where} answered HTTP {status}: {self.body(response)}")
            if attempt >= self.max_attempts:
                raise self.error(f"{self.where} failed after {attempt} attempts ({reason})")
            self.log.warning("%s with %s failed (attempt %d of %d): %s", self.doing, self.where, attempt,
                             self.max_attempts, reason)
            self.sleep(wait if wait is not None else backoff_delay(attempt))
            attempt += 1

    def rows_by_index(self, response: requests.Response, key: str, count: int, *, rows: str, sent: str,
                      ) -> dict[int, dict[str, Any]]:
        """The objects of a 2xx answer's list ``key`` (OpenAI's ``data``, a rerank API's ``results``), one per item
        sent, by their ``index``: each index an integer from 0 to ``count - 1``, given once. ``rows`` and
        ``sent`` name the two in the message of an answer that is not that ("embeddings", "texts")."""
        try:
            answer = response.json()
        except ValueError:
            raise self.error(f"{self.where} answered HTTP {response.status_code} that is not JSON: "
                             f"{self.body(response)}") from None
        listed = answer.get(key) if isinstance(answer, dict) else None
        if not isinstance(listed, list) or len(listed) != count:
            got = len(listed) if isinstance(listed, list) else "no"
            raise self.error(f"{self.where} answered HTTP {response.status_code} with {got} {rows} for {count} "
                             f"{sent}: {self.body(response)}")
        by_index: dict[int, dict[str, Any]] = {}
        for row in listed:
            index = row.get("index") if isinstance(row, dict) else None
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count or index in by_index:
                raise self.error(f"{self.where} answered a row for no {sent[:-1]} sent (index {index!r}): "
                                 f"{self.body(response)}")
            by_index[index] = row
        return by_index

    def scrub(self, text: str) -> str:
        return text.replace(self.api_key, "***") if self.api_key else text

    def body(self, response: requests.Response) -> str:
        return self.scrub(response.text)[:BODY_CHARS] or "(empty body)"
