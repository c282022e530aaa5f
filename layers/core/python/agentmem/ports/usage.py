from __future__ import annotations

from abc import ABC, abstractmethod

from ..domain.models import UsageCount


class UsageStore(ABC):
    """Per-account counters by day and operation (SPEC §9: memory tools are not billed)."""

    @abstractmethod
    def increment(self, account_id: str, day: str, operation: str, billable: bool, by: int = 1) -> None: ...

    @abstractmethod
    def counts(self, account_id: str, since_day: str) -> list[UsageCount]: ...
