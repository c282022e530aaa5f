"""agentmem: memory for AI agents.

    import agentmem
    company = agentmem.Memory.from_name("company", create_if_missing=True)
    company.save("tone", "Warm, brief, no jargon.", description="How we write")
    support = agentmem.Agent.from_name("support", create_if_missing=True, memories=[company])

The SDK names are loaded on first use, so the Lambda handler (which imports this
package too) does not pay for the HTTP client at cold start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_SDK_NAMES = (
    "Agent", "AgentInfo", "AgentSettings", "AgentmemError", "Agents", "ApiKey", "Attached", "Client",
    "ConfigurationError", "Conflict", "Entry", "Forbidden", "Health", "HistoryItem", "HttpTransport",
    "InProcessTransport", "Invalid", "Keys", "LayerFull", "Memories", "Memory", "MemoryAttachment", "MemoryInfo",
    "NotFound", "Page", "PurgeReceipt", "RateLimited", "Rejected", "ServerError", "TooLarge", "ToolResult",
    "Transport", "TransportResponse", "Unauthorized", "Unreachable", "Unsupported", "UsageRecord",
    "default_client", "set_default_client",
)

if TYPE_CHECKING:
    from .client import (  # noqa: F401
        Agent,
        AgentInfo,
        AgentmemError,
        Agents,
        AgentSettings,
        ApiKey,
        Attached,
        Client,
        ConfigurationError,
        Conflict,
        Entry,
        Forbidden,
        Health,
        HistoryItem,
        HttpTransport,
        InProcessTransport,
        Invalid,
        Keys,
        LayerFull,
        Memories,
        Memory,
        MemoryAttachment,
        MemoryInfo,
        NotFound,
        Page,
        PurgeReceipt,
        RateLimited,
        Rejected,
        ServerError,
        TooLarge,
        ToolResult,
        Transport,
        TransportResponse,
        Unauthorized,
        Unreachable,
        Unsupported,
        UsageRecord,
        default_client,
        set_default_client,
    )


def __getattr__(name: str) -> Any:
    if name in _SDK_NAMES:
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'agentmem' has no attribute {name!r}")


__all__ = ["__version__", *_SDK_NAMES]
