"""``Agent``: an agent's settings, its own memory and its tools; ``Agents``: the account's agents.

    company = Memory.from_name("company", create_if_missing=True)
    support = Agent.from_name("support", create_if_missing=True, instructions="Answer billing questions.",
                              memories=[company])
    scribe = Agent.from_name("scribe", create_if_missing=True, memories=[company.writable()])
    support.memory.save("tone", "Warm, brief.", description="How we write")   # its own memory
    tools = support.tools(format="anthropic")                                  # hand these to the model
    result = support.call_tool("memory__search", {"query": "refund"}, user="user_42")
    print(result.text)                                                          # the tool's output

An account agent (no ``user=``) is shared by every user who talks to it: pass ``user=`` to
``search``, ``tools`` and ``call_tool`` to act for one of them. ``Agent(name, user=U)`` is a
handle on user U's own agent, and its calls act for U.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from .agent_settings import AgentSettings, settings_body, warn_when_settings_differ
from .client import default_client
from .errors import Conflict, NotFound
from .memory import Memory
from .models import (
    AgentInfo,
    ConversationInfo,
    Entry,
    Found,
    MemoryAttachment,
    MessageHit,
    PurgeReceipt,
    ToolResult,
    time_text,
)
from .rules import Call, Op, found_of, json_op
from .transport import segment

if TYPE_CHECKING:
    from .client import Client
    from .conversation import Conversation
    from .rules import ParamValue
    from .workspace import Workspace

AgentInfoList = list[AgentInfo]
FoundEntries = Found[Entry]
ToolDefinitions = list[dict[str, Any]]
AttachmentList = list[MemoryAttachment]
ConversationInfoList = list[ConversationInfo]
FoundMessages = Found[MessageHit]


class Agents:
    """The agents of the client's account: ``client.agents``."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def list(self, user: str | None = None, trash: bool = False) -> AgentInfoList:
        """Every agent (``user``'s agents when given); with ``trash=True`` those in the trash instead."""
        params: dict[str, ParamValue] = {"user": user, "trash": True if trash else None}
        return [*self._client.iterate("/agents", AgentInfo.from_dict, params)]

    def get(self, name: str, *, user: str | None = None) -> Agent:
        """The agent ``name`` (``user``'s agent when given); ``NotFound`` when there is none."""
        agent = Agent(name, user=user, client=self._client)
        agent.info()
        return agent

    def create(self, name: str, *, user: str | None = None, **settings: Unpack[AgentSettings]) -> Agent:
        """Create the agent ``name`` (the account's, or ``user``'s); ``Conflict`` if it exists.

        Settings left out (or ``None``) take their defaults: no instructions, no attached
        memories, the memory capability on.
        """
        agent = Agent(name, user=user, client=self._client)
        self._client.run(agent._info_op("PUT", body=settings_body(settings, drop_none=True),
                                        headers={"If-None-Match": "*"}))
        return agent

    def from_name(
        self,
        name: str,
        *,
        create_if_missing: bool = False,
        user: str | None = None,
        **settings: Unpack[AgentSettings],
    ) -> Agent:
        """The agent ``name``; with ``create_if_missing`` created with ``settings`` when absent.

        The settings apply only when this call creates the agent: an existing agent is
        returned as it is (change it with ``update``), with a ``SettingsDifferWarning`` naming
        the settings given that it does not have. Two callers creating it at once both get the
        one that was made.
        """
        try:
            return _as_stored(self.get(name, user=user), settings)
        except NotFound:
            if not create_if_missing:
                raise
        try:
            return self.create(name, user=user, **settings)
        except Conflict:  # created meanwhile by someone else: use theirs
            return _as_stored(self.get(name, user=user), settings)


def _as_stored(agent: Agent, settings: Mapping[str, Any]) -> Agent:
    warn_when_settings_differ(agent.name, agent.last_info, settings)
    return agent


