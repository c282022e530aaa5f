"""A reader working through a page: one Python session and one bash shell for the page, both in the reader's
folder, fed the page's blocks in page order; state carries between the blocks of a page, never between pages."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from doc_blocks import Block, check_printed

HERE = Path(__file__).resolve().parent


class BlockFailed(AssertionError):
    pass


def _wait_for(answer: Path, process: subprocess.Popen[Any], timeout: float, where: str) -> None:
    deadline = time.monotonic() + timeout
    while not answer.exists():
        if process.poll() is not None:
            raise BlockFailed(f"{where}: the session ended (exit {process.returncode}) while the block ran")
        if time.monotonic() > deadline:
            raise BlockFailed(f"{where}: still running after {timeout:.0f} s")
        time.sleep(0.02)


class Reader:
    """The page's sessions, started on first use; ``run`` runs one block and raises ``BlockFailed`` naming
    the page and the block's line when it fails (a Python error, a warning of the SDK, or a comment's value
    not printed; a bash command that exits non-zero, as ``set -e -o pipefail`` would stop at it)."""

    def __init__(self, page: str, folder: Path, env: dict[str, str], scratch: Path, timeout: float = 120.0) -> None:
        self.page, self.folder, self.env, self.scratch, self.timeout = page, folder, env, scratch, timeout
        self.python: subprocess.Popen[str] | None = None
        self.bash: subprocess.Popen[str] | None = None
        self.count = 0
        self.seconds: dict[str, float] = {}

    def run(self, block: Block) -> str:
        self.count += 1
        where = f"{self.page}:{block.line}"
        started = time.monotonic()
        try:
            return self._python(block, where) if block.language == "python" else self._bash(block, where)
        finally:
            self.seconds[where] = time.monotonic() - started

    def _python(self, block: Block, where: str) -> str:
        if self.python is None:
            self.python = subprocess.Popen(
                [sys.executable, "-u", str(HERE / "doc_python_session.py")], cwd=self.folder, env=self.env,
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
                start_new_session=True)
        assert self.python.stdin is not None
        answer = self.scratch / f"python-{self.count}.json"
        code = "\n" * block.line + block.body  # the block's first line is the page's line after the fence
        self.python.stdin.write(json.dumps({"code": code, "page": self.page, "answer": str(answer)}) + "\n")
        self.python.stdin.flush()
        _wait_for(answer, self.python, self.timeout, where)
        result = json.loads(answer.read_text())
        if result["error"]:
            raise BlockFailed(f"{where}: the block raised\n{result['error']}\nit printed:\n{result['printed']}")
        if result["warnings"]:
            raise BlockFailed(f"{where}: the SDK warned: " + "\n".join(result["warnings"]))
        check_printed(block.body, result["printed"], where)
        return str(result["printed"])

    def _bash(self, block: Block, where: str) -> str:
        if self.bash is None:
            self.bash = subprocess.Popen(
                ["bash", "--noprofile", "--norc", "-s"], cwd=self.folder, env=self.env, stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
            assert self.bash.stdin is not None
            # a failing command is reported on descriptor 3 with the page's line, the way `set -e` stops at it
            # and a variable the page never set stops it (`set -u`): a page must not lean on another page's
            self.bash.stdin.write("set -E -u -o pipefail\n"
                                  "trap 'echo \"line $LINENO: $BASH_COMMAND (exit $?)\" >&3' ERR\n")
        assert self.bash.stdin is not None
        script = self.scratch / f"bash-{self.count}.sh"
        script.write_text("\n" * block.line + block.body)
        out, err, failed, answer = (self.scratch / f"bash-{self.count}.{suffix}"
                                    for suffix in ("out", "err", "failed", "rc"))
        self.bash.stdin.write(f"{{ source {script}; }} >{out} 2>{err} 3>{failed} </dev/null; "
                              f"echo $? >{answer}.tmp; mv {answer}.tmp {answer}\n")
        self.bash.stdin.flush()
        try:
            _wait_for(answer, self.bash, self.timeout, where)
        except BlockFailed as failure:
            raise BlockFailed(f"{failure}\nstderr:\n{err.read_text() if err.exists() else ''}") from None
        printed, errors, failures = out.read_text(), err.read_text(), failed.read_text()
        if failures:
            first = failures.splitlines()[0]
            raise BlockFailed(f"{where}: the command at {self.page} {first}\nstdout:\n{printed}\nstderr:\n{errors}")
        return printed

    def close(self) -> None:
        """End both sessions, and whatever a block left running in them (each is its own process group)."""
        for process in (self.python, self.bash):
            if process is None:
                continue
            if process.poll() is None:
                assert process.stdin is not None
                process.stdin.close()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)


def syntax_problem(block: Block) -> str | None:
    """A block that is not run is still read: ``bash -n`` for a shell block, ``compile`` for Python."""
    if block.language == "bash":
        checked = subprocess.run(["bash", "-n"], input=block.body, capture_output=True, text=True, timeout=30)
        return checked.stderr.strip() or None if checked.returncode else None
    if block.language == "python":
        try:
            compile("\n" * block.line + block.body, "block", "exec")
        except SyntaxError as error:
            return str(error)
    return None


def reader_environment(served: dict[str, str]) -> dict[str, str]:
    """What the reader's shell holds: the environment without any AGENTMEM_ variable, the virtualenv's
    commands on PATH (the install page's `. .venv/bin/activate`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    env["PATH"] = served["PATH"]
    return env
