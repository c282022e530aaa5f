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

__all__ = [
    "Agent",
    "AgentInfo",
    "AgentSettings",
    "AgentmemError",
    "Agents",
    "ApiKey",
    "AppendResult",
    "AsyncAgent",
    "AsyncClient",
    "AsyncConversation",
    "AsyncInProcessTransport",
    "AsyncMemory",
    "AsyncWorkspace",
    "Attached",
    "Checkpoint",
    "Client",
    "ConfigurationError",
    "Conflict",
    "Context",
    "ContextSummary",
    "ContextWindow",
    "Conversation",
    "ConversationInfo",
    "ConversationReceipt",
    "Entry",
    "EntryImportOutcome",
    "EntryImportReport",
    "ErasureReceipt",
    "ExportFileError",
    "Forbidden",
    "Health",
    "HistoryItem",
    "HttpTransport",
    "ImportReport",
    "InProcessTransport",
    "Invalid",
    "Keys",
    "LayerFull",
    "Memories",
    "Memory",
    "MemoryAttachment",
    "MemoryIndex",
    "MemoryInfo",
    "Message",
    "MessageHit",
    "NotFound",
    "Page",
    "PinnedBlock",
    "PurgeReceipt",
    "RateLimited",
    "Rejected",
    "ServerError",
    "Skipped",
    "TooLarge",
    "ToolCall",
    "ToolResult",
    "Transport",
    "TransportResponse",
    "Unauthorized",
    "Unreachable",
    "Unsupported",
    "UploadLink",
    "UsageRecord",
    "Workspace",
    "WorkspaceFile",
    "__version__",
    "default_client",
    "set_default_client",
]
_SDK_NAMES = frozenset(__all__) - {"__version__"}

if TYPE_CHECKING:
    from .client import (
        Agent,
        AgentInfo,
        AgentmemError,
        Agents,
        AgentSettings,
        ApiKey,
        AppendResult,
        AsyncAgent,
        AsyncClient,
        AsyncConversation,
        AsyncInProcessTransport,
        AsyncMemory,
        AsyncWorkspace,
        Attached,
        Checkpoint,
        Client,
        ConfigurationError,
        Conflict,
        Context,
        ContextSummary,
        ContextWindow,
        Conversation,
        ConversationInfo,
        ConversationReceipt,
        Entry,
        EntryImportOutcome,
        EntryImportReport,
        ErasureReceipt,
        ExportFileError,
        Forbidden,
        Health,
        HistoryItem,
        HttpTransport,
        ImportReport,
        InProcessTransport,
        Invalid,
        Keys,
        LayerFull,
        Memories,
        Memory,
        MemoryAttachment,
        MemoryIndex,
        MemoryInfo,
        Message,
        MessageHit,
        NotFound,
        Page,
        PinnedBlock,
        PurgeReceipt,
        RateLimited,
        Rejected,
        ServerError,
        Skipped,
        TooLarge,
        ToolCall,
        ToolResult,
        Transport,
        TransportResponse,
        Unauthorized,
        Unreachable,
        Unsupported,
        UploadLink,
        UsageRecord,
        Workspace,
        WorkspaceFile,
        default_client,
        set_default_client,
    )


def __getattr__(name: str) -> Any:
    if name in _SDK_NAMES:
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module 'agentmem' has no attribute {name!r}")

