"""One ``agentmem serve`` a port: a lock on the port that names the server holding it.

The workers of one server listen on its port beside each other with ``SO_REUSEPORT`` (``local/workers.py``),
and the kernel lets any process of the same user listen there the same way: a second server started on the
port would start without a word, and the kernel would spread the connections over both (a client's requests
answered by a server that does not know its key). So a server takes, before it binds, an exclusive ``flock``
on a file named after the port (``agentmem-<uid>/port-<port>.lock`` in the temporary directory, the directory
the user's alone) and writes in it who it is: its pid, its command line, the address it listens on and its
data dir. A second server finds the lock taken and fails to start naming the first (``PortHeld``). The
workers inherit the lock with the fork; it goes with the last process of the server that holds it, however
that ends (a file left behind, unlocked, is taken over).

The lock is per port, whatever the address: a second server on another address of the same port is refused
too (on ``0.0.0.0`` and ``127.0.0.1`` they would overlap). A program other than agentmem on the port is
refused by the kernel (``Address already in use``), unless it too listens with ``SO_REUSEPORT``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import sys
import tempfile
from pathlib import Path


class PortHeld(OSError):
    """Another agentmem server holds the port: ``holder`` says which."""

    def __init__(self, port: int, holder: str) -> None:
        super().__init__(errno.EADDRINUSE, f"port {port} is held by another agentmem server ({holder})")
        self.port, self.holder = port, holder


def lock_dir() -> Path | None:
    """The user's directory of port locks (made if missing), or None when it cannot be trusted (another user's,
    or open to others)."""
    folder = Path(tempfile.gettempdir()) / f"agentmem-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    try:
        found = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        return None
    return folder


class PortHold:
    """The lock on a port while this server (its workers included) runs; ``release`` removes the file and lets
    the lock go (a file left behind by a server that was killed is taken over by the next)."""

    def __init__(self, fd: int | None, path: Path | None = None) -> None:
        self._fd, self._path = fd, path

    def release(self) -> None:
        if self._fd is not None:
            if self._path is not None:
                with contextlib.suppress(OSError):
                    self._path.unlink()  # while locked: a server waiting on it finds it gone and opens a new one
            os.close(self._fd)
            self._fd = None


def hold_port(port: int, host: str, data_dir: Path | str) -> PortHold:
    """Take the lock on ``port`` for this server, or raise ``PortHeld`` naming the server holding it. Without a
    directory to keep locks in, nothing is held."""
    folder = lock_dir()
    if folder is None:
        return PortHold(None)
    path = folder / f"port-{port}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _same_file(fd, path):
                break
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise PortHeld(port, holder) from None
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the file was removed by the server that held it, as this one took the lock: again
    me = {"pid": os.getpid(), "command": _command(), "address": f"{host}:{port}",
          "data_dir": str(Path(data_dir).resolve())}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(me).encode(), 0)
    return PortHold(fd, path)


def _same_file(fd: int, path: Path) -> bool:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (opened.st_dev, opened.st_ino)


def check_port(port: int, host: str, data_dir: Path | str) -> None:
    """Raise ``PortHeld`` if another agentmem server holds ``port`` (``serve-emulated`` asks before it starts its
    emulators); holds nothing."""
    if port:
        hold_port(port, host, data_dir).release()


def _command() -> str:
    program = Path(sys.argv[0]).name if sys.argv else "agentmem"
    words = ["python -m agentmem" if program == "__main__.py" else program, *sys.argv[1:]]
    return " ".join(words)[:200]


def _holder(fd: int) -> str:
    """Who holds the lock, from what it wrote in the file."""
    try:
        said = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        said = {}
    if not isinstance(said, dict) or "pid" not in said:
        return "starting"
    return (f"pid {said['pid']}: {said.get('command', 'agentmem serve')}, listening on {said.get('address', '?')}, "
            f"data dir {said.get('data_dir', '?')}")
