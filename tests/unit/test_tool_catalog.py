"""The agent tools' catalog (SPEC §9): both dialects, valid JSON Schemas, the four formats, and arguments
checked against exactly the schema that is published."""

from __future__ import annotations

from typing import Any

import pytest
from agentmem.domain.errors import InvalidError, NotFoundError
from agentmem.domain.tool_formats import FORMATS, ToolFormat, check_format, parse, render
from agentmem.domain.tools import DIALECTS, Dialect, catalog, check_dialect, derive_description, find_tool, parse_call
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

ALL_TOOLS = [tool for dialect in DIALECTS for tool in catalog(dialect)]  # type: ignore[arg-type]


def _invalid(tool: str, arguments: Any) -> InvalidError:
    with pytest.raises(InvalidError) as caught:
        parse_call(tool, arguments)
    return caught.value


def test_each_dialect_names_the_operations_as_spec_section_9_does() -> None:
    assert [(t.name, t.operation) for t in catalog("noclick")] == [
        ("memory__search", "search"), ("memory__read", "read"), ("memory__save", "save"),
        ("memory__delete", "delete"),
    ]
    assert [(t.name, t.operation) for t in catalog("noorle")] == [
        ("memory_recall", "search"), ("memory_store", "save"), ("memory_forget", "delete"),
        ("journal_message_search", "journal_search"), ("journal_tool_call_view", "tool_call_view"),
    ]


def test_the_arguments_are_the_contracts() -> None:
    arguments = {t.name: (t.input_schema["required"], t.arguments) for t in ALL_TOOLS}
    save_optional = ("description", "category", "importance", "visibility", "expires_at", "version", "memory")
    assert arguments == {
        "memory__search": (["query"], ("query", "limit", "memory")),
        "memory_recall": (["query"], ("query", "limit", "memory")),
        "memory__read": (["name"], ("name", "memory")),
        "memory__save": (["name", "content"], ("name", "content", *save_optional)),
        "memory_store": (["key", "content"], ("key", "content", *save_optional)),
        "memory__delete": (["name"], ("name", "version", "memory")),
        "memory_forget": (["key"], ("key", "version", "memory")),
        "journal_message_search": (["query"], ("query", "conversation", "limit", "after", "before")),
        "journal_tool_call_view": (["tool_call_id"], ("tool_call_id", "conversation")),
    }


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda t: t.name)
def test_every_schema_is_valid_json_schema_2020_12_and_closed(tool: Any) -> None:
    Draft202012Validator.check_schema(tool.input_schema)
    schema = tool.input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) <= set(schema["properties"])
    # every argument says what it is, so a model can fill it in
    assert all(prop.get("description") for prop in schema["properties"].values())


@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda t: t.name)
def test_every_description_says_when_to_use_the_tool(tool: Any) -> None:
    assert len(tool.description) > 100
    assert "Use it" in tool.description
    if tool.operation in ("search", "read", "save", "delete"):
        assert "Without `memory`" in tool.description  # which memory it touches by default (SPEC §3.3)


def test_the_search_tools_say_they_find_by_meaning_and_by_words() -> None:
    # recall is hybrid (SPEC §6.2): a model told "by words" would rephrase a query it need not
    searches = [t for t in ALL_TOOLS if t.operation in ("search", "journal_search")]
    assert {t.name for t in searches} == {"memory__search", "memory_recall", "journal_message_search"}
    for tool in searches:
        assert "by meaning and by words" in tool.description, tool.name


def test_the_field_limits_of_spec_2_1_are_in_the_schemas() -> None:
    props = find_tool("memory__save").input_schema["properties"]
    assert (props["name"]["minLength"], props["name"]["maxLength"]) == (1, 64)
    assert props["name"]["pattern"] == "^[a-z0-9._-]+$"
    assert props["description"]["maxLength"] == 200
    assert (props["content"]["minLength"], props["content"]["maxLength"]) == (1, 20_000)
    assert (props["importance"]["minimum"], props["importance"]["maximum"]) == (0, 1)
    assert props["visibility"]["enum"] == ["private", "shared"]
    limit = find_tool("memory__search").input_schema["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"]) == (1, 100)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("tool", ALL_TOOLS, ids=lambda t: t.name)
