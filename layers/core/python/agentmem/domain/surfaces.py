"""Surfaces and who may write: the table of SPEC §7. Pure.

A surface is where a conversation happens; it decides what an agent may write, whether the
conversation keeps a checkpoint, whether the journal tools exist, and whether the account's
memories are attached at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from .errors import InvalidError

Surface = Literal["agent", "mcp", "external", "test", "browser"]
SURFACES: tuple[str, ...] = get_args(Surface)


@dataclass(frozen=True)
class SurfaceRules:
    surface: Surface
    anonymous: bool  # no user: the conversation is with the account itself (or an anonymous MCP client)
    writes: bool  # may the agent create or change entries at all
    private_layer: bool  # is there a user layer to write (anonymous MCP has none)
    checkpoint: bool
    journal_tools: bool
    account_memories: bool  # are memories owned by the account attached (a browser never sees them)
    account_memories_writable: bool = True  # anonymous MCP reads attached account memories, never writes them

    @property
    def read_only(self) -> bool:
        return not self.writes


def check_surface(surface: str | None) -> Surface:
    if surface is None:
        return "agent"
    if surface not in SURFACES:
        raise InvalidError(f"surface must be one of {', '.join(SURFACES)}", field="surface")
    return surface  # type: ignore[return-value]


def surface_rules(surface: Surface, user: str | None) -> SurfaceRules:
    """SPEC §7, one row per surface; ``mcp`` splits on whether a user is authenticated."""
    anonymous = user is None
    if surface == "agent":
        return SurfaceRules(surface, anonymous, True, True, True, True, True)
    if surface == "mcp":
        if anonymous:
            return SurfaceRules(surface, True, True, False, False, False, True, account_memories_writable=False)
        return SurfaceRules(surface, False, True, True, True, False, True)
    if surface == "external":
        return SurfaceRules(surface, anonymous, False, False, False, False, True)
    if surface == "test":
        return SurfaceRules(surface, anonymous, False, False, False, True, True)
    return SurfaceRules(surface, anonymous, True, True, True, False, False)  # browser
