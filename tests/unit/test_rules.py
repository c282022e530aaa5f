"""The field rules and bold numbers of SPEC §2.1, §2.4, §6.1 at their boundaries (agentmem.domain.rules)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from agentmem.domain import rules
from agentmem.domain.clock import iso
from agentmem.domain.errors import InvalidError

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def refused(check: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """Run a check that must refuse its input; return the field the 400 names."""
    with pytest.raises(InvalidError) as invalid:
        check(*args, **kwargs)
    assert invalid.value.status == 400
    assert invalid.value.message
    field = invalid.value.details["field"]
    assert isinstance(field, str)
    return field


def test_the_contract_numbers() -> None:
    # Given / When / Then the bold numbers of the spec are what the rules enforce
    assert rules.NAME_MAX == 64
    assert rules.DESCRIPTION_MAX == 200
    assert rules.CONTENT_MAX == 20_000
    assert rules.LAYER_LIMIT == 500
    assert rules.SEARCH_LIMIT_DEFAULT == 10
    assert rules.SEARCH_LIMIT_MAX == 100
    assert rules.LIST_LIMIT_MAX == 100
    assert rules.HISTORY_DAYS == 30
    assert rules.TRASH_DAYS == 30
    assert (rules.DEFAULT_CATEGORY, rules.DEFAULT_IMPORTANCE) == ("note", 0.5)


# -- names ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["a", "n" * 64, "refund-policy", "eu.shipping_rules", "v2.0-final", "context", "contexts.x"]
)
def test_a_name_of_1_to_64_allowed_characters_is_accepted(name: str) -> None:
    # Given / When / Then
    assert rules.check_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "n" * 65, "Refund", "refund policy", "refund/policy", "émile", "tab\there", "line\n", "a:b", "ü"]
)
def test_a_name_outside_the_rules_is_refused_naming_the_field(name: str) -> None:
    # Given / When / Then
    assert refused(rules.check_name, name) == "name"


def test_a_name_error_names_the_field_it_was_given() -> None:
    # Given / When a memory name is checked with the entry rules
    # Then the error names the memory
    assert refused(rules.check_name, "Bad", field="memory") == "memory"


def test_names_starting_context_dot_are_reserved_for_checkpoints() -> None:
    # Given / When an entry is named like a checkpoint
    # Then it is refused, unless the checkpoint writer asks for it
    assert refused(rules.check_name, "context.summary") == "name"
    assert refused(rules.check_name, "context.") == "name"
    assert rules.check_name("context.summary", allow_checkpoint=True) == "context.summary"


def test_a_name_that_is_not_a_string_is_refused() -> None:
    # Given / When / Then
    assert refused(rules.check_name, 42) == "name"
    assert refused(rules.check_name, None) == "name"


def test_memory_names_follow_the_entry_rules_and_agent_memories_are_named_agent_colon() -> None:
    # Given / When / Then
    assert rules.check_memory_name("company") == "company"
    assert rules.check_memory_name("agent:support-bot") == "agent:support-bot"
    assert rules.check_memory_name("m" * 64) == "m" * 64
    for bad in ["agent:", "agent:Bad", "Company", "m" * 65, "context.x", "agent:" + "a" * 65]:
        assert refused(rules.check_memory_name, bad) == "memory"


# -- user ids ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("user", ["a", "u" * 128, "ana", "Ana.Lopez", "user_7", "tenant:42", "ana@example.com", "a-b"])
def test_a_user_id_of_1_to_128_allowed_characters_is_accepted(user: str) -> None:
    # Given / When / Then
    assert rules.check_user_id(user) == user


@pytest.mark.parametrize("user", ["", "u" * 129, "ana lopez", "ana/lopez", "ana#1", "anä", "ana\n", "a+b"])
def test_a_user_id_outside_the_rules_is_refused_naming_user(user: str) -> None:
    # Given / When / Then
    assert refused(rules.check_user_id, user) == "user"


def test_a_user_id_that_is_not_a_string_is_refused() -> None:
    # Given / When / Then
    assert refused(rules.check_user_id, 7) == "user"


# -- description ------------------------------------------------------------------------------------------


def test_a_description_up_to_200_characters_is_accepted() -> None:
    # Given / When / Then
    assert rules.check_description("d") == "d"
    assert rules.check_description("d" * 200) == "d" * 200


@pytest.mark.parametrize("description", ["d" * 201, "", "   ", "two\nlines", "carriage\rreturn"])
def test_a_description_too_long_empty_or_of_several_lines_is_refused(description: str) -> None:
    # Given / When / Then
    assert refused(rules.check_description, description) == "description"


# -- content ----------------------------------------------------------------------------------------------


def test_content_of_1_to_20000_characters_is_accepted() -> None:
    # Given / When / Then: multi-line Markdown included
    assert rules.check_content("x") == "x"
    assert rules.check_content("x" * 20_000) == "x" * 20_000
    assert rules.check_content("# Title\n\n- one\n- two") == "# Title\n\n- one\n- two"


@pytest.mark.parametrize("content", ["", "x" * 20_001])
def test_empty_content_or_over_20000_characters_is_refused(content: str) -> None:
    # Given / When / Then
    assert refused(rules.check_content, content) == "content"


def test_content_is_counted_in_characters_not_bytes() -> None:
    # Given 20,000 characters of two bytes each in UTF-8
    # When / Then it is accepted
    assert len(rules.check_content("é" * 20_000)) == 20_000


# -- category ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("category", ["note", "user_profile", "fact", "procedure", "c", "c" * 32, "tier_2"])
def test_a_category_of_1_to_32_lowercase_letters_digits_or_underscores_is_accepted(category: str) -> None:
    # Given / When / Then
    assert rules.check_category(category) == category


@pytest.mark.parametrize("category", ["", "c" * 33, "User_profile", "user-profile", "user profile", "fact.", "fäct"])
def test_a_category_outside_the_rules_is_refused_naming_category(category: str) -> None:
    # Given / When / Then
    assert refused(rules.check_category, category) == "category"


# -- importance -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("importance", "stored"), [(0.0, 0.0), (1.0, 1.0), (0.5, 0.5), (0, 0.0), (1, 1.0)])
def test_importance_from_0_to_1_is_accepted_as_a_float(importance: float, stored: float) -> None:
    # Given / When
    result = rules.check_importance(importance)

    # Then
    assert result == stored
    assert isinstance(result, float)


@pytest.mark.parametrize("importance", [1.01, -0.01, 2, True, False, "0.5", None, float("nan"), float("inf")])
def test_importance_outside_0_to_1_or_not_a_number_is_refused(importance: Any) -> None:
    # Given / When / Then
    assert refused(rules.check_importance, importance) == "importance"


# -- limits and versions ----------------------------------------------------------------------------------


def test_a_search_limit_defaults_to_10_and_goes_up_to_100() -> None:
    # Given / When / Then
    limit = {"default": rules.SEARCH_LIMIT_DEFAULT, "maximum": rules.SEARCH_LIMIT_MAX}
    assert rules.check_limit(None, **limit) == 10
    assert rules.check_limit(1, **limit) == 1
    assert rules.check_limit(100, **limit) == 100


@pytest.mark.parametrize("limit", [101, 0, -1, True, 10.0, "10"])
def test_a_limit_outside_1_to_100_or_not_a_whole_number_is_refused(limit: Any) -> None:
    # Given / When / Then
    assert refused(rules.check_limit, limit, default=10, maximum=100) == "limit"


def test_a_list_limit_also_stops_at_100() -> None:
    # Given / When / Then
    limit = {"default": rules.LIST_LIMIT_DEFAULT, "maximum": rules.LIST_LIMIT_MAX}
    assert rules.check_limit(100, **limit) == 100
    assert refused(rules.check_limit, 101, **limit) == "limit"


def test_a_version_is_a_whole_number_from_0() -> None:
    # Given / When / Then: 0 means "must not exist"
    assert rules.check_version(0) == 0
    assert rules.check_version(7) == 7
    for bad in (-1, True, 1.0, "1", None):
        assert refused(rules.check_version, bad) == "version"


# -- expires_at -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2026-03-03T09:00:00Z", "2026-03-03T09:00:00.000000Z"),
        ("2026-03-03T09:00:00z", "2026-03-03T09:00:00.000000Z"),
        ("2026-03-03T09:00:00+00:00", "2026-03-03T09:00:00.000000Z"),
        ("2026-03-03T11:00:00+02:00", "2026-03-03T09:00:00.000000Z"),
        ("2026-03-03T04:00:00-05:00", "2026-03-03T09:00:00.000000Z"),
        ("2026-03-03T09:00:00.250Z", "2026-03-03T09:00:00.250000Z"),
        ("2026-03-03T09:00:00", "2026-03-03T09:00:00.000000Z"),  # no offset: taken as UTC
        ("2026-03-03 09:00:00Z", "2026-03-03T09:00:00.000000Z"),
        ("2026-03-03", "2026-03-03T00:00:00.000000Z"),
        # RFC 3339 date-times, what the OpenAPI document's `format: date-time` promises
        ("2026-03-03t09:00:00.123456789Z", "2026-03-03T09:00:00.123456Z"),  # past microseconds: cut
        ("2026-06-30T23:59:60Z", "2026-07-01T00:00:00.000000Z"),  # a leap second
        ("2026-06-30T23:59:60.5-00:00", "2026-07-01T00:00:00.500000Z"),
        ("2026-12-31T18:59:60-05:00", "2027-01-01T00:00:00.000000Z"),
    ],
)
def test_an_iso_8601_expiry_in_the_future_is_accepted_and_stored_as_utc(given: str, stored: str) -> None:
    # Given / When / Then
    assert rules.check_expires_at(given, NOW) == stored


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime(2026, 3, 3, 9, 0, tzinfo=UTC), "2026-03-03T09:00:00.000000Z"),  # a whole second keeps its fraction
        (datetime(2026, 3, 3, 9, 0, 0, 7, tzinfo=UTC), "2026-03-03T09:00:00.000007Z"),
        (datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "2026-12-31T23:59:59.999999Z"),
        (datetime(2027, 1, 1, 1, 30, tzinfo=timezone(timedelta(hours=2))), "2026-12-31T23:30:00.000000Z"),
        (datetime(999, 1, 2, 3, 4, 5, 6, tzinfo=UTC), "999-01-02T03:04:05.000006Z"),  # as strftime writes it
        (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), "9999-12-31T23:59:59.000000Z"),
    ],
)
def test_a_moment_is_written_in_utc_with_microseconds_and_a_z(moment: datetime, text: str) -> None:
    # Given / When / Then every stored time has one shape, sortable as text
    assert iso(moment) == text


@pytest.mark.parametrize(
    "given",
    [
        "next tuesday",
        "",
        "2026-13-01T00:00:00Z",
        "2026-03-03T25:00:00Z",
        "2026-03-03T09:60:00Z",  # 60 is a second only
        "2026-03-03T09:00:61Z",
        "03/03/2026",
        "1772528400",
        "2026-03-01T09:00:00Z",  # yesterday
        "2026-03-02T09:00:00Z",  # exactly now
        "2026-03-02T10:00:00+02:00",  # an hour ago, written in another zone
    ],
)
def test_an_expiry_not_in_iso_8601_or_not_in_the_future_is_refused(given: str) -> None:
    # Given / When / Then
    assert refused(rules.check_expires_at, given, NOW) == "expires_at"


def test_an_expiry_a_moment_after_now_is_accepted() -> None:
    # Given / When / Then
    moment = NOW + timedelta(microseconds=1)
    assert rules.check_expires_at(moment.isoformat(), NOW) == "2026-03-02T09:00:00.000001Z"


# -- wrong types (an agent tool's arguments arrive as whatever JSON the model wrote) ----------------------


@pytest.mark.parametrize(
    ("check", "args", "field"),
    [
        (rules.check_content, (12345,), "content"),
        (rules.check_content, (None,), "content"),
        (rules.check_content, (["a list"],), "content"),
        (rules.check_description, (12345,), "description"),
        (rules.check_description, (None,), "description"),
        (rules.check_category, (7,), "category"),
        (rules.check_category, (None,), "category"),
        (rules.check_expires_at, (1772528400, NOW), "expires_at"),
        (rules.check_expires_at, (None, NOW), "expires_at"),
        (rules.check_memory_name, (5,), "memory"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_the_field(
    check: Callable[..., Any], args: tuple[Any, ...], field: str
) -> None:
    # Given / When / Then: a 400 naming the field, never an unexpected error
    assert refused(check, *args) == field


@pytest.mark.parametrize("name", [".", "..", "...", "." * 63])
def test_a_name_made_only_of_dots_is_refused(name: str) -> None:
    # Given a name of allowed characters that is only dots ("%2e%2e" in a URL arrives as "..")
    # When / Then it is refused: it names this folder or its parent, no entry
    assert refused(rules.check_name, name) == "name"
    assert refused(rules.check_memory_name, name) == "memory"
    assert refused(rules.check_memory_name, f"agent:{name}") == "memory"
    # while dots beside other characters are fine
    assert rules.check_name(f"{name}a") == f"{name}a"


@pytest.mark.parametrize("code", [*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F, *range(0x80, 0xA0)])
def test_content_and_descriptions_holding_nul_or_another_control_character_are_refused(code: int) -> None:
    # Given text holding a control character
    text = f"before{chr(code)}after"
    # When / Then it is refused, naming the field
    assert refused(rules.check_content, text) == "content"
    assert refused(rules.check_description, text) == "description"


def test_tabs_and_line_breaks_are_text() -> None:
    # Given / When / Then tab, line feed, carriage return, vertical tab and form feed are kept as text
    assert rules.check_content("a\tb\nc\r\nd\x0be\x0cf") == "a\tb\nc\r\nd\x0be\x0cf"
