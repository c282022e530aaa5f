"""One ``TransactWriteItems`` request built from pynamodb models, whose failures say which action failed.

pynamodb builds each action's arguments (keys, conditions, update expressions, and
``ReturnValuesOnConditionCheckFailure=ALL_OLD`` where asked); this module sends them itself through the
pynamodb connection because pynamodb's ``TransactWrite`` regroups the actions by kind, so the n-th
cancellation reason would not be the n-th action added, and cannot ask ALL_OLD of a delete. Actions are named,
and a cancelled transaction comes back as ``Cancelled`` with each failed action's reason (and, for an
action that asked for it, the item as it was), so a caller tells a version conflict from a full layer
without reading again.

A ``TransactionConflict`` (another transaction was writing one of the items at that moment) means
nothing was written: it is retried here with backoff. So is a transaction cancelled for throughput
(``ThrottlingError``, ``ProvisionedThroughputExceeded``: botocore does not retry a cancellation); one that stays
throttled raises ``Throttled``, which the API answers 503 with ``Retry-After``. A failed condition is an answer,
never retried here. botocore's own retries of a transient failure are safe: it fills ``ClientRequestToken`` once per
call, so DynamoDB applies a retried transaction at most once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pynamodb.connection import Connection
from pynamodb.constants import TRANSACT_CONDITION_CHECK, TRANSACT_DELETE, TRANSACT_PUT, TRANSACT_UPDATE
from pynamodb.exceptions import VerboseClientError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.models import Model

ALL_OLD = "ALL_OLD"
CONFLICT_RETRIES = 12
CONDITION_FAILED = "ConditionalCheckFailed"
TRANSACTION_CONFLICT = "TransactionConflict"
THROUGHPUT_EXCEEDED = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded"})
THROTTLED_RETRIES = 4


@dataclass(frozen=True)
class Failure:
    code: str
    item: dict[str, Any] | None  # the raw item as it was, for an action that asked for ALL_OLD


class Cancelled(Exception):
    """The transaction was cancelled by a failed condition: ``failures`` by action name."""

    def __init__(self, failures: dict[str, Failure]) -> None:
        super().__init__(", ".join(f"{name}: {f.code}" for name, f in failures.items()))
        self.failures = failures

    @property
    def contended(self) -> bool:
        """Only ``TransactionConflict``: other transactions kept writing these items; nothing failed."""
        return all(f.code == TRANSACTION_CONFLICT for f in self.failures.values())

    def failed(self, name: str) -> bool:
        failure = self.failures.get(name)
        return failure is not None and failure.code == CONDITION_FAILED

    def old_item(self, name: str) -> dict[str, Any] | None:
        failure = self.failures.get(name)
        return failure.item if failure is not None else None


@dataclass
class WriteSet:
    """Named actions of one transaction, sent in the order they were added (at most 100)."""

    connection: Connection
    _actions: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self._actions)

    def put(self, name: str, model: Model, condition: Condition | None = None, *, all_old: bool = False) -> None:
        kwargs = model.get_save_kwargs_from_instance(
            condition=condition, return_values_on_condition_failure=_old(all_old)
        )
        self._add(name, TRANSACT_PUT, kwargs)

    def update(
        self, name: str, model: Model, actions: Sequence[Action], condition: Condition | None = None,
        *, all_old: bool = False,
    ) -> None:
        kwargs = model.get_update_kwargs_from_instance(
            actions=list(actions), condition=condition, return_values_on_condition_failure=_old(all_old)
        )
        self._add(name, TRANSACT_UPDATE, kwargs)

    def delete(self, name: str, model: Model, condition: Condition | None = None, *, all_old: bool = False) -> None:
        kwargs = model.get_delete_kwargs_from_instance(
            condition=condition, return_values_on_condition_failure=_old(all_old)
        )
        self._add(name, TRANSACT_DELETE, kwargs)

    def check(
        self, name: str, model_cls: type[Model], hash_key: str, range_key: str, condition: Condition,
        *, all_old: bool = False,
    ) -> None:
        kwargs = model_cls.get_operation_kwargs_from_class(hash_key, range_key=range_key, condition=condition)
        if all_old:  # pynamodb does not offer it for a condition check; DynamoDB takes it
            kwargs["ReturnValuesOnConditionCheckFailure"] = ALL_OLD
        self._add(name, TRANSACT_CONDITION_CHECK, kwargs)

    def _add(self, name: str, kind: str, kwargs: dict[str, Any]) -> None:
        kwargs.pop("ReturnConsumedCapacity", None)  # per request, not per action
        self._actions.append((name, kind, kwargs))

    def commit(self) -> None:
        """Write every action or none; raises ``Cancelled`` when a condition failed."""
        if not self._actions:
            return
        request = {"TransactItems": [{kind: kwargs} for _, kind, kwargs in self._actions]}
        throttled = 0
        for attempt in range(CONFLICT_RETRIES + THROTTLED_RETRIES + 1):
            try:
                self.connection.dispatch("TransactWriteItems", dict(request))
                return
            except VerboseClientError as error:
                failures = self._failures(error)
                if failures is None:
                    raise
            if any(f.code == CONDITION_FAILED for f in failures.values()):
                raise Cancelled(failures)
            codes = {f.code for f in failures.values()}
            if codes <= THROUGHPUT_EXCEEDED | {TRANSACTION_CONFLICT} and codes & THROUGHPUT_EXCEEDED:
                throttled += 1
                if throttled > THROTTLED_RETRIES:
                    raise Throttled(f"transaction cancelled for throughput after {throttled} tries: {codes}")
                time.sleep(min(2.0, 0.05 * 2**throttled) * random.uniform(0.5, 1.5))
                continue
            if attempt < CONFLICT_RETRIES and codes == {TRANSACTION_CONFLICT}:
                time.sleep(min(0.5, 0.01 * 2**attempt) * random.uniform(0.5, 1.5))
                continue
            raise Cancelled(failures)

    def _failures(self, error: VerboseClientError) -> dict[str, Failure] | None:
        reasons = error.cancellation_reasons
        failures: dict[str, Failure] = {}
        for (name, _, _), reason in zip(self._actions, reasons, strict=False):
            if reason is not None:
                failures[name] = Failure(code=reason.code, item=reason.raw_item)
        return failures if failures else None


class Throttled(Exception):
    """DynamoDB cancelled the transaction for throughput, past the retries: nothing was written."""

    transient = True  # adapters/aws/failures.is_transient: the API answers 503 with Retry-After


def _old(all_old: bool) -> str | None:
    return ALL_OLD if all_old else None

