"""The embedded backend's files are its owner's alone: directories 0700, files 0600, whatever the umask.

A data dir holds every tenant's entries, journals and workspace files and the secret that signs links,
so no other user of the host may read it. The modes are set explicitly (a umask of 022 would leave
directories 0755 and files 0644), and a data dir left open by an earlier version is closed when it is
opened again: once the data dir is 0700, nothing inside it can be reached by another user.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def make_private_dirs(directory: Path) -> None:
    """``mkdir -p``, each directory it makes 0700; directories already there are left as they are."""
    if directory.is_dir():
        return
    make_private_dirs(directory.parent)
    try:
        directory.mkdir(mode=DIR_MODE)
    except FileExistsError:
        return  # another process made it first, as private as this one would have
    os.chmod(directory, DIR_MODE)


def tighten(path: Path, mode: int) -> None:
    """Give ``path`` exactly ``mode`` if it is there with another. Not there, or another user's (whose modes
    only its owner may change): left as it is."""
    with contextlib.suppress(FileNotFoundError, PermissionError):
        if stat.S_IMODE(path.stat().st_mode) != mode:
            os.chmod(path, mode)


def open_private_file(path: Path, flags: int) -> int:
    """``os.open`` a file (``O_CREAT``, with ``O_EXCL`` in ``flags`` for a new one only) and make it 0600,
    whatever the umask."""
    fd = os.open(path, flags | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def map_private_file(path: Path, size: int) -> tuple[int, mmap.mmap]:
    """A file of ``size`` bytes (made 0600 if missing, grown to ``size`` if shorter) mapped into this process's
    memory, where every process that maps it reads what any of them writes without a system call: its file
    descriptor (the caller's to close; the mapping outlives it) and the mapping."""
    fd = open_private_file(path, os.O_RDWR)
    try:
        if os.fstat(fd).st_size < size:
            os.ftruncate(fd, size)
        return fd, mmap.mmap(fd, size)
    except BaseException:
        os.close(fd)
        raise
