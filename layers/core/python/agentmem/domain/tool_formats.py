"""A tool definition in the four formats model APIs take (SPEC §9), and back. Pure.

- ``bedrock``: Converse ``toolConfig.tools[]`` — ``{"toolSpec": {"name", "description", "inputSchema": {"json"}}}``
- ``openai``: Chat Completions ``tools[]`` — ``{"type": "function", "function": {"name", "description", "parameters"}}``
- ``anthropic``: Messages ``tools[]`` — ``{"name", "description", "input_schema"}``
- ``mcp``: MCP ``tools/list`` — ``{"name", "description", "inputSchema"}``
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from .errors import InvalidError
from .tools import ToolDefinition

ToolFormat = Literal["bedrock", "openai", "anthropic", "mcp"]
FORMATS: tuple[str, ...] = get_args(ToolFormat)


@dataclass(frozen=True)
class RenderedTool:
    """What a format carries of a tool: enough to compare a round trip."""

    name: str
    description: str
    input_schema: dict[str, Any]


def check_format(value: str | None) -> ToolFormat:
    if value is None:
        return "mcp"
    if value not in FORMATS:
        raise InvalidError(f"format must be one of {', '.join(FORMATS)}", field="format")
    return value  # type: ignore[return-value]


def render(tool: ToolDefinition, fmt: ToolFormat) -> dict[str, Any]:
    """The tool as ``fmt`` lists it."""
    name, description, schema = tool.name, tool.description, tool.input_schema
    if fmt == "bedrock":
        return {"toolSpec": {"name": name, "description": description, "inputSchema": {"json": schema}}}
    if fmt == "openai":
        return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
    if fmt == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    return {"name": name, "description": description, "inputSchema": schema}


def parse(rendered: dict[str, Any], fmt: ToolFormat) -> RenderedTool:
    """Read a tool back from its ``fmt`` rendering (KeyError when it is not one)."""
    if fmt == "bedrock":
        spec = rendered["toolSpec"]
        return RenderedTool(spec["name"], spec["description"], spec["inputSchema"]["json"])
    if fmt == "openai":
        if rendered.get("type") != "function":
            raise KeyError("type")
        function = rendered["function"]
        return RenderedTool(function["name"], function["description"], function["parameters"])
    if fmt == "anthropic":
        return RenderedTool(rendered["name"], rendered["description"], rendered["input_schema"])
    return RenderedTool(rendered["name"], rendered["description"], rendered["inputSchema"])
