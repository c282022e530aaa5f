from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from ..domain.models import MemoryRecord


class MemoryStore(ABC):
    """Memories of an account. Names are unique within the account, whatever the scope."""

    @abstractmethod
    def create_memory(self, record: MemoryRecord) -> tuple[MemoryRecord, bool]:
        """Create it, or return the one with that name; the flag says whether it was created.

        The returned record may be in the trash (``deleted_at`` set); the caller decides.
        """

    @abstractmethod
    def get_memory(
        self, account_id: str, name: str, now: str, *, viewer: str | None = None, counts: bool = True
    ) -> MemoryRecord | None:
        """The memory with its ``entry_count`` and ``attached_to``; None when absent or purged.

        ``entry_count`` counts the layers ``viewer`` sees (the account's and the viewer's own);
        every layer when there is no viewer (an account key acting for the account). With
        ``counts=False`` the record has no ``entry_count`` or ``attached_to`` (a cheaper lookup)."""

    def read_ahead(self, account_id: str, names: Sequence[str], now: str, *, wait: bool = True) -> None:
        """The ``get_memory(counts=False)`` calls about to come for ``names``: a store that keeps the records
        it reads for a while can read them all in one request first. With ``wait=False`` the request is only
        sent (a context build sends it beside its other reads), and those calls wait for its answer rather
        than reading again. The default reads nothing ahead."""
        return None

    @abstractmethod
    def list_memories(
        self, account_id: str, now: str, *, trash: bool, user_id: str | None, include_account: bool
    ) -> list[MemoryRecord]:
        """Live (or trashed) memories visible to a caller: the account's when ``include_account``,
        and the given user's; every user's when ``user_id`` is None and ``include_account``.
        ``entry_count`` counts what ``user_id`` sees, as in ``get_memory``."""

    @abstractmethod
    def trash_memory(self, account_id: str, name: str, deleted_at: str, purge_after: str) -> MemoryRecord:
        """Move to the trash in one transaction that re-checks attachments (AttachedError)."""

    @abstractmethod
    def restore_memory(self, account_id: str, name: str, now: str) -> MemoryRecord:
        """Bring it back from the trash while ``now`` is before ``purge_after``."""

    @abstractmethod
    def purge_due(self, now: str) -> int:
        """Delete for good the trashed memories (and their entries) whose time has come."""

    @abstractmethod
    def attach(self, account_id: str, memory: str, agent: str, writable: bool) -> None:
        """Record that an agent attaches the memory (agents use it; tests use it as a hook)."""

    @abstractmethod
    def detach(self, account_id: str, memory: str, agent: str) -> None: ...
