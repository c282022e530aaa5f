"""The embedded index's large partitions kept on disk, so a process that starts does not build their graphs again.

A partition above ``ANN_THRESHOLD`` vectors is searched through an HNSW graph (``vector_index.py``). Building
one from the database's vectors adds a few thousand vectors a second: a journal of a million messages (two
million vectors with its passages) took ten minutes, every time a process started. So a graph, once built, is
saved beside the database (``<database>.graphs/``, private like the rest of the data dir) with what the
partition holds in memory beside it, and the newest vector row and removal it includes. A process that loads
the partition reads the two files and brings them up to date from the database as it does a partition it holds:
the vectors removed since, then the vectors written since.

Two files a partition, named by a hash of its name: ``<hash>.npz`` (numpy arrays, never pickled objects) names
the graph it goes with, ``<hash>.<token>.usearch``. A save writes the graph under a new name first and replaces
the ``.npz`` after it, so a reader finds either the old pair or the new one; the old graph is removed after.

A saved graph is never trusted beyond what it says: another embedder, another dimension, a removal log that no
longer reaches back to it (``KEEP_REMOVALS``), a file that cannot be read: it is dropped and the partition is
built from the database. A partition that loses vectors (an erased conversation, a removed entry) has its files
removed at once, so what was erased does not stay on disk; it is saved again later (``vector_index.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...observability import logger
from .private_files import FILE_MODE, make_private_dirs, open_private_file

FORMAT = 1  # the layout of the arrays; a file of another is not read


@dataclass(frozen=True)
class Saved:
    """A partition's saved state: its arrays, its graph, and the newest vector row and removal it includes."""

    arrays: Mapping[str, np.ndarray[Any, Any]]
    graph: Any  # a usearch Index
    seen: int
    removed: int


class GraphFiles:
    """The saved graphs of one database (``directory``: ``<database>.graphs``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _stem(self, partition: str) -> str:
        return hashlib.blake2b(partition.encode("utf-8"), digest_size=16).hexdigest()

    def _meta(self, partition: str) -> Path:
        return self.directory / f"{self._stem(partition)}.npz"

    def partitions(self) -> list[str]:
        """The partitions saved here (their names, read from their files)."""
        names = []
        for path in sorted(self.directory.glob("*.npz")) if self.directory.is_dir() else []:
            with contextlib.suppress(Exception), np.load(path, allow_pickle=False) as meta:
                names.append(str(meta["partition"]))
        return names

    def save(self, partition: str, arrays: Mapping[str, np.ndarray[Any, Any]], graph: Any, *, seen: int,
             removed: int, embedder: str, dimension: int) -> int:
        """Write the partition's graph and arrays (the graph first, then the arrays that name it); the bytes
        written."""
        make_private_dirs(self.directory)
        stem = self._stem(partition)
        token = f"{seen}-{os.getpid()}-{time.monotonic_ns()}"
        graph_path = self.directory / f"{stem}.{token}.usearch"
        writing = graph_path.with_suffix(".writing")
        os.close(open_private_file(writing, os.O_WRONLY | os.O_TRUNC))  # 0600 before any byte is in it
        graph.save(str(writing))
        os.chmod(writing, FILE_MODE)
        os.replace(writing, graph_path)
        meta_writing = self.directory / f"{stem}.{token}.npz.writing"
        fd = open_private_file(meta_writing, os.O_WRONLY | os.O_TRUNC)
        fields: dict[str, Any] = {
            "format": np.int64(FORMAT), "partition": np.str_(partition), "graph": np.str_(graph_path.name),
            "seen": np.int64(seen), "removed": np.int64(removed), "embedder": np.str_(embedder),
            "dimension": np.int64(dimension), **arrays}
        with os.fdopen(fd, "wb") as out:
            np.savez(out, **fields)
            out.flush()
            os.fsync(out.fileno())
        os.replace(meta_writing, self._meta(partition))
        for old in self.directory.glob(f"{stem}.*.usearch"):
            if old != graph_path:
                old.unlink(missing_ok=True)
        return graph_path.stat().st_size + self._meta(partition).stat().st_size

    def load(self, partition: str, *, embedder: str, dimension: int) -> Saved | None:
        """The partition's saved state, when there is one for this embedder and dimension that can be read."""
        from usearch.index import Index

        path = self._meta(partition)
        for _ in range(2):  # a save may replace the pair between reading the arrays and opening the graph
            if not path.exists():
                return None
            try:
                with np.load(path, allow_pickle=False) as meta:
                    if (int(meta["format"]) != FORMAT or str(meta["partition"]) != partition
                            or str(meta["embedder"]) != embedder or int(meta["dimension"]) != dimension):
                        logger.info("a saved graph is of another embedder or layout: it is built again",
                                    extra={"partition": partition})
                        self.forget(partition)
                        return None
                    arrays = {name: meta[name] for name in meta.files}
                graph = Index.restore(str(self.directory / str(arrays["graph"])))
                if graph is None:
                    raise ValueError("the graph's file holds no index")
                return Saved(arrays, graph, int(arrays["seen"]), int(arrays["removed"]))
            except FileNotFoundError:
                continue
            except Exception:
                logger.exception("a saved graph could not be read: it is built again", extra={"partition": partition})
                self.forget(partition)
                return None
        return None

    def forget(self, partition: str) -> None:
        """Remove the partition's files (it lost vectors, or they cannot be used)."""
        if not self.directory.is_dir():
            return
        for path in self.directory.glob(f"{self._stem(partition)}.*"):  # (the arrays' file too)
            path.unlink(missing_ok=True)

    def forget_all(self) -> None:
        if self.directory.is_dir():
            for path in self.directory.iterdir():
                path.unlink(missing_ok=True)
