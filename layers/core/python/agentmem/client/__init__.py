"""The agentmem SDK: typed access to an agentmem service over HTTP or in-process.

from agentmem.client import Agent, Memory, Message
company = Memory.from_name("company", create_if_missing=True)   # AGENTMEM_URL / AGENTMEM_API_KEY
company.save("tone", "Warm, brief, no jargon.", description="How we write")
support = Agent.from_name("support", create_if_missing=True, memories=[company])
chat = support.conversation("ticket-7", user="user_42")
chat.append(Message.user("Hi, I'm Ana."), Message.assistant("Hello Ana!"))
context = chat.context()                                          # what the model sees next turn
support.workspace("ticket-7", user="user_42").write("notes/plan.md", "# Plan")  # its /workspace
"""

from __future__ import annotations

from .agent import Agent, Agents
from .agent_settings import AgentSettings, SettingsDifferWarning
from .aio import (
    AiohttpTransport,
    AsyncAgent,
    AsyncAgents,
    AsyncClient,
    AsyncConversation,
    AsyncHttpTransport,
    AsyncInProcessTransport,
    AsyncMemories,
    AsyncMemory,
    AsyncTransport,
    AsyncWorkspace,
)
from .client import Client, default_client, set_default_client
from .conversation import Conversation
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
from .exports import EntryImportOutcome, EntryImportReport, ExportFileError
from .keys import Keys
from .memory import Memories, Memory
from .models import (
    AgentInfo,
    ApiKey,
    AppendResult,
    Checkpoint,
    Context,
    ContextSummary,
    ContextWindow,
    ConversationInfo,
    ConversationReceipt,
    Entry,
    ErasureReceipt,
    Found,
    Health,
    HistoryItem,
    ImportReport,
    MemoryAttachment,
    MemoryIndex,
    MemoryInfo,
    Message,
    MessageHit,
    Page,
    PinnedBlock,
    PurgeReceipt,
    Skipped,
    ToolCall,
    ToolResult,
    UploadLink,
    UsageRecord,
    WorkspaceFile,
)
from .transport import HttpTransport, InProcessTransport, Transport, TransportResponse
from .workspace import Workspace

__all__ = [
    "Agent",
    "AgentInfo",
    "AgentSettings",
    "AgentmemError",
    "Agents",
    "AiohttpTransport",
    "ApiKey",
    "AppendResult",
    "AsyncAgent",
    "AsyncAgents",
    "AsyncClient",
    "AsyncConversation",
    "AsyncHttpTransport",
    "AsyncInProcessTransport",
    "AsyncMemories",
    "AsyncMemory",
    "AsyncTransport",
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
    "Found",
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
    "SettingsDifferWarning",
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
    "default_client",
    "set_default_client",
]
