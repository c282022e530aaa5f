"""An entry item of the table as the search index's document (``DOCUMENT_FIELDS`` of the search index port).

Shared by the stream indexer (``functions/indexer``), which reads items from stream images, and the rebuild
(``adapters/aws/reindex.py``), which reads them from a scan of the table: both give the item as plain values
(numbers as ``Decimal``), laid out as the DynamoDB adapter writes them (``dynamodb/layout.py``).
Checkpoints (an item carrying ``conversation``, or a ``context.*`` name) are never indexed (SPEC §4.4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...domain.clock import iso, parse_iso
from ...domain.text import entry_index_text
from ...ports.search_index import ENTRY_KIND, entry_doc_id
from .dynamodb import layout

CHECKPOINT_PREFIX = "context."


@dataclass(frozen=True)
class EntryKey:
    account: str
    memory: str
    user_id: str | None  # None: the account layer
    name: str

    @property
    def doc_id(self) -> str:
        return entry_doc_id(self.account, self.memory, self.user_id, self.name)


def entry_key(keys: Mapping[str, Any]) -> EntryKey | None:
    """The entry a table key names, or None when the item is not an entry."""
    pk, sk = keys.get("PK"), keys.get("SK")
    if not isinstance(pk, str) or not isinstance(sk, str) or not sk.startswith(layout.ENTRY_PREFIX):
        return None
    try:
        layer = layout.parse_layer_pk(pk)
    except ValueError:
        return None
    if layout.layer_pk(layer) != pk:  # not a layer's partition after all
        return None
    return EntryKey(layer.account_id, layer.memory, layer.user_id, sk[len(layout.ENTRY_PREFIX) :])


def plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def entry_fields(key: EntryKey, item: Mapping[str, Any], embedder: str | None = None) -> dict[str, Any]:
    """The index document of an entry item; ``embedder``: the name of the embedder that makes its vector."""
    fields: dict[str, Any] = {
        "kind": ENTRY_KIND,
        "account": key.account,
        "memory": key.memory,
        "user": key.user_id if key.user_id is not None else "",
        "name": key.name,
        "description": str(item.get("description") or ""),
        "content": str(item.get("content") or ""),
        "category": str(item.get("category") or "note"),
        "importance": float(plain(item.get("importance", 0.5))),
        "version": int(plain(item.get("version", 0))),
    }
    for moment in ("updated_at", "expires_at"):
        if item.get(moment):
            fields[moment] = str(item[moment])
    if embedder:
        fields["embedder"] = embedder
    return fields


def entry_text(fields: Mapping[str, Any]) -> str:
    """What the vector stands for (``entry_index_text``, as on the embedded backend)."""
    return entry_index_text(str(fields.get("name") or ""), str(fields.get("description") or ""),
                            str(fields.get("content") or ""))


def is_checkpoint(key: EntryKey, item: Mapping[str, Any]) -> bool:
    return key.name.startswith(CHECKPOINT_PREFIX) or bool(item.get("conversation"))


def is_expired(item: Mapping[str, Any], now: str) -> bool:
    expires = item.get("expires_at")
    return bool(expires) and iso(parse_iso(str(expires))) <= now
