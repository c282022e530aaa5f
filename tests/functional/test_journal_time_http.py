"""A message's original time over HTTP (SPEC §4.1), on both backends: an append carrying ``created_at``, the
journal read back with it, journal search bounded by ``after`` / ``before`` through the endpoint, the
``journal_message_search`` tool and the SDK; and the bad times — in the future, unparseable, too old, ``after``
later than ``before`` — each a 400 naming the field, with nothing stored."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests
from agentmem.client import Client
from functional_support import Server, auth

HISTORY = [
    {"role": "user", "content": "The offsite is booked for the 12th of May in Sintra.",
     "created_at": "2026-01-14T10:00:00Z"},
    {"role": "assistant", "content": "Got it: offsite in Sintra on May 12th.", "created_at": "2026-01-14T10:00:05Z"},
    {"role": "user", "content": "Change of plan: the offsite moves to Cascais, same date.",
     "created_at": "2026-02-20T15:30:00+01:00"},
]


@pytest.fixture
def agent(target: Server) -> Iterator[tuple[Server, requests.Session, str]]:
    with requests.Session() as session:
        session.headers.update(auth(target.key))
        name = f"a-{uuid.uuid4().hex[:10]}"
        assert session.put(target.url(f"/v1/agents/{name}"), json={}).status_code in (200, 201)
        yield target, session, name


def _append(server: Server, http: requests.Session, agent: str, messages: list[dict[str, Any]],
            key: str = "plans") -> requests.Response:
    return http.post(server.url(f"/v1/agents/{agent}/conversations/{key}/messages"), json={"messages": messages})


def _search(server: Server, http: requests.Session, agent: str, **params: str) -> requests.Response:
    return http.get(server.url(f"/v1/agents/{agent}/messages/search"), params=params)


def test_an_imported_history_keeps_its_dates_and_search_is_bounded_by_them(
    agent: tuple[Server, requests.Session, str],
) -> None:
    server, http, name = agent
    appended = _append(server, http, name, HISTORY)
    assert appended.status_code == 201, appended.text
    assert [m["created_at"] for m in appended.json()["items"]] == [
        "2026-01-14T10:00:00.000000Z", "2026-01-14T10:00:05.000000Z", "2026-02-20T14:30:00.000000Z"]
    read = http.get(server.url(f"/v1/agents/{name}/conversations/plans/messages")).json()["items"]
    assert [m["created_at"] for m in read] == [m["created_at"] for m in appended.json()["items"]]
    # the endpoint: only what was said in February, with its date
    found = _search(server, http, name, q="offsite", after="2026-02-01", before="2026-03-01")
    assert found.status_code == 200, found.text
    assert [(h["seq"], h["created_at"]) for h in found.json()["items"]] == [(3, "2026-02-20T14:30:00.000000Z")]
    # the tool an agent calls: the same window, and its text gives the date
    tool = http.post(server.url(f"/v1/agents/{name}/tools/journal_message_search"),
                     json={"arguments": {"query": "offsite", "before": "2026-02-01"}, "conversation": "plans"})
    assert tool.status_code == 200, tool.text
    body = tool.json()
    assert sorted(h["seq"] for h in body["result"]["items"]) == [1, 2]
    assert "2026-01-14 10:00 UTC" in body["text"]
    # the SDK, with datetimes
    client = Client(server.url(""), server.key)
    hits = client.agent(name).search_messages("offsite", after=datetime(2026, 2, 20, 14, tzinfo=UTC))
    assert [(h.seq, h.created_at) for h in hits] == [(3, "2026-02-20T14:30:00.000000Z")]


IN_TWO_HOURS = "in two hours"  # worked out when the test runs: collections by parallel workers must agree


@pytest.mark.parametrize(("created_at", "why"), [
    (IN_TWO_HOURS, "in the future"),
    ("yesterday at noon", "not an ISO 8601"),
    ("2026-02-30T10:00:00Z", "not an ISO 8601"),
    ("0202-01-01T00:00:00Z", "before 1900"),
    (1767225600, "must be"),
])
def test_a_bad_created_at_is_a_400_naming_it_and_nothing_is_stored(
    agent: tuple[Server, requests.Session, str], created_at: Any, why: str,
) -> None:
    server, http, name = agent
    if created_at == IN_TWO_HOURS:
        created_at = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
    good = {"role": "user", "content": "first"}
    bad = {"role": "user", "content": "second", "created_at": created_at}
    answer = _append(server, http, name, [good, bad], key="bad-times")
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert "created_at" in error["message"] + str(error.get("field", ""))
    if why != "must be":  # (a number is refused by the body's schema, before the rules run)
        assert error["field"] == "messages[1].created_at" and why in error["message"]
    assert http.get(server.url(f"/v1/agents/{name}/conversations/bad-times")).status_code == 404


def test_a_little_clock_skew_is_taken_as_now(agent: tuple[Server, requests.Session, str]) -> None:
    server, http, name = agent
    ahead = (datetime.now(UTC) + timedelta(minutes=2)).isoformat()
    answer = _append(server, http, name, [{"role": "user", "content": "hi", "created_at": ahead}], key="skew")
    assert answer.status_code == 201, answer.text
    assert answer.json()["items"][0]["created_at"] <= ahead.replace("+00:00", "Z")


@pytest.mark.parametrize(("params", "field", "words"), [
    ({"after": "2026-03-01", "before": "2026-02-01"}, "after", ["after", "before", "later"]),
    ({"after": "last tuesday"}, "after", ["after", "ISO 8601"]),
    ({"before": "2026-13-01"}, "before", ["before", "ISO 8601"]),
])
def test_bad_search_times_are_a_400_naming_them(
    agent: tuple[Server, requests.Session, str], params: dict[str, str], field: str, words: list[str],
) -> None:
    server, http, name = agent
    assert _append(server, http, name, HISTORY).status_code == 201
    answer = _search(server, http, name, q="offsite", **params)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["field"] == field and all(w in error["message"] for w in words)
    tool = http.post(server.url(f"/v1/agents/{name}/tools/journal_message_search"),
                     json={"arguments": {"query": "offsite", **params}, "conversation": "plans"})
    assert tool.status_code == 400 and tool.json()["error"]["field"] == f"arguments.{field}"
