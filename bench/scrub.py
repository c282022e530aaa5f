"""What the scrub after a purge or an erasure costs (docs/security.md): merging the full-text indexes and emptying
the WAL, on a store of a realistic size.

    .venv/bin/python bench/scrub.py            # 10,000 entries (20 users × 500) and 40,000 messages (400 conversations)
    .venv/bin/python bench/scrub.py --quick    # a tenth of it

Builds the store on the embedded backend (no embedder) in a temporary directory, then erases users one at a time
and purges conversations one at a time, timing each operation whole and the scrub inside it
(``Database.scrub``). Prints the figures; timings are never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "layers" / "core" / "python"))

from agentmem.adapters.embedded.database import Database  # noqa: E402
from agentmem.bootstrap import build_container  # noqa: E402
from agentmem.domain.conversations import MessageDraft  # noqa: E402
from agentmem.services.agents import AgentSettings  # noqa: E402
from agentmem.services.entries import SaveRequest  # noqa: E402
from agentmem.settings import Settings  # noqa: E402

WORDS = ["refund", "invoice", "parcel", "harbour", "lisbon", "tariff", "ledger", "courier", "window", "garden",
         "ticket", "engine", "latency", "summary", "contract", "holiday", "passport", "storage"]


def text(n: int, length: int) -> str:
    return " ".join(WORDS[(n * 7 + i * 3) % len(WORDS)] + str((n + i) % 97) for i in range(length))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    users, per_user, conversations, per_conversation = (4, 250, 40, 100) if args.quick else (20, 500, 400, 100)
    with tempfile.TemporaryDirectory() as tmp:
        container = build_container(Settings(data_dir=Path(tmp), embedder="none"))
        _, secret = container.keys.create_account("bench")
        account = container.keys.authenticate("Bearer " + secret)
        container.memories.create(account, "company")
        container.agents.put(account, "support", AgentSettings(summary_messages=10_000))  # no summary pass
        started = time.perf_counter()
        for u in range(users):
            for n in range(per_user):
                container.entries.save(account, "company", f"note-{n}", SaveRequest(
                    content=text(u * per_user + n, 60), description=f"note {n}"), user=f"user-{u}")
        for c in range(conversations):
            for start in range(0, per_conversation, 40):
                said = [MessageDraft("user" if i % 2 == 0 else "assistant", text(c * 1000 + i, 30))
                        for i in range(start, min(per_conversation, start + 40))]
                container.conversations.append(account, "support", f"c{c}", said, user=f"user-{c % users}")
        db: Database = container.stores.entries.db  # type: ignore[attr-defined]
        size = Path(tmp, "agentmem.db").stat().st_size
        print(f"store: {users * per_user:,} entries, {conversations * per_conversation:,} messages, "
              f"{size / 1e6:.1f} MB ({time.perf_counter() - started:.0f} s to build)")

        scrubs: list[float] = []
        original = db.scrub

        def timed(*, entries: bool = True, messages: bool = True) -> bool:
            begun = time.perf_counter()
            try:
                return original(entries=entries, messages=messages)
            finally:
                scrubs.append(time.perf_counter() - begun)

        db.scrub = timed  # type: ignore[method-assign]
        purges: list[float] = []
        for c in range(0, conversations, max(1, conversations // 10))[:10]:
            begun = time.perf_counter()
            container.conversations.delete(account, "support", f"c{c}", user=f"user-{c % users}", purge=True)
            purges.append(time.perf_counter() - begun)
        purge_scrubs, scrubs[:] = list(scrubs), []
        erasures: list[float] = []
        for u in range(min(3, users)):
            begun = time.perf_counter()
            container.erasure.erase_user(account, f"user-{u}")
            erasures.append(time.perf_counter() - begun)

        def ms(values: list[float]) -> str:
            return f"median {statistics.median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, " \
                   f"max {max(values) * 1000:.0f}; n={len(values)})"

        print(f"a conversation's purge ({per_conversation} messages): {ms(purges)}; its scrub {ms(purge_scrubs)}")
        print(f"a user's erasure ({per_user} entries, {conversations // users} conversations): {ms(erasures)}; "
              f"its scrub {ms(scrubs)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
