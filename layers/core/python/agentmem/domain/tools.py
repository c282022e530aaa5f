"""The agent tools of SPEC §9: both naming dialects, their JSON Schemas, and a call's arguments
checked against the very schema published. Pure (``jsonschema`` is imported on first check, not
with this module: the API's cold start does not pay for it).

A tool call is turned into a ``ToolCall``: the operation and its normalised fields (noorle's ``key``
becomes ``name``), or an ``InvalidError`` whose ``field`` is ``arguments.<name>``.
"""

from __future__ import annotations

from copy import deepcopy
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, get_args

from .errors import InvalidError, NotFoundError
from .tool_texts import DESCRIPTIONS, parameter_text

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

Dialect = Literal["noclick", "noorle"]
Operation = Literal["search", "read", "save", "delete", "journal_search", "tool_call_view"]
DIALECTS: tuple[str, ...] = get_args(Dialect)
WRITE_OPERATIONS = frozenset({"save", "delete"})
JOURNAL_OPERATIONS = frozenset({"journal_search", "tool_call_view"})
DERIVED_DESCRIPTION_MAX = 200

# one JSON Schema per argument, with the limits of SPEC §2.1; `hint` words a pattern for an error message
_NAME = {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[a-z0-9._-]+$"}
_ARGUMENTS: dict[str, dict[str, Any]] = {
    "query": {"type": "string", "minLength": 1, "maxLength": 1000},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "memory": {"type": "string", "minLength": 1, "maxLength": 70, "pattern": "^(agent:)?[a-z0-9._-]{1,64}$"},
    "name": _NAME,
    "key": _NAME,
    "content": {"type": "string", "minLength": 1, "maxLength": 20_000},
    "description": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[^\\r\\n]+$"},
    "category": {"type": "string", "minLength": 1, "maxLength": 32, "pattern": "^[a-z0-9_]+$"},
    "importance": {"type": "number", "minimum": 0, "maximum": 1},
    "visibility": {"type": "string", "enum": ["private", "shared"]},
    "expires_at": {"type": "string", "format": "date-time", "minLength": 1, "maxLength": 64},
    "version": {"type": "integer", "minimum": 0},
    "conversation": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z0-9._:@-]+$"},
    "tool_call_id": {"type": "string", "minLength": 1, "maxLength": 256},
    "after": {"type": "string", "minLength": 1, "maxLength": 64},
    "before": {"type": "string", "minLength": 1, "maxLength": 64},
}
_PATTERN_HINTS = {
    "name": "1–64 characters of lowercase letters, digits and . _ -",
    "key": "1–64 characters of lowercase letters, digits and . _ -",
    "memory": "a memory name (1–64 characters of lowercase letters, digits and . _ -), or agent:<agent name>",
    "description": "one line",
    "category": "1–32 characters of lowercase letters, digits and _",
    "conversation": "1–128 characters of letters, digits and . _ : @ -",
}
_SAVE_OPTIONAL = ("description", "category", "importance", "visibility", "expires_at", "version", "memory")


@dataclass(frozen=True)
class _Shape:
    name: str
    dialect: Dialect
    operation: Operation
    required: tuple[str, ...]
    optional: tuple[str, ...]


_SHAPES = (
    _Shape("memory__search", "noclick", "search", ("query",), ("limit", "memory")),
    _Shape("memory__read", "noclick", "read", ("name",), ("memory",)),
    _Shape("memory__save", "noclick", "save", ("name", "content"), _SAVE_OPTIONAL),
    _Shape("memory__delete", "noclick", "delete", ("name",), ("version", "memory")),
    _Shape("memory_recall", "noorle", "search", ("query",), ("limit", "memory")),
    _Shape("memory_store", "noorle", "save", ("key", "content"), _SAVE_OPTIONAL),
    _Shape("memory_forget", "noorle", "delete", ("key",), ("version", "memory")),
    _Shape("journal_message_search", "noorle", "journal_search", ("query",),
           ("conversation", "limit", "after", "before")),
    _Shape("journal_tool_call_view", "noorle", "tool_call_view", ("tool_call_id",), ("conversation",)),
)


@dataclass(frozen=True)
class ToolDefinition:
    """One tool as a model sees it: name, what it is for, and the JSON Schema of its arguments."""

    name: str
    dialect: Dialect
    operation: Operation
    description: str
    input_schema: dict[str, Any]

    @property
    def writes(self) -> bool:
        return self.operation in WRITE_OPERATIONS

    @property
    def journal(self) -> bool:
        return self.operation in JOURNAL_OPERATIONS

    @property
    def arguments(self) -> tuple[str, ...]:
        return tuple(self.input_schema["properties"])


@dataclass(frozen=True)
class ToolCall:
    """A checked call: the operation and its arguments under one set of names, whatever the dialect."""

    tool: str
    dialect: Dialect
    operation: Operation
    name: str | None = None  # noclick `name`, noorle `key`
    query: str | None = None
    limit: int | None = None
    memory: str | None = None
    content: str | None = None
    description: str | None = None
    category: str | None = None
    importance: float | None = None
    visibility: Literal["private", "shared"] | None = None
    expires_at: str | None = None
    version: int | None = None
    conversation: str | None = None
    tool_call_id: str | None = None
    after: str | None = None  # journal_message_search's time bounds
    before: str | None = None

    @property
    def name_argument(self) -> str:
        """What this dialect calls the entry's name."""
        return "key" if self.dialect == "noorle" else "name"