class AgentRequests:
    """What an agent handle asks and what the answers mean, for ``Agent`` and ``AsyncAgent`` alike (each
    ``*_op`` one request and its parser, run by the sync handle, awaited by the async one)."""

    name: str
    user: str | None
    last_info: AgentInfo | None

    def _info_op(self, method: str = "GET", *rest: str, body: Any = None,
                 headers: Mapping[str, str] | None = None) -> Op[AgentInfo]:
        return Op(Call(method, self._path(*rest), self._scope(), body, headers),
                  lambda response: self._remember(response.json(), response.headers))

    def _search_op(
        self, query: str, user: str | None, limit: int | None, surface: str | None, mode: str | None,
        min_score: float | None,
    ) -> Op[FoundEntries]:
        params: dict[str, ParamValue] = {"q": query, "limit": limit, "surface": surface, "mode": mode,
                                         "min_score": min_score, **self._acting(user)}
        return json_op(Call("GET", self._path("search"), params), lambda data: found_of(data, Entry.from_dict))

    def _call_tool_op(
        self, name: str, arguments: Mapping[str, Any] | None, conversation: str | None, user: str | None,
        surface: str | None,
    ) -> Op[ToolResult]:
        body: dict[str, Any] = {"arguments": dict(arguments or {})}
        if conversation is not None:
            body["conversation"] = conversation
        if surface is not None:
            body["surface"] = surface
        return json_op(Call("POST", self._path("tools", segment(name)), self._acting(user), body),
                       ToolResult.from_dict)

    def _tools_params(self, dialect: str, format: str, surface: str | None, user: str | None
                      ) -> dict[str, ParamValue]:
        return {"dialect": dialect, "format": format, "surface": surface, **self._acting(user)}

    def _search_messages_op(
        self, query: str, user: str | None, conversation: str | None, limit: int | None, surface: str | None,
        mode: str | None, min_score: float | None, after: str | datetime | None = None,
        before: str | datetime | None = None,
    ) -> Op[FoundMessages]:
        params: dict[str, ParamValue] = {"q": query, "conversation": conversation, "limit": limit,
                                         "surface": surface, "mode": mode, "min_score": min_score,
                                         "after": time_text(after), "before": time_text(before),
                                         **self._acting(user)}
        return json_op(Call("GET", self._path("messages", "search"), params),
                       lambda data: found_of(data, MessageHit.from_dict))

    # --- helpers --------------------------------------------------------------------------

    def _path(self, *rest: str) -> str:
        return "/".join([f"/agents/{segment(self.name)}", *rest])

    def _scope(self) -> dict[str, ParamValue]:
        return {"user": self.user}

    def _acting(self, user: str | None) -> dict[str, ParamValue]:
        return {"user": user if user is not None else self.user}

    def _remember(self, data: Any, headers: Mapping[str, str] | None = None) -> AgentInfo:
        values = dict(data) if isinstance(data, Mapping) else {}
        etag = (headers or {}).get("etag", "").strip('W/"')
        if "version" not in values and etag.isdigit():
            values["version"] = int(etag)
        values.setdefault("name", self.name)
        self.last_info = AgentInfo.from_dict(values)
        return self.last_info


