"""Background jobs: the summary pass (SPEC §4.3) on Step Functions, or on an in-process runner."""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

JobState = Literal["running", "succeeded", "failed"]

MAX_RUN_NAME = 80  # Step Functions' limit on an execution name
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_HASH_CHARS = 16


def run_name(name: str, discriminator: str = "") -> str:
    """The run's name: deterministic in (name, discriminator), at most 80 characters of ``[A-Za-z0-9_-]``
    (valid for a Step Functions execution), readable, and unique through a hash of both raw values."""
    digest = hashlib.sha256(f"{name}\x00{discriminator}".encode()).hexdigest()[:_HASH_CHARS]
    readable = _UNSAFE.sub("-", f"{name}--{discriminator}" if discriminator else name).strip("-")
    readable = readable[: MAX_RUN_NAME - _HASH_CHARS - 1].rstrip("-")
    return f"{readable}-{digest}" if readable else digest


@dataclass(frozen=True)
class JobRun:
    run_id: str
    name: str  # the run name (``run_name``), not the job name
    state: JobState
    output: Mapping[str, Any] | None = None  # when succeeded
    error: str | None = None  # when failed: "<ErrorType>: <message>"


class Jobs(ABC):
    """Starts named runs of the summary pass (flush → summarise → write checkpoint) in the background.

    A run is named by ``(name, discriminator)`` (``run_name``). ``start`` never blocks on the work and
    never starts the same run twice: when a run of that name is already running (or has already run),
    it does nothing and returns that run's id. On Step Functions this is the named execution
    (``ExecutionAlreadyExists``); the embedded runner keeps the same rule in memory.

    One pass per conversation at a time (SPEC §4.3): the caller names the run after the conversation and
    uses as discriminator something that stays the same until the pass has done its work (the seq the
    pass folds from). Every trigger while the pass is due then names the same run, so only one starts;
    once it has folded, the next trigger names a new one. The embedded runner is stricter still: it never
    runs two runs of one ``name`` at once, whatever the discriminator.

    A failing run is retried (3 tries with backoff: the state machine's Retry, or the runner's loop)
    and then ends ``failed``; nothing is lost, the next pass picks the work up.
    """

    @abstractmethod
    def start(self, name: str, payload: Mapping[str, Any], *, discriminator: str = "") -> str:
        """Start the run (or find the one already started) and return its id. ``payload`` is JSON."""

    @abstractmethod
    def describe(self, run_id: str) -> JobRun:
        """Where the run stands; NotFoundError for an id this backend never started."""