def _schema(shape: _Shape) -> dict[str, Any]:
    properties = {
        argument: {**_ARGUMENTS[argument], "description": parameter_text(shape.name, shape.operation, argument)}
        for argument in (*shape.required, *shape.optional)
    }
    return {"type": "object", "properties": properties, "required": list(shape.required),
            "additionalProperties": False}


@cache
def _definitions() -> dict[str, ToolDefinition]:
    return {
        shape.name: ToolDefinition(shape.name, shape.dialect, shape.operation, DESCRIPTIONS[shape.name], _schema(shape))
        for shape in _SHAPES
    }


def check_dialect(dialect: str | None) -> Dialect:
    if dialect is None:
        return "noclick"
    if dialect not in DIALECTS:
        raise InvalidError(f"dialect must be one of {', '.join(DIALECTS)}", field="dialect")
    return dialect  # type: ignore[return-value]


def catalog(dialect: Dialect) -> list[ToolDefinition]:
    """Every tool of a dialect, in the order of SPEC §9's table (fresh copies: callers may change them)."""
    return [
        ToolDefinition(t.name, t.dialect, t.operation, t.description, deepcopy(t.input_schema))
        for t in _definitions().values() if t.dialect == dialect
    ]


def find_tool(name: str) -> ToolDefinition:
    """A tool of either dialect by name; 404 listing them all otherwise."""
    found = _definitions().get(name) if isinstance(name, str) else None
    if found is None:
        raise NotFoundError(
            f"no tool named {name!r}; the tools are {', '.join(_definitions())}", tool=name,
            tools=list(_definitions()),
        )
    return found


def parse_call(tool: str, arguments: Any) -> ToolCall:
    """Check ``arguments`` against the tool's published schema and normalise them (400 naming the argument)."""
    definition = find_tool(tool)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidError(
            f"the arguments of {definition.name} must be a JSON object ({', '.join(definition.arguments)}), "
            f"not {_json_type(arguments)}", field="arguments", tool=definition.name,
        )
    error = _first_error(definition, arguments)
    if error is not None:
        raise _invalid(definition, arguments, error)
    fields: dict[str, Any] = {}
    for argument, value in arguments.items():
        if isinstance(value, float) and _ARGUMENTS[argument]["type"] == "integer":
            value = int(value)  # JSON Schema counts 3.0 as an integer; the service wants 3
        if argument == "importance" and isinstance(value, int):
            value = float(value)
        fields["name" if argument == "key" else argument] = value
    return ToolCall(tool=definition.name, dialect=definition.dialect, operation=definition.operation, **fields)


def derive_description(content: str, fallback: str) -> str:
    """noorle's memory_store: a new entry's description from its content's first line (≤ 200 characters)."""
    for line in content.splitlines():
        text = " ".join(line.strip().lstrip("#>*-").split())
        if text:
            if len(text) > DERIVED_DESCRIPTION_MAX:
                text = text[: DERIVED_DESCRIPTION_MAX - 1].rstrip() + "…"
            return text
    return fallback


# --- checking ---------------------------------------------------------------------------------


@cache
def _validator(tool: str) -> Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_definitions()[tool].input_schema)


def _first_error(definition: ToolDefinition, arguments: dict[str, Any]) -> ValidationError | None:
    errors = sorted(_validator(definition.name).iter_errors(arguments), key=_error_order)
    return errors[0] if errors else None


def _error_order(error: ValidationError) -> tuple[int, str]:
    # unknown and missing arguments first, then the others in the order of the arguments' names
    rank = {"additionalProperties": 0, "required": 1}.get(str(error.validator), 2)
    return rank, str(error.path[0]) if error.path else ""


def _invalid(definition: ToolDefinition, arguments: dict[str, Any], error: ValidationError) -> InvalidError:
    takes = ", ".join(definition.arguments)
    kind = str(error.validator)
    if kind == "additionalProperties":
        extra = sorted(set(arguments) - set(definition.arguments))[0]
        return InvalidError(
            f"{definition.name} takes no argument {extra!r}; it takes {takes}", field=f"arguments.{extra}",
            tool=definition.name,
        )
    if kind == "required":
        missing = next(a for a in definition.input_schema["required"] if a not in arguments)
        return InvalidError(
            f"{definition.name} needs the argument {missing!r}", field=f"arguments.{missing}", tool=definition.name
        )
    argument = str(error.path[0]) if error.path else "arguments"
    return InvalidError(
        f"arguments.{argument} {_problem(argument, kind, error)}", field=f"arguments.{argument}", tool=definition.name
    )


def _problem(argument: str, kind: str, error: ValidationError) -> str:
    spec = _ARGUMENTS.get(argument, {})
    value = error.instance
    if kind == "type":
        wanted = {"string": "text", "integer": "a whole number", "number": "a number"}.get(spec.get("type", ""), "")
        return f"must be {wanted or spec.get('type')}, not {_json_type(value)}"
    if kind == "minLength":
        return f"must hold at least {spec['minLength']} character{'s' if spec['minLength'] > 1 else ''}"
    if kind == "maxLength":
        return f"is {len(value):,} characters; at most {spec['maxLength']:,} are allowed"
    if kind in ("minimum", "maximum"):
        if "maximum" in spec:
            return f"is {value}; it must be from {spec['minimum']} to {spec['maximum']}"
        return f"is {value}; it must be {spec['minimum']} or more"
    if kind == "enum":
        return f"must be one of {', '.join(spec['enum'])}, not {value!r}"
    if kind == "pattern":
        return f"{value!r} is not valid: it must be {_PATTERN_HINTS.get(argument, 'in the documented form')}"
    return f"is not valid: {error.message}"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "an array"
    return "an object"