def test_every_tool_round_trips_through_every_format(tool: Any, fmt: ToolFormat) -> None:
    back = parse(render(tool, fmt), fmt)
    assert (back.name, back.description, back.input_schema) == (tool.name, tool.description, tool.input_schema)


def test_the_formats_have_the_shapes_the_model_apis_take() -> None:
    tool = find_tool("memory__read")
    schema = tool.input_schema
    assert render(tool, "bedrock") == {
        "toolSpec": {"name": "memory__read", "description": tool.description, "inputSchema": {"json": schema}}
    }
    assert render(tool, "openai") == {
        "type": "function", "function": {"name": "memory__read", "description": tool.description, "parameters": schema}
    }
    described = {"name": "memory__read", "description": tool.description}
    assert render(tool, "anthropic") == {**described, "input_schema": schema}
    assert render(tool, "mcp") == {**described, "inputSchema": schema}


def test_a_catalog_is_a_copy_callers_may_change() -> None:
    catalog("noclick")[0].input_schema["properties"].clear()
    assert catalog("noclick")[0].input_schema["properties"]


def test_dialect_and_format_default_and_are_checked() -> None:
    assert (check_dialect(None), check_format(None)) == ("noclick", "mcp")
    with pytest.raises(InvalidError) as dialect:
        check_dialect("klingon")
    with pytest.raises(InvalidError) as fmt:
        check_format("xml")
    assert (dialect.value.details["field"], fmt.value.details["field"]) == ("dialect", "format")


def test_an_unknown_tool_is_404_listing_the_tools_of_both_dialects() -> None:
    with pytest.raises(NotFoundError) as caught:
        parse_call("memory.search", {"query": "x"})
    assert caught.value.status == 404
    assert caught.value.details["tools"] == [t.name for t in ALL_TOOLS]
    assert "memory__search" in caught.value.message and "memory_recall" in caught.value.message


def test_noorle_key_becomes_name_and_the_call_is_normalised() -> None:
    call = parse_call("memory_store", {"key": "plan", "content": "Team plan", "importance": 1, "version": 2.0})
    assert (call.operation, call.dialect, call.name, call.content) == ("save", "noorle", "plan", "Team plan")
    assert call.importance == 1.0 and isinstance(call.importance, float)
    assert call.version == 2 and isinstance(call.version, int)
    assert call.name_argument == "key"
    forget = parse_call("memory_forget", {"key": "plan", "memory": "agent:support"})
    assert (forget.operation, forget.name, forget.memory) == ("delete", "plan", "agent:support")
    assert parse_call("memory__delete", {"name": "plan"}).name_argument == "name"


