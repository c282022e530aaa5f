"""Which of a name's kept history a reader sees (SPEC §2.1 expires_at, §2.2 history).

A name's history is a series of runs, one per entry that held the name: created, changed, then deleted,
expired, or still live. Versions never repeat across runs (an entry created again continues after its
predecessor's last version), so ``read(name, version=N)`` names one version of one run.

A run that ended in a delete stays readable while it is kept (an undo). A run that expired is gone with its
entry: neither its versions nor its changes show, not even once the name holds a new entry.
"""

from __future__ import annotations

from collections.abc import Sequence

from .models import HistoryItem


def visible_history(items: Sequence[HistoryItem], now: str) -> list[HistoryItem]:
    """``items`` (newest first, as the store gives them) without the runs that expired by ``now``."""
    visible: list[HistoryItem] = []
    run: list[HistoryItem] = []
    for item in items:
        run.append(item)
        if item.operation == "create":  # a run's oldest change
            visible += _unless_expired(run, now)
            run = []
    return visible + _unless_expired(run, now)  # the oldest run, whose creation is no longer kept


def _unless_expired(run: list[HistoryItem], now: str) -> list[HistoryItem]:
    latest = run[0] if run else None
    if latest is not None and latest.operation != "delete" and latest.expires_at and latest.expires_at <= now:
        return []
    return run
