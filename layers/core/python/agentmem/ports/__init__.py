"""Ports: the small interfaces services depend on. Adapters implement them."""

from .accounts import AccountStore
from .entries import EntryStore
from .memories import MemoryStore
from .usage import UsageStore

__all__ = ["AccountStore", "EntryStore", "MemoryStore", "UsageStore"]