def test_missing_arguments_are_an_empty_object() -> None:
    assert _invalid("memory__search", None).details["field"] == "arguments.query"


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "words"),
    [
        ("memory__search", ["refunds"], "arguments", "must be a JSON object"),
        ("memory__search", "refunds", "arguments", "must be a JSON object"),
        ("memory__search", {}, "arguments.query", "needs the argument 'query'"),
        ("memory__search", {"query": "x", "q": "y"}, "arguments.q", "takes no argument 'q'"),
        ("memory__search", {"query": ""}, "arguments.query", "at least 1 character"),
        ("memory__search", {"query": "x", "limit": 0}, "arguments.limit", "from 1 to 100"),
        ("memory__search", {"query": "x", "limit": 101}, "arguments.limit", "from 1 to 100"),
        ("memory__search", {"query": "x", "limit": "10"}, "arguments.limit", "must be a whole number, not text"),
        ("memory__search", {"query": "x", "limit": True}, "arguments.limit", "not a boolean"),
        ("memory__search", {"query": "x", "limit": 2.5}, "arguments.limit", "whole number"),
        ("memory__search", {"query": "x", "memory": "Company"}, "arguments.memory", "memory name"),
        ("memory__read", {"name": "Refunds"}, "arguments.name", "lowercase letters"),
        ("memory__read", {"name": "x" * 65}, "arguments.name", "at most 64"),
        ("memory__read", {"name": None}, "arguments.name", "must be text, not null"),
        ("memory__save", {"name": "a"}, "arguments.content", "needs the argument 'content'"),
        ("memory__save", {"name": "a", "content": "x" * 20_001}, "arguments.content", "at most 20,000"),
        ("memory__save", {"name": "a", "content": "c", "description": "d" * 201}, "arguments.description",
         "at most 200"),
        ("memory__save", {"name": "a", "content": "c", "importance": 1.5}, "arguments.importance", "from 0 to 1"),
        ("memory__save", {"name": "a", "content": "c", "visibility": "read_only"}, "arguments.visibility",
         "one of private, shared"),
        ("memory__save", {"name": "a", "content": "c", "category": "User Profile"}, "arguments.category",
         "lowercase letters"),
        ("memory__save", {"name": "a", "content": "c", "version": -1}, "arguments.version", "0 or more"),
        ("memory_store", {"name": "a", "content": "c"}, "arguments.name", "takes no argument 'name'"),
        ("memory_store", {"content": "c"}, "arguments.key", "needs the argument 'key'"),
        ("memory_forget", {"key": "a", "content": "c"}, "arguments.content", "takes no argument 'content'"),
        ("journal_message_search", {"query": "x", "conversation": "a b"}, "arguments.conversation", "letters"),
        ("journal_tool_call_view", {}, "arguments.tool_call_id", "needs the argument 'tool_call_id'"),
    ],
)
def test_bad_arguments_are_400_naming_the_argument(tool: str, arguments: Any, field: str, words: str) -> None:
    error = _invalid(tool, arguments)
    assert error.status == 400
    assert error.details["field"] == field
    assert words in error.message


def test_an_unknown_argument_is_named_before_a_missing_one() -> None:
    error = _invalid("memory__save", {"nme": "typo", "content": "c"})
    assert error.details["field"] == "arguments.nme"
    assert "it takes name, content" in error.message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("# Team plan\nBilled yearly.", "Team plan"),
        ("\n\n  Ana   prefers email  \nmore", "Ana prefers email"),
        ("- a list item", "a list item"),
        ("x" * 300, "x" * 199 + "…"),
        ("   \n  ", "fallback-name"),
    ],
)
def test_a_missing_noorle_description_comes_from_the_contents_first_line(content: str, expected: str) -> None:
    derived = derive_description(content, fallback="fallback-name")
    assert derived == expected
    assert len(derived) <= 200 and "\n" not in derived


def test_the_noorle_store_says_it_derives_a_missing_description() -> None:
    assert "first line" in find_tool("memory_store").description
    assert "first line" not in find_tool("memory__save").description
    assert "needs a one-line `description`" in find_tool("memory__save").description


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 200) | st.floats(-2, 2, allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=4,
)
_names = st.sampled_from(["query", "limit", "memory", "name", "key", "content", "description", "category",
                          "importance", "visibility", "version", "conversation", "tool_call_id", "other"])
_values = _json | st.sampled_from(["plan", "agent:support", "note", "private", "shared", "a b", "x" * 70])


@settings(max_examples=300, deadline=None)
@given(tool=st.sampled_from([t.name for t in ALL_TOOLS]), arguments=st.dictionaries(_names, _values, max_size=4))
def test_what_is_published_is_what_is_enforced(tool: str, arguments: dict[str, Any]) -> None:
    # A call is accepted exactly when the published schema accepts its arguments
    schema_accepts = Draft202012Validator(find_tool(tool).input_schema).is_valid(arguments)
    try:
        parse_call(tool, arguments)
        accepted = True
    except InvalidError as error:
        accepted = False
        assert str(error.details["field"]).startswith("arguments")
    assert accepted == schema_accepts


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_tool_of_a_dialect_is_found_by_its_name(dialect: Dialect) -> None:
    for tool in catalog(dialect):
        assert find_tool(tool.name).dialect == dialect
