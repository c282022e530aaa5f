"""Where each record lives in the single table: every partition and sort key is built here.

``#`` separates key parts: account ids, memory names, entry names and user ids never hold one.

| record | PK | SK |
|---|---|---|
| account | ``A#{account}`` | ``ACCOUNT`` |
| account name (unique) | ``ACCOUNTNAME#{name}`` | ``ACCOUNTNAME`` |
| key (found by the hash of its secret) | ``KEY#{sha256}`` | ``KEY`` |
| the account's list of keys | ``A#{account}`` | ``KEY#{key id}`` |
| memory | ``A#{account}`` | ``M#{memory}`` |
| agent | ``A#{account}`` | ``G#{agent}`` |
| usage counter | ``A#{account}`` | ``U#{day}#{operation}#{billable 0/1}`` |
| layer counter | ``A#{account}#M#{memory}`` | ``C#{layer}`` |
| entry | ``A#{account}#M#{memory}#{layer}`` | ``E#{name}`` |
| history row | ``A#{account}#M#{memory}#{layer}`` | ``H#{name}#{created_at}#{version:010d}`` |

``{layer}`` is ``L`` for the account layer and ``U#{user}`` for a user's. A history row's key holds the
entry's ``created_at``, so an entry deleted (or expired) and created again starts a new run of versions
without overwriting the old one's rows while they are kept.

An agent's own memory is an ordinary memory item named ``agent:{agent}``. The agents attaching a memory
are the memory item's ``attached`` (and ``writable``) string sets. In the by_due index, trashed memories
(an agent's own memory too) sit under ``due_pk`` ``TRASH`` and trashed agents under ``TRASH#G``, so each
store's ``purge_due`` reads only its own.
"""

from __future__ import annotations

from ....domain.models import Layer

ACCOUNT_SK = "ACCOUNT"
ACCOUNT_NAME_SK = "ACCOUNTNAME"
KEY_SK = "KEY"
KEY_REF_PREFIX = "KEY#"
MEMORY_PREFIX = "M#"
AGENT_PREFIX = "G#"
USAGE_PREFIX = "U#"
COUNTER_PREFIX = "C#"
ENTRY_PREFIX = "E#"
HISTORY_PREFIX = "H#"
TRASH = "TRASH"  # the by_due index's partition of trashed memories
AGENT_TRASH = "TRASH#G"  # and of trashed agents

# ``lu_sk`` orders a layer's entries newest first, ties by name A→Z, when read in descending order: the
# name's characters ([a-z0-9._-]) are mirrored so a descending read sees names ascending, and "~" (above
# every mirrored character) ends it so a shorter name sorts before the longer names it starts.
_NAME_ALPHABET = "-.0123456789_abcdefghijklmnopqrstuvwxyz"
_MIRROR = str.maketrans({c: chr(0x7D - (ord(c) - 0x2D)) for c in _NAME_ALPHABET})
_NAME_END = "~"


def account_pk(account_id: str) -> str:
    return f"A#{account_id}"


def account_name_pk(name: str) -> str:
    return f"ACCOUNTNAME#{name}"


def key_pk(secret_hash: str) -> str:
    return f"KEY#{secret_hash}"


def key_ref_sk(key_id: str) -> str:
    return f"{KEY_REF_PREFIX}{key_id}"


def memory_sk(name: str) -> str:
    return f"{MEMORY_PREFIX}{name}"


def agent_sk(name: str) -> str:
    return f"{AGENT_PREFIX}{name}"


def usage_sk(day: str, operation: str, billable: bool) -> str:
    return f"{USAGE_PREFIX}{day}#{operation}#{int(billable)}"


def usage_parts(sk: str) -> tuple[str, str, bool]:
    day, rest = sk[len(USAGE_PREFIX):].split("#", 1)
    operation, billable = rest.rsplit("#", 1)
    return day, operation, billable == "1"


def memory_pk(account_id: str, memory: str) -> str:
    """The memory's own partition: its layers' counters."""
    return f"A#{account_id}#M#{memory}"


def layer_suffix(user_id: str | None) -> str:
    return "L" if user_id is None else f"U#{user_id}"


def user_of_suffix(suffix: str) -> str | None:
    return None if suffix == "L" else suffix[2:]


def layer_pk(layer: Layer) -> str:
    return f"{memory_pk(layer.account_id, layer.memory)}#{layer_suffix(layer.user_id)}"


def parse_layer_pk(pk: str) -> Layer:
    """The layer an entry's partition key names (the inverse of ``layer_pk``)."""
    _, account_id, _, memory, suffix = pk.split("#", 4)
    return Layer(account_id, memory, user_of_suffix(suffix))


def counter_sk(user_id: str | None) -> str:
    return f"{COUNTER_PREFIX}{layer_suffix(user_id)}"


def entry_sk(name: str) -> str:
    return f"{ENTRY_PREFIX}{name}"


def history_prefix(name: str) -> str:
    return f"{HISTORY_PREFIX}{name}#"


def history_sk(name: str, created_at: str, version: int) -> str:
    return f"{history_prefix(name)}{created_at}#{version:010d}"


def listing_sk(updated_at: str, name: str) -> str:
    """``lu_sk`` of the by_layer_updated index."""
    return f"{updated_at}#{name.translate(_MIRROR)}{_NAME_END}"


def expiry_sk(expires_at: str, user_id: str | None, name: str) -> str:
    """``mx_sk`` of the by_memory_expiry index."""
    return f"{expires_at}#{layer_suffix(user_id)}#{name}"


def due_sk(purge_after: str, account_id: str, name: str) -> str:
    """``due_sk`` of the by_due index, for a memory (``due_pk`` TRASH) or an agent (AGENT_TRASH)."""
    return f"{purge_after}#{account_id}#{name}"


def up_to(moment: str) -> str:
    """An upper bound (exclusive) for sort keys that start with a time at or before ``moment``."""
    return moment + "~"
