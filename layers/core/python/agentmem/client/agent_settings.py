"""An agent's settings as the SDK takes them, and the PUT body they become.

``memories=[company, notes.writable(), "faq"]``: a ``Memory``, a memory's name or an
``Agent`` (its own memory) attaches read-only; ``Memory.writable()`` (a ``MemoryAttachment``,
or any ``(name, writable)`` pair) attaches writable. ``capabilities={"memory": False}`` and
``memory=False`` say the same thing.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Union

from .models import MemoryAttachment

if TYPE_CHECKING:
    from .agent import Agent
    from .memory import Memory
    from .models import AgentInfo

AttachmentLike = Union["Memory", "Agent", str, tuple[str, bool]]


class AgentSettings(TypedDict, total=False):
    """What ``Agent.create`` / ``from_name`` / ``update`` take besides the name and scope.

    ``window_messages`` (1..20) lowers the recent-message window; ``context`` holds the summary
    thresholds (``summary_tokens``, ``summary_messages``); ``anonymous_private_writes`` is
    ``"refuse"`` (an anonymous MCP caller's private save is refused) or ``"shared"``.
    """

    instructions: str | None
    memories: Sequence[AttachmentLike] | None
    capabilities: Mapping[str, bool] | None
    memory: bool | None
    window_messages: int | None
    context: Mapping[str, int] | None
    user_conversations_write_shared: bool | None
    anonymous_private_writes: Literal["refuse", "shared"] | None


SETTING_NAMES = frozenset(AgentSettings.__annotations__)


def attachment(item: AttachmentLike) -> MemoryAttachment:
    """One entry of ``memories=[...]`` as the ``(name, writable)`` it stands for."""
    from .agent import Agent
    from .memory import Memory

    if isinstance(item, Memory):
        return MemoryAttachment(item.name)
    if isinstance(item, Agent):
        return MemoryAttachment(item.memory_id)
    if isinstance(item, str):
        return MemoryAttachment(item)
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        return MemoryAttachment(item[0], bool(item[1]))
    raise TypeError(
        f"memories= takes Memory objects, memory names or memory.writable(), not {type(item).__name__}"
    )


def settings_body(settings: Mapping[str, Any], *, drop_none: bool) -> dict[str, Any]:
    """The JSON body of ``PUT /agents/{agent}`` for ``settings``.

    With ``drop_none`` (creating) a ``None`` means "the default" and is left out; without it
    (updating) every setting passed is sent, ``None`` as JSON null, and those not passed keep
    their value.
    """
    unknown = sorted(set(settings) - SETTING_NAMES)
    if unknown:
        raise TypeError(f"unknown agent setting(s): {', '.join(unknown)}")
    values = {key: value for key, value in settings.items() if not (drop_none and value is None)}
    body: dict[str, Any] = {}
    for key, value in values.items():
        if key == "memories":
            body[key] = None if value is None else [_attachment_json(attachment(item)) for item in value]
        elif key == "context":
            body[key] = None if value is None else dict(value)
        elif key not in ("capabilities", "memory"):
            body[key] = value
    capabilities = values.get("capabilities")
    merged = dict(capabilities or {})
    if values.get("memory") is not None:
        merged["memory"] = bool(values["memory"])
    if merged or capabilities is not None:
        body["capabilities"] = merged
    return body


def _attachment_json(item: MemoryAttachment) -> dict[str, Any]:
    return {"name": item.name, "writable": item.writable}


class SettingsDifferWarning(UserWarning):
    """``from_name(create_if_missing=True, ...)`` found the agent already there with other settings than the ones
    given: it is returned as stored (the settings apply only to a create); ``agent.update(...)`` changes it."""


def differing_settings(info: AgentInfo, settings: Mapping[str, Any]) -> list[str]:
    """The settings given (``None``: the default, not compared) whose value the stored agent does not have."""
    body = settings_body(settings, drop_none=True)
    differ = []
    for key, wanted in body.items():
        if key == "memories":
            stored: Any = [_attachment_json(item) for item in info.memories]
        elif key in ("capabilities", "context"):
            kept = getattr(info, key)
            stored = {name: kept.get(name) for name in wanted}
        else:
            stored = getattr(info, key)
        if stored != wanted:
            differ.append(key)
    return differ


def warn_when_settings_differ(name: str, info: AgentInfo | None, settings: Mapping[str, Any]) -> None:
    """``from_name``'s rule, sync and async alike: the agent found is returned as stored, with a
    ``SettingsDifferWarning`` when the settings given differ from its stored ones (none are applied)."""
    if settings and info is not None:
        differ = differing_settings(info, settings)
        if differ:
            warnings.warn(settings_differ_message(name, info, differ), SettingsDifferWarning,
                          stacklevel=_outside_the_sdk())


def _outside_the_sdk() -> int:
    """The ``stacklevel`` of a warning raised by this frame's caller that names the first frame outside the SDK
    (an awaiting coroutine's frame is its caller's too)."""
    level, frame = 2, sys._getframe(2)  # level 1 is the frame that warns, 2 its caller
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("agentmem.client"):
        level, frame = level + 1, frame.f_back
    return level


def settings_differ_message(name: str, info: AgentInfo, differ: Sequence[str]) -> str:
    return (f"agent {name!r} already exists (version {info.version}) with other {', '.join(differ)} than given: "
            f"create_if_missing=True returns it as stored and does not apply them; change it with "
            f"agent.update({', '.join(f'{key}=...' for key in differ)})")
