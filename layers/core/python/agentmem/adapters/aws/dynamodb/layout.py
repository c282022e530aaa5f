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
| a name's last version | ``A#{account}#M#{memory}#{layer}`` | ``V#{name}`` |
| a pin (an entry that may be pinned) | ``A#{account}#M#{memory}#{layer}`` | ``P#{importance}#{updated_at}#{name}`` |
| conversation record | ``C#{account}#{agent}#{layer}#{key}`` | ``META`` |
| journal message (hot tail) | ``C#{account}#{agent}#{layer}#{key}`` | ``MSG#{seq:012d}`` |
| idempotency item | ``C#{account}#{agent}#{layer}#{key}`` | ``CID#{client_id}`` |
| sealed tool row's pointer | ``C#{account}#{agent}#{layer}#{key}`` | ``TC#{tool key}#{seq:012d}`` |
| the agent's conversations | ``A#{account}#G#{agent}`` | ``C#{layer}#{key}`` |
| the user's conversations | ``A#{account}#U#{user}`` | ``C#{agent}#{key}`` |

``{layer}`` is ``L`` for the account layer and ``U#{user}`` for a user's. A history row's key holds the
entry's ``created_at``, so an entry deleted (or expired) and created again starts a new run of versions
without overwriting the old one's rows while they are kept. The run continues the old one's versions: a
name's last version item holds the version a delete reached, or that of an entry that may expire (TTL
removes the entry item, not it), and a create continues after it. It lives in the layer's partition, so a
purge of the layer forgets it with the rest.

A conversation's partition holds its record, its hot tail and its idempotency items, so one
``TransactWriteItems`` appends to it. Its two reference items (written with the record, removed last by a
purge) list it by agent and by user without a scan or an eventually consistent index. Client ids may hold
any character, so they end a key and are never matched by prefix; tool call ids are hashed (``tool_key``)
into the by_tool_call index's sort key ``tc_sk`` = ``{tool key}#{seq:012d}``. A conversation over its
summary threshold sits in the by_due index under ``due_pk`` ``DUE#C``. Conversation keys, user ids and
agent names never hold a ``#``.

