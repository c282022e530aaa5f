"""The agentmem SDK: typed access to an agentmem service over HTTP or in-process.

from agentmem.client import Memory
company = Memory.from_name("company", create_if_missing=True)   # AGENTMEM_URL / AGENTMEM_API_KEY
company.save("tone", "Warm, brief, no jargon.", description="How we write")
"""

from __future__ import annotations

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
)
from .keys import Keys
from .memory import Memories, Memory
from .models import ApiKey, Entry, Health, HistoryItem, MemoryInfo, Page, UsageRecord
from .transport import HttpTransport, InProcessTransport, Transport, TransportResponse

__all__ = [
    "AgentmemError",
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
    "MemoryInfo",
    "NotFound",
    "Page",
    "RateLimited",
    "Rejected",
    "ServerError",
    "TooLarge",
    "Transport",
    "TransportResponse",
    "Unauthorized",
    "Unreachable",
    "UsageRecord",
    "default_client",
    "set_default_client",
]