class Agent(AgentRequests):
    """A handle on the agent ``name`` (``user``'s own agent when ``user`` is given).

    Building one sends nothing. Its properties (``instructions``, ``memories``,
    ``version``...) describe the agent as the last answer about it did, fetching it first
    when nothing was asked yet; ``info()`` fetches it again.
    """

    def __init__(self, name: str, *, user: str | None = None, client: Client | None = None) -> None:
        self.name = name
        self.user = user
        self._client = client
        self.last_info: AgentInfo | None = None  # the agent as the last answer about it described it

    def __repr__(self) -> str:
        scope = f", user={self.user!r}" if self.user is not None else ""
        return f"Agent({self.name!r}{scope})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Agent) and (other.name, other.user) == (self.name, self.user)

    def __hash__(self) -> int:
        return hash(("agent", self.name, self.user))

    @property
    def client(self) -> Client:
        """The client this handle sends through (the default client when none was given)."""
        return self._client if self._client is not None else default_client()

    # --- finding and creating agents ------------------------------------------------------

    @classmethod
    def create(
        cls, name: str, *, user: str | None = None, client: Client | None = None, **settings: Unpack[AgentSettings]
    ) -> Agent:
        """Create the agent ``name`` (``Conflict`` if it exists); see ``Agents.create``."""
        return _agents(client).create(name, user=user, **settings)

    @classmethod
    def from_name(
        cls,
        name: str,
        *,
        create_if_missing: bool = False,
        user: str | None = None,
        client: Client | None = None,
        **settings: Unpack[AgentSettings],
    ) -> Agent:
        """The agent ``name`` (``NotFound`` if absent), created with ``settings`` when ``create_if_missing``."""
        return _agents(client).from_name(name, create_if_missing=create_if_missing, user=user, **settings)

    @classmethod
    def list(cls, user: str | None = None, trash: bool = False, client: Client | None = None) -> AgentInfoList:
        """The account's agents (or ``user``'s); ``trash=True`` lists those in the trash."""
        return _agents(client).list(user=user, trash=trash)

    # --- the agent itself -----------------------------------------------------------------

    def info(self) -> AgentInfo:
        """The agent's current settings and version."""
        return self.client.run(self._info_op())

    def update(self, *, version: int | None = None, **settings: Unpack[AgentSettings]) -> AgentInfo:
        """Change the settings passed; the others keep their value.

        ``None`` is sent as is: ``window_messages=None`` goes back to the platform's window.
        ``memories=[...]`` replaces the whole list. With ``version=N`` the change lands only if
        the agent is still at version N, else ``Conflict`` with ``current_version``.
        """
        headers = {"If-Match": f'"{version}"'} if version is not None else {}
        return self.client.run(self._info_op("PUT", body=settings_body(settings, drop_none=False), headers=headers))

    def delete(self) -> AgentInfo:
        """Move the agent to the trash (``Attached`` while another agent attaches its own memory)."""
        return self.client.run(self._info_op("DELETE"))

    def restore(self) -> AgentInfo:
        """Bring the agent back from the trash."""
        return self.client.run(self._info_op("POST", "restore"))

    def purge(self) -> PurgeReceipt:
        """Delete the agent for good, with its own memory, conversations and workspaces: what went."""
        data = self.client.request_json("POST", self._path("purge"), params=self._scope())
        self.last_info = None
        return PurgeReceipt.from_dict(data)

    # --- what it is, as last described ----------------------------------------------------

    def _described(self) -> AgentInfo:
        return self.last_info if self.last_info is not None else self.info()

    @property
    def memory_id(self) -> str:
        """The name of the agent's own memory: ``agent:{name}``."""
        return f"agent:{self.name}"

    @property
    def memory(self) -> Memory:
        """The agent's own memory (``agent.memory.save(...)``, ``.list(user=...)``, ``.search(...)``)."""
        return Memory(self.memory_id, user=self.user, client=self._client)

    @property
    def user_id(self) -> str | None:
        """The agent's owner: ``None`` for an account agent."""
        return self._described().user_id

    @property
    def instructions(self) -> str:
        return self._described().instructions

    @property
    def memories(self) -> AttachmentList:
        """The memories it attaches, in order, as ``(name, writable)`` pairs."""
        return [*self._described().memories]

    @property
    def capabilities(self) -> dict[str, Any]:
        return dict(self._described().capabilities)

    @property
    def window_messages(self) -> int | None:
        return self._described().window_messages

    @property
    def version(self) -> int:
        return self._described().version

    # --- recall and tools -----------------------------------------------------------------

    def search(
        self, query: str, *, user: str | None = None, limit: int | None = None, surface: str | None = None,
        mode: str | None = None, min_score: float | None = None,
    ) -> FoundEntries:
        """Every memory the agent reads, recalled as it sees them (``mode``: ``hybrid`` by default, ``keyword``
        or ``semantic``): each hit names its ``memory``, ``user_id`` (``None``: the account's layer) and
        ``score`` (0–1)."""
        return self.client.run(self._search_op(query, user, limit, surface, mode, min_score))

    def tools(
        self,
        dialect: str = "noclick",
        format: str = "mcp",
        *,
        surface: str | None = None,
        user: str | None = None,
    ) -> ToolDefinitions:
        """The agent's tool definitions, ready to hand to a model API.

        ``dialect``: ``noclick`` (``memory__search``...) or ``noorle`` (``memory_recall``...);
        ``format``: ``mcp``, ``openai``, ``anthropic`` or ``bedrock``. The tools offered depend
        on the ``surface`` and on whom the call acts for.
        """
        return [*self.client.iterate(self._path("tools"), dict, self._tools_params(dialect, format, surface, user))]

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        conversation: str | None = None,
        user: str | None = None,
        surface: str | None = None,
    ) -> ToolResult:
        """Run the tool ``name`` as the agent would, in ``conversation`` for ``user`` on ``surface``
        (default ``agent``). A refused call raises the API's error and stores nothing."""
        return self.client.run(self._call_tool_op(name, arguments, conversation, user, surface))

    # --- conversations --------------------------------------------------------------------

    def conversation(self, key: str, *, user: str | None = None) -> Conversation:
        """A handle on the conversation ``key`` with ``user`` (an account agent's conversation with the
        account itself without one; a user's agent talks with its own user). No request is sent."""
        from .conversation import Conversation

        return Conversation(self, key, user=user if user is not None else self.user)

    def workspace(self, conversation: str, *, user: str | None = None) -> Workspace:
        """A handle on the workspace of the conversation ``conversation`` with ``user`` (as for
        ``conversation()``): the files the agent sees as ``/workspace`` there. No request is sent."""
        from .workspace import Workspace

        return Workspace(self, conversation, user=user if user is not None else self.user)

    def conversations(self, *, user: str | None = None) -> ConversationInfoList:
        """The agent's conversations with ``user`` (or with the account), most recently updated first;
        deleted ones are left out."""
        return [*self.client.iterate(self._path("conversations"), ConversationInfo.from_dict, self._acting(user))]

    def search_messages(
        self, query: str, *, user: str | None = None, conversation: str | None = None, limit: int | None = None,
        surface: str | None = None, mode: str | None = None, min_score: float | None = None,
        after: str | datetime | None = None, before: str | datetime | None = None,
    ) -> FoundMessages:
        """Journal search: messages of the agent's conversations with ``user`` (only ``conversation``
        when given) that say what ``query`` asks, by meaning and words (``mode``), best first (up to ``limit``,
        at most 100; default 10), each with its ``created_at``. ``after`` / ``before`` (ISO 8601 text or an
        aware ``datetime``; a naive one is UTC) keep the messages written strictly between them. Open on the
        ``agent`` and ``test`` surfaces only: elsewhere ``Forbidden``."""
        return self.client.run(self._search_messages_op(query, user, conversation, limit, surface, mode, min_score,
                                                        after, before))


def _agents(client: Client | None) -> Agents:
    return Agents(client if client is not None else default_client())
