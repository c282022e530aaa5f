"""Input that is not Unicode text, times outside what a datetime holds, and a link's numbers, at the places that
read them: the one reading of a JSON body (``api/json_body.py``, which MCP's protocol reads with too), the
request's query values (``api/validation.py``, through the real handler in process), ``parse_iso`` and
``check_expires_at``, and a link's verification. ``tests/functional/test_bad_unicode.py`` sends the same over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from agentmem.adapters.embedded.links import LinkRefusedError, LinkSigner
from agentmem.api.app import lambda_handler
from agentmem.api.json_body import read_json, read_json_body
from agentmem.bootstrap import build_container, ensure_default_account, set_container
from agentmem.domain.clock import TimeOutOfRangeError, parse_iso
from agentmem.domain.errors import InvalidError
from agentmem.domain.rules import check_expires_at
from agentmem.local.events import build_rest_event
from agentmem.local.server import LocalContext
from agentmem.settings import Settings

NOW = datetime(2026, 12, 6, tzinfo=UTC)

# -- a JSON body ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "field"), [
    ('{"instructions": "\\ud800"}', "instructions"),
    ('{"instructions": "ok \\udfff"}', "instructions"),
    ('{"instructions": "\\ude00\\ud83d"}', "instructions"),  # the two halves, in the wrong order
    ('{"messages": [{"role": "user", "content": "hi"}, {"tool_call_id": "\\udbff"}]}', "messages[1].tool_call_id"),
    ('{"arguments": {"\\ud800": 1}}', "arguments"),  # a member's name: the object is named
    ('{"result": [1, ["\\ud800"]]}', "result[1][0]"),
    ('"\\ud800"', "body"),
])
def test_a_lone_surrogate_is_refused_naming_where_it_is(text: str, field: str) -> None:
    with pytest.raises(InvalidError) as refused:
        read_json(text)
    assert refused.value.details["field"] == field
    assert field in refused.value.message and "Unicode" in refused.value.message
    refused.value.message.encode("utf-8")  # the message itself is text an answer can carry


@pytest.mark.parametrize(("text", "value"), [
    ('{"a": "\\ud83d\\ude00"}', {"a": "\U0001f600"}),  # a whole pair, as ensure_ascii writes it
    ('{"a": "\\\\ud800"}', {"a": "\\ud800"}),  # a backslash, then six letters and digits
    ('{"\\ud83d\\ude00": "\\uD83D\\uDE00"}', {"\U0001f600": "\U0001f600"}),
    ('{"a": "\\ufffd \\ud7ff \\ue000"}', {"a": "\ufffd \ud7ff \ue000"}),  # around the surrogates
])
def test_text_with_whole_pairs_is_read_as_it_is(text: str, value: dict[str, Any]) -> None:
    assert read_json_body(text) == value


def test_the_object_check_still_holds_and_any_value_reads_with_read_json() -> None:
    assert read_json("[1, 2]") == [1, 2]
    with pytest.raises(InvalidError, match="must be a JSON object"):
        read_json_body("[1, 2]")


# -- query values, through the handler -----------------------------------------------------------------------


@pytest.fixture
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    container = build_container(Settings(data_dir=tmp_path))
    secret = ensure_default_account(container)
    set_container(container)
    yield secret
    set_container(None)


def call(key: str, method: str, path: str, query: str = "") -> tuple[int, Any]:
    result = lambda_handler(build_rest_event(method, path, query, {"Authorization": f"Bearer {key}"}),
                            LocalContext())
    return int(result["statusCode"]), json.loads(result.get("body") or "null")


@pytest.mark.parametrize("query", ["q=%ED%A0%80", "q=refunds%FF", "q=%C3", "q=ok&limit=%ED%B0%80"])
def test_a_query_value_that_is_not_utf8_is_refused_naming_it(key: str, query: str) -> None:
    assert call(key, "PUT", "/v1/memories/m")[0] == 201
    status, body = call(key, "GET", "/v1/memories/m/search", query)
    assert status == 400, body
    named = query.rsplit("&", 1)[-1].split("=", 1)[0]
    assert body["error"]["field"] == named and "UTF-8" in body["error"]["message"], body


def test_a_query_value_in_utf8_is_searched_for(key: str) -> None:
    assert call(key, "PUT", "/v1/memories/m")[0] == 201
    assert call(key, "GET", "/v1/memories/m/search", "q=%C3%A9t%C3%A9")[0] == 200


# -- times -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["9999-12-31T23:59:60Z", "9999-12-31T23:59:59-23:59",
                                  "9999-12-31T23:59:59.999999-00:01", "0001-01-01T00:00:00+01:00",
                                  "9999-12-31T23:59:60.5+00:00"])
def test_a_time_outside_the_years_1_to_9999_in_utc_is_out_of_range(text: str) -> None:
    with pytest.raises(TimeOutOfRangeError):
        parse_iso(text)
    with pytest.raises(InvalidError, match="outside the times the service can hold") as refused:
        check_expires_at(text, NOW)
    assert refused.value.details["field"] == "expires_at"


@pytest.mark.parametrize(("text", "stored"), [
    ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"),
    ("9999-12-31T23:59:59+00:00", "9999-12-31T23:59:59.000000Z"),
    ("9999-12-31T23:59:59+01:00", "9999-12-31T22:59:59.000000Z"),
    ("9999-12-31T22:59:60Z", "9999-12-31T23:00:00.000000Z"),
])
def test_the_last_times_a_store_holds_are_taken(text: str, stored: str) -> None:
    assert check_expires_at(text, NOW) == stored


# -- a link's numbers ------------------------------------------------------------------------------------------


def _terms(url: str) -> tuple[str, dict[str, str]]:
    path, _, query = url.partition("?")
    return path.removeprefix("/v1/links/"), dict(part.split("=", 1) for part in query.split("&"))


NOT_AS_SIGNED = {"plus": "+{}", "leading-zero": "0{}", "underscore": "{first}_{rest}", "space-before": " {}",
                 "space-after": "{} ", "arabic-zero": "\u0660{}"}


@pytest.mark.parametrize("rewrite", NOT_AS_SIGNED.values(), ids=NOT_AS_SIGNED.keys())
@pytest.mark.parametrize("name", ["expires", "size"])
def test_a_links_number_verifies_only_as_it_was_signed(name: str, rewrite: str) -> None:
    # Given an upload link of 12 bytes (each number of two digits or more), which verifies
    signer = LinkSigner(b"s" * 32, clock=lambda: 1_000.0)
    key, terms = _terms(signer.sign("w/a/f/x.bin", method="PUT", expires_in_s=60, size=12))
    assert signer.verify("PUT", key, terms).size == 12
    # When one of its numbers is written otherwise (the same integer, as int() reads it)
    digits = terms[name]
    bent = rewrite.format(digits, first=digits[0], rest=digits[1:])
    assert int(bent) == int(digits)
    # Then the link does not verify
    with pytest.raises(LinkRefusedError):
        signer.verify("PUT", key, {**terms, name: bent})
