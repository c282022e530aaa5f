"""The lock ``agentmem serve`` holds on its port (local/port_hold.py)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from agentmem.local.port_hold import PortHeld, check_port, hold_port, lock_dir

PORT = 1  # a port no test server listens on (below 1024): the lock is only a file


def test_a_port_held_is_refused_naming_the_holder_and_free_again_once_released(tmp_path: Path) -> None:
    # Given the port held by this process for a server on a data dir
    hold = hold_port(PORT, "127.0.0.1", tmp_path / "first")
    try:
        # When another server asks for it (or serve-emulated checks it)
        for ask in (hold_port, check_port):
            with pytest.raises(PortHeld) as held:
                ask(PORT, "0.0.0.0", tmp_path / "second")
            # Then it is refused as a port in use, naming who holds it
            assert held.value.errno == errno.EADDRINUSE
            assert held.value.strerror.startswith(f"port {PORT} is held by another agentmem server (")
            assert f"pid {os.getpid()}: " in held.value.holder
            assert f"listening on 127.0.0.1:{PORT}, data dir {(tmp_path / 'first').resolve()}" in held.value.holder
    finally:
        hold.release()
    # And once released, the file is gone and the port can be held again
    folder = lock_dir()
    assert folder is not None and not (folder / f"port-{PORT}.lock").exists()
    hold_port(PORT, "127.0.0.1", tmp_path / "second").release()
