"""Who may touch which layer: the scope rules of SPEC §2.3, §3.1 and §10. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import ForbiddenError, InvalidError, NotFoundError
from .models import Entry, Layer, MemoryRecord, Principal, Visibility
from .rules import check_user_id


def acting_user(principal: Principal, requested: str | None) -> str | None:
    """The user a call acts for: a user key implies its user and can act for no other."""
    if requested is not None:
        check_user_id(requested)
    if principal.kind == "user":
        if requested is not None and requested != principal.user_id:
            raise ForbiddenError(f"this key acts for user {principal.user_id!r} only")
        return principal.user_id
    return requested


def require_account_key(principal: Principal, what: str) -> None:
    if principal.kind != "account":
        raise ForbiddenError(f"{what} needs an account key; this is a user key")


def can_see_memory(memory: MemoryRecord, user: str | None, principal: Principal) -> bool:
    """The account's memories are seen by everyone in it; a user's only by that user (or an account key)."""
    if memory.user_id is None:
        return True
    if principal.kind == "account" and user is None:
        return True
    return memory.user_id == user


def entry_layer(memory: MemoryRecord, user: str | None, principal: Principal) -> Layer:
    """The one layer a list/read/save/delete acts on. A user's memory has only its user's layer."""
    if not can_see_memory(memory, user, principal):
        raise NotFoundError(f"no memory named {memory.name!r}")
    if memory.user_id is not None:
        return Layer(memory.account_id, memory.name, memory.user_id)
    return Layer(memory.account_id, memory.name, user)


def visible_layers(memory: MemoryRecord, user: str | None, principal: Principal) -> list[Layer]:
    """Layers a search sees, the user's first: the user's and the account's of an account memory."""
    own = entry_layer(memory, user, principal)
    if memory.user_id is None and own.user_id is not None:
        return [own, Layer(memory.account_id, memory.name, None)]
    return [own]


def layer_visibility(layer: Layer, requested: Visibility | None) -> Visibility:
    """A body ``visibility`` must agree with the layer the call chose (SPEC §2.1)."""
    if layer.user_id is not None:
        if requested not in (None, "private"):
            raise InvalidError(
                f"visibility {requested!r} does not fit a user's layer; user layers hold private entries "
                "(leave out user= to write the account layer)",
                field="visibility",
            )
        return "private"
    if requested == "private":
        raise InvalidError(
            "visibility 'private' needs a user layer: pass user= to save into that user's layer",
            field="visibility",
        )
    return requested or "shared"


WriteOperation = Literal["save", "delete"]


def check_read_only(layer: Layer, name: str, *, own: Entry | None, shared: Entry | None, agent: bool) -> None:
    """The one rule for ``read_only`` account entries (SPEC §2.1, §2.3), on every path (REST with any key, the
    agent tools in both dialects, MCP, the flush): ``layer`` is the layer a write of ``name`` lands in, ``own``
    that layer's entry of the name, ``shared`` the account layer's (None for a user's own memory).

    - Nobody makes a user's copy of a ``read_only`` entry: a save into a user's layer of a name the account
      holds ``read_only``, that the layer does not hold yet, is refused (403 ``read_only``), whatever the key.
      So a ``read_only`` entry is never shadowed, and every reader (read, search, the pinned block, the memory
      index) shows the account's. (A user's entry of that name from before the account's became
      ``read_only`` stays the user's: it is saved and deleted as before.)
    - An agent never changes or deletes one in the account layer; the API and the console do.
    """
    if shared is None or shared.visibility != "read_only":
        return
    if layer.user_id is not None:
        if own is None:
            raise ForbiddenError(
                f"{name!r} is the account's read_only entry: it has one version for everyone, and a user's copy "
                "of it is never made (the account changes it, in its own layer)", reason="read_only",
            )
        return
    if agent:
        raise ForbiddenError(f"{name!r} is read_only: agents read it but never change it", reason="read_only")


@dataclass(frozen=True)
class AgentWrite:
    """An agent writing in one of its conversations (its tools, MCP, the pre-compaction flush)."""

    user: str | None  # the conversation's user; None: a conversation with the account itself
    write_shared: bool = False  # the agent's ``user_conversations_write_shared``


def check_requested_visibility(principal: Principal, visibility: Visibility | None) -> None:
    """A save that asks for the account layer (``shared``, ``read_only``) with a user key is refused before
    anything else is looked at: the same rule as ``check_layer_write``, on what the body asks for."""
    if principal.kind == "user" and visibility in ("shared", "read_only"):
        raise ForbiddenError(
            "a user key never writes the account layer, where shared and read_only entries live; its saves go "
            "to its user's layer", reason="account_layer",
        )


def check_layer_write(
    principal: Principal, layer: Layer, operation: WriteOperation, *, agent: AgentWrite | None = None
) -> None:
    """Who may change which layer (SPEC §2.3, §10): the one rule every write path goes through.

    A user key never saves or deletes in the account layer, nor in another user's layer, by any path.
    An agent in a user's conversation changes that user's layer only, except that an agent set
    ``user_conversations_write_shared`` may *save* (never delete) in the account layer there.
    Raises ForbiddenError (403) with a ``reason``; returns when the write may go ahead.
    """
    if principal.kind == "user":
        if layer.user_id is None:
            raise ForbiddenError(
                "a user key never writes or deletes in the account layer; its writes go to its user's layer",
                reason="account_layer",
            )
        if layer.user_id != principal.user_id:
            raise ForbiddenError(f"this key acts for user {principal.user_id!r} only", reason="other_user")
    if agent is None or agent.user is None:
        return  # the API acting for the account or a user, or an agent talking with the account itself
    if layer.user_id is None:
        if operation == "delete":
            raise ForbiddenError(
                "in a user's conversation the agent deletes only that user's entries; this one is the account's",
                reason="account_entry",
            )
        if not agent.write_shared:
            raise ForbiddenError(
                "in a user's conversation the agent writes only that user's layer (the agent is not set "
                "user_conversations_write_shared)", reason="account_entry",
            )
    elif layer.user_id != agent.user:
        raise ForbiddenError(f"in user {agent.user!r}'s conversation the agent writes only that user's layer",
                             reason="other_user")
