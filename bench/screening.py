"""How long screening a write takes: 20,000 characters of prose, and fragments repeated to
20,000 characters that tease each rule (a super-linear rule would show here in seconds).

    .venv/bin/python bench/screening.py
"""

from __future__ import annotations

import time

from agentmem.domain.screening import screen

PROSE = (
    "On 2026-11-30 at 12:30 the user asked to keep answers short (v1.2.3, order #123456); "
    "see https://example.org/docs?id=42 or write to team@example.org. "
)
FRAGMENTS = ["password:", "a@", "1", " 1", "ignore ", "you are now ", "\nsystem x", "key=", "QQ 12 34 56 "]


def best_of(text: str, runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        screen(text)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    cases = {"prose": PROSE, **{f"repeated {f!r}": f for f in FRAGMENTS}}
    print(f"{'20,000 characters of':<28} {'best of 5 (ms)':>14}")
    for label, unit in cases.items():
        text = (unit * (20_000 // len(unit) + 1))[:20_000]
        print(f"{label:<28} {best_of(text) * 1000:>14.3f}")


if __name__ == "__main__":
    main()
