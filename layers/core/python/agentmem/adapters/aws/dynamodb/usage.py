"""Usage counters on DynamoDB: one item per account, day, operation and billable flag, counted with ADD.

Round trips: ``increment`` one ``UpdateItem``; ``counts`` one ``Query`` of the account's usage items.
"""

from __future__ import annotations

from ....domain.models import UsageCount
from ....ports.usage import UsageStore
from . import layout
from .models import BoundModels, UsageRow


class DynamoUsageStore(UsageStore):
    def __init__(self, models: BoundModels) -> None:
        self.models = models

    def increment(self, account_id: str, day: str, operation: str, billable: bool, by: int = 1) -> None:
        row = self.models.usage(layout.account_pk(account_id), layout.usage_sk(day, operation, billable))
        row.update(actions=[UsageRow.uses.add(by)])

    def counts(self, account_id: str, since_day: str) -> list[UsageCount]:
        rows = self.models.usage.query(
            layout.account_pk(account_id),
            UsageRow.sk.between(f"{layout.USAGE_PREFIX}{since_day}", f"{layout.USAGE_PREFIX}~"),
            consistent_read=True,
        )
        counts = []
        for row in rows:
            day, operation, billable = layout.usage_parts(row.sk)
            counts.append(UsageCount(day, operation, billable, int(row.uses or 0)))
        return counts