An agent's own memory is an ordinary memory item named ``agent:{agent}``. The agents attaching a memory
are the memory item's ``attached`` (and ``writable``) string sets. In the by_due index, trashed memories
(an agent's own memory too) sit under ``due_pk`` ``TRASH`` and trashed agents under ``TRASH#G``, so each
store's ``purge_due`` reads only its own.
"""

from __future__ import annotations

import hashlib
import struct

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
PIN_PREFIX = "P#"  # an entry's pin item, while it qualifies for the pinned block (context_index.py)
PINS_TRACKED = "pins_tracked"  # on a layer counter: every qualifying entry of the layer has its pin item
HISTORY_PREFIX = "H#"
LAST_VERSION_PREFIX = "V#"
TRASH = "TRASH"  # the by_due index's partition of trashed memories
AGENT_TRASH = "TRASH#G"  # and of trashed agents
CONVERSATION_PREFIX = "C#"  # a conversation's partition; also the sort key prefix of its reference items
META_SK = "META"
MESSAGE_PREFIX = "MSG#"
CLIENT_ID_PREFIX = "CID#"
TOOL_POINTER_PREFIX = "TC#"
CONVERSATION_DUE = "DUE#C"  # the by_due index's partition of conversations over their summary threshold
SEQ_DIGITS = 12
MAX_SEQ = 10**SEQ_DIGITS - 1

# ``lu_sk`` orders a layer's entries newest first, ties by name A→Z, when read in descending order: the
# name's characters ([a-z0-9._-]) are mirrored so a descending read sees names ascending, and "~" (above
# every mirrored character) ends it so a shorter name sorts before the longer names it starts.
_NAME_ALPHABET = "-.0123456789_abcdefghijklmnopqrstuvwxyz"
_MIRROR = str.maketrans({c: chr(0x7D - (ord(c) - 0x2D)) for c in _NAME_ALPHABET})
_NAME_END = "~"
_ALL_BITS = (1 << 64) - 1
_DIGITS_INVERTED = str.maketrans("0123456789", "9876543210")


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


def pin_sk(importance: float, updated_at: str, name: str) -> str:
    """The sort key of an entry's pin item (``P#``): in the pinned block's order, ascending — importance highest
    first (the bits of a non-negative double order as the double; inverted), then newest first (the time's
    digits inverted), then the name."""
    bits = struct.unpack(">Q", struct.pack(">d", float(importance) + 0.0))[0]
    return f"{PIN_PREFIX}{_ALL_BITS - bits:016x}#{updated_at.translate(_DIGITS_INVERTED)}#{name}"


def entry_sk(name: str) -> str:
    return f"{ENTRY_PREFIX}{name}"


def last_version_sk(name: str) -> str:
    return f"{LAST_VERSION_PREFIX}{name}"


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


# -- conversations ---------------------------------------------------------------------------------------
def conversation_pk(account_id: str, agent: str, user_id: str | None, key: str) -> str:
    return f"{CONVERSATION_PREFIX}{account_id}#{agent}#{layer_suffix(user_id)}#{key}"


def parse_conversation_pk(pk: str) -> tuple[str, str, str | None, str]:
    """(account, agent, user or None, key) of a conversation's partition key; ValueError when it is not one."""
    if not pk.startswith(CONVERSATION_PREFIX):
        raise ValueError(f"not a conversation key: {pk!r}")
    parts = pk[len(CONVERSATION_PREFIX):].split("#")
    if len(parts) == 4 and parts[2] == "L":
        account_id, agent, _, key = parts
        return account_id, agent, None, key
    if len(parts) == 5 and parts[2] == "U":
        account_id, agent, _, user_id, key = parts
        return account_id, agent, user_id, key
    raise ValueError(f"not a conversation key: {pk!r}")


def message_sk(seq: int) -> str:
    return f"{MESSAGE_PREFIX}{seq:0{SEQ_DIGITS}d}"


def message_seq(sk: str) -> int:
    return int(sk[len(MESSAGE_PREFIX):])


def client_id_sk(client_id: str) -> str:
    return f"{CLIENT_ID_PREFIX}{client_id}"


def tool_key(tool_call_id: str) -> str:
    """A tool call id (any characters) as a fixed-length key part."""
    return hashlib.sha256(tool_call_id.encode("utf-8")).hexdigest()[:32]


def tool_call_sk(tool_call_id: str, seq: int) -> str:
    """``tc_sk`` of the by_tool_call index: on a tool row while it is hot, then on its pointer."""
    return f"{tool_key(tool_call_id)}#{seq:0{SEQ_DIGITS}d}"


def tool_pointer_sk(tool_call_id: str, seq: int) -> str:
    return f"{TOOL_POINTER_PREFIX}{tool_call_sk(tool_call_id, seq)}"


def seq_of_tool_call_sk(tc_sk: str) -> int:
    return int(tc_sk.rsplit("#", 1)[1])


def agent_conversations_pk(account_id: str, agent: str) -> str:
    return f"A#{account_id}#G#{agent}"


def agent_conversation_sk(user_id: str | None, key: str) -> str:
    return f"{CONVERSATION_PREFIX}{layer_suffix(user_id)}#{key}"


def parse_agent_conversation_sk(sk: str) -> tuple[str | None, str]:
    """(user or None, key) of a reference item in the agent's partition."""
    suffix, key = sk[len(CONVERSATION_PREFIX):].rsplit("#", 1)
    return user_of_suffix(suffix), key


def user_conversations_pk(account_id: str, user_id: str) -> str:
    return f"A#{account_id}#U#{user_id}"


def user_conversation_sk(agent: str, key: str) -> str:
    return f"{CONVERSATION_PREFIX}{agent}#{key}"


def parse_user_conversation_sk(sk: str) -> tuple[str, str]:
    """(agent, key) of a reference item in the user's partition."""
    agent, key = sk[len(CONVERSATION_PREFIX):].split("#", 1)
    return agent, key


def conversation_due_sk(due_since: str, pk: str) -> str:
    """``due_sk`` of the by_due index for a conversation (``due_pk`` CONVERSATION_DUE): oldest first."""
    return f"{due_since}#{pk}"
