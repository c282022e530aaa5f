"""Entries and history rows as items: building them from a save, and reading them back as domain records.

The merge rules are the embedded store's: a save keeps what it does not give (description, category,
importance, expiry, conversation) from the live entry, and a history row is a whole snapshot of the
version it records.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, cast

from pynamodb.expressions.condition import Condition

from ....domain.clock import parse_iso
from ....domain.context import qualifies_for_pinning
from ....domain.models import Entry, EntryDraft, HistoryItem, Layer, Operation, UpdatedBy, Visibility
from ....domain.rules import DEFAULT_CATEGORY, DEFAULT_IMPORTANCE
from . import layout
from .models import BoundModels, EntryRow, HistoryRow, LastVersionRow, PinRow


def content_hash(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()


def epoch(moment: str) -> int:
    """A TTL value: whole seconds, rounded up so TTL never removes an item before its time."""
    return math.ceil(parse_iso(moment).timestamp())


def is_live(row: EntryRow, now: str) -> bool:
    return row.expires_at is None or row.expires_at > now


def live_filter(now: str, expires_at: Any = EntryRow.expires_at) -> Condition:
    """The condition (a query's filter) that an item has not expired at ``now``: an entry, or with ``expires_at``
    the attribute of another item that carries its entry's expiry (a pin item)."""
    return cast(Condition, expires_at.does_not_exist() | (expires_at > now))


def is_counted(row: EntryRow) -> bool:
    """Whether the entry counts toward its layer's 500: checkpoints do not."""
    return row.conversation is None


def qualifies(row: EntryRow) -> bool:
    """Whether the entry qualifies for the pinned block (``domain.context.qualifies_for_pinning``; checkpoints
    never do): its layer counter then holds its pin (``layout.pin_value``)."""
    return is_counted(row) and qualifies_for_pinning(to_entry(row, with_content=False))


def pin_row(models: BoundModels, row: EntryRow) -> PinRow | None:
    """The pin item of ``row`` (None: it does not qualify for the pinned block)."""
    if not qualifies(row):
        return None
    pin = models.pin(row.pk, layout.pin_sk(row.importance, row.updated_at, row.name))
    pin.name = row.name
    pin.importance = float(row.importance)
    pin.updated_at = row.updated_at
    pin.expires_at = row.expires_at
    pin.ttl = row.ttl
    return pin


def merged_row(
    models: BoundModels, layer: Layer, draft: EntryDraft, live: EntryRow | None, now: str, *, after: int
) -> EntryRow:
    """The item a save stores, given the live entry it replaces (None: it creates one) and the version it
    follows: the live entry's, or for a new entry the last its name reached (0 for a name never used)."""
    version = after + 1
    description = draft.description if draft.description is not None else (live.description if live else None)
    if description is None:
        raise ValueError("a new entry needs a description")  # the store checks first
    if draft.expires_at is not None or draft.clear_expiry or live is None:
        expires_at = draft.expires_at
    else:
        expires_at = live.expires_at
    row = models.entry(layout.layer_pk(layer), layout.entry_sk(draft.name))
    row.name = draft.name
    row.description = description
    row.content = draft.content
    row.category = draft.category or (live.category if live is not None else DEFAULT_CATEGORY)
    row.importance = draft.importance if draft.importance is not None else (
        float(live.importance) if live is not None else DEFAULT_IMPORTANCE
    )
    row.visibility = draft.visibility_over(live.visibility if live is not None else None)
    row.version = version
    row.updated_by = draft.updated_by
    row.created_at = live.created_at if live is not None else now
    row.updated_at = now
    row.expires_at = expires_at
    row.conversation = draft.conversation if draft.conversation is not None else (
        live.conversation if live is not None else None
    )
    row.content_hash = content_hash(draft.content)
    row.memory = layer.memory
    row.user_id = layer.user_id
    index_keys(row, layer)
    return row


def index_keys(row: EntryRow, layer: Layer) -> None:
    """The row's index keys and TTL, from its fields."""
    row.lu_sk = layout.listing_sk(row.updated_at, row.name)
    expires_at = row.expires_at
    row.ttl = epoch(expires_at) if expires_at is not None else None
    if expires_at is not None and is_counted(row):
        row.mx_pk = layout.memory_pk(layer.account_id, layer.memory)
        row.mx_sk = layout.expiry_sk(expires_at, layer.user_id, row.name)
    else:
        row.mx_pk = row.mx_sk = None


def last_version_row(models: BoundModels, layer: Layer, name: str, version: int) -> LastVersionRow:
    """The item holding the last version ``name`` reached in ``layer``."""
    row = models.last_version(layout.layer_pk(layer), layout.last_version_sk(name))
    row.version = version
    return row


def version_of(models: BoundModels, raw: dict[str, Any] | None) -> int | None:
    """The version a last version item holds, as a cancelled transaction returned it (None: absent)."""
    return int(models.last_version.from_raw_data(raw).version) if raw else None


def history_row(
    models: BoundModels, layer: Layer, row: EntryRow, operation: Operation, version: int, updated_by: str,
    now: str, keep_until: str,
) -> HistoryRow:
    """The history row of one change: a snapshot of ``row`` (for a delete: of what was deleted)."""
    history = models.history(layout.layer_pk(layer), layout.history_sk(row.name, row.created_at, version))
    history.name = row.name
    history.version = version
    history.operation = operation
    history.content_hash = row.content_hash
    history.updated_by = updated_by
    history.changed_at = now
    history.description = row.description
    history.content = row.content or ""
    history.keep_until = keep_until
    history.category = row.category
    history.importance = row.importance
    history.visibility = row.visibility
    history.created_at = row.created_at
    history.expires_at = row.expires_at
    # kept its 30 days even when this version had an expiry: a later version may have lifted it
    history.ttl = epoch(keep_until)
    return history


def to_entry(row: EntryRow, *, with_content: bool) -> Entry:
    return Entry(
        name=row.name,
        description=row.description,
        content=row.content if with_content else None,
        category=row.category,
        importance=float(row.importance),
        visibility=cast(Visibility, row.visibility),
        version=int(row.version),
        updated_by=cast(UpdatedBy, row.updated_by),
        created_at=row.created_at,
        updated_at=row.updated_at,
        expires_at=row.expires_at,
        conversation=row.conversation,
        content_hash=row.content_hash,
        memory=row.memory,
        user_id=row.user_id,
    )


def to_history_item(row: HistoryRow) -> HistoryItem:
    return HistoryItem(
        name=row.name,
        version=int(row.version),
        operation=cast(Operation, row.operation),
        content_hash=row.content_hash,
        updated_by=cast(UpdatedBy, row.updated_by),
        changed_at=row.changed_at,
        description=row.description,
        content=row.content,
        keep_until=row.keep_until,
        category=row.category,
        importance=float(row.importance),
        visibility=cast(Visibility, row.visibility),
        created_at=row.created_at,
        expires_at=row.expires_at,
    )


def from_raw(models: BoundModels, raw: dict[str, Any] | None) -> EntryRow | None:
    """An item as DynamoDB returned it (e.g. with a cancelled transaction's ALL_OLD)."""
    return models.entry.from_raw_data(raw) if raw else None
