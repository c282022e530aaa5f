"""The agentmem SDK: typed access to an agentmem service over HTTP or in-process.

from agentmem.client import Agent, Memory
company = Memory.from_name("company", create_if_missing=True)   # AGENTMEM_URL / AGENTMEM_API_KEY
company.save("tone", "Warm, brief, no jargon.", description="How we write")
support = Agent.from_name("support", create_if_missing=True, memories=[company])
"""

from __future__ import annotations

from .agent import Agent, Agents
from .agent_settings import AgentSettings
from .client import Client, default_client, set_default_client
from .errors import (
    AgentmemError,
    Attached,
    ConfigurationError,
    Conflict,
    Forbidden,
    Invalid,
    LayerFull,
    NotFound,
    RateLimited,
    Rejected,
    ServerError,
    TooLarge,
    Unauthorized,
    Unreachable,
    Unsupported,
)
from .keys import Keys
from .memory import Memories, Memory
from .models import (
    AgentInfo,
    ApiKey,
    Entry,
    Health,
    HistoryItem,
    MemoryAttachment,
    MemoryInfo,
    Page,
    PurgeReceipt,
    ToolResult,
    UsageRecord,
)
from .transport import HttpTransport, InProcessTransport, Transport, TransportResponse

__all__ = [
    "Agent",
    "AgentInfo",
    "AgentSettings",
    "AgentmemError",
    "Agents",
    "ApiKey",
    "Attached",
    "Client",
    "ConfigurationError",
    "Conflict",
    "Entry",
    "Forbidden",
    "Health",
    "HistoryItem",
    "HttpTransport",
    "InProcessTransport",
    "Invalid",
    "Keys",
    "LayerFull",
    "Memories",
    "Memory",
    "MemoryAttachment",
    "MemoryInfo",
    "NotFound",
    "Page",
    "PurgeReceipt",
    "RateLimited",
    "Rejected",
    "ServerError",
    "TooLarge",
    "ToolResult",
    "Transport",
    "TransportResponse",
    "Unauthorized",
    "Unreachable",
    "Unsupported",
    "UsageRecord",
    "default_client",
    "set_default_client",
]
