"""Ports: the small interfaces services depend on. Adapters implement them."""

from .accounts import AccountStore
from .blobs import BlobExistsError, BlobInfo, BlobNotFoundError, BlobStore
from .embedder import Embedder
from .entries import EntryStore
from .jobs import JobRun, Jobs
from .memories import MemoryStore
from .search_index import SearchHit, SearchIndex
from .usage import UsageStore

__all__ = [
    "AccountStore",
    "BlobExistsError",
    "BlobInfo",
    "BlobNotFoundError",
    "BlobStore",
    "Embedder",
    "EntryStore",
    "JobRun",
    "Jobs",
    "MemoryStore",
    "SearchHit",
    "SearchIndex",
    "UsageStore",
]
