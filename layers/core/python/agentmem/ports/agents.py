from __future__ import annotations

from abc import ABC, abstractmethod

from ..domain.agents import AgentRecord


class AgentStore(ABC):
    """Agents of an account, each with its own memory, and the attachments they hold.

    An agent's name is unique within the account, whatever its owner. Saving an agent writes, in one
    transaction: the agent record (conditional on its version), its own memory ``agent:{name}`` when
    it is new, and the memories' ``attached_to`` for every attachment added or removed. An attachment
    to a memory that is missing or in the trash fails the whole write (NotFoundError), so a memory is
    never trashed while an agent attaches it, nor attached while in the trash.
    """

    @abstractmethod
    def save_agent(self, record: AgentRecord, *, expected_version: int) -> AgentRecord:
        """Create (``expected_version`` 0: must not exist, in the trash or not) or replace the agent
        stored at ``expected_version``; the stored record comes back with ``version`` = expected + 1.

        Raises VersionConflictError (``current_version``; 0 = absent) when the stored version differs,
        NotFoundError naming the memory when an attachment's memory is missing or trashed."""

    @abstractmethod
    def get_agent(self, account_id: str, name: str, now: str) -> AgentRecord | None:
        """The agent, live or in the trash; None when absent or purged (``purge_after`` <= now)."""

    @abstractmethod
    def list_agents(self, account_id: str, now: str, *, trash: bool, user_id: str | None,
                    include_account: bool) -> list[AgentRecord]:
        """Live (or trashed) agents by name: the account's when ``include_account``, and the given
        user's; every user's when ``user_id`` is None and ``include_account``."""

    @abstractmethod
    def trash_agent(self, account_id: str, name: str, deleted_at: str, purge_after: str) -> AgentRecord:
        """Move the agent and its own memory to the trash (NotFoundError when not live; AttachedError
        when another agent attaches its own memory). Its attachments stay until it is purged."""

    @abstractmethod
    def restore_agent(self, account_id: str, name: str, now: str) -> AgentRecord:
        """Bring the agent and its own memory back while ``now`` is before ``purge_after``."""

    @abstractmethod
    def purge_agent(self, account_id: str, name: str) -> dict[str, int]:
        """Delete for good: the record, its attachments, its own memory with every entry and history
        row. Returns counts (``entries``, ``memories``). NotFoundError when there is no such agent."""

    @abstractmethod
    def due_for_purge(self, now: str) -> list[tuple[str, str]]:
        """The trashed agents whose time has come, as (account, name), not yet purged."""

    @abstractmethod
    def purge_due(self, now: str) -> list[tuple[str, str]]:
        """Purge the trashed agents whose time has come; returns their (account, name)."""
