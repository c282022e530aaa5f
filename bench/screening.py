"""Screening (SPEC §2.5): how much of the adversarial corpus it refuses, per obfuscation; how much ordinary text
it lets through; and what it costs a save.

    PYTHONPATH=layers/core/python .venv/bin/python bench/screening.py [--out bench/results/screening.json]

The corpus is the tests' (tests/support/screening_corpus.py): base phrases × obfuscations. An injection variant
is *detected* when screening finds an injection; a credential or personal datum when screening would keep it
out of the account layer (sensitive, or refused as an injection). Ordinary text is a *false positive* when
screening finds anything at all in it.

Cost (CPU time): the best of 5 runs of ``screen`` on 20,000 characters of prose and of fragments repeated to 20,000
characters that tease each rule (a super-linear rule would show here in seconds), and the mean CPU time over
the ordinary corpus (each text a save's content), the first pass apart (what loading the detectors costs: the
libraries are imported on the first text that needs each).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))  # screening_corpus

from agentmem.domain.screening import screen  # noqa: E402
from screening_corpus import (  # noqa: E402
    INJECTION_WRITTEN,
    ORDINARY,
    SENSITIVE_WRITTEN,
    injection_variants,
    sensitive_variants,
)

PROSE = (
    "On 2026-11-30 at 12:30 the user asked to keep answers short (v1.2.3, order #123456); "
    "see https://example.org/docs?id=42 or write to team@example.org. "
)
FRAGMENTS = ["password:", "a@", "1", " 1", "ignore ", "you are now ", "\nsystem x", "key=", "QQ 12 34 56 ",
             "é", "a b ", "<b>", "**x", "token: ", "DE89 ", "://a:b@",
             "writer-7-round-12 "]  # long tokens on one line: the vendor plugins read the line once


def best_of(text: str, runs: int = 5) -> float:
    """CPU time of this thread, best of ``runs``: steady on a shared machine, where wall time is not."""
    best = float("inf")
    for _ in range(runs):
        started = time.thread_time()
        screen(text)
        best = min(best, time.thread_time() - started)
    return best


def rates() -> dict[str, dict[str, dict[str, float]]]:
    inj: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for v in injection_variants():
        inj[v.family][0] += screen(v.text).injection is not None
        inj[v.family][1] += 1
    for text in INJECTION_WRITTEN:
        inj["hand_written"][0] += screen(text).injection is not None
        inj["hand_written"][1] += 1
    sens: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    sens_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for v in sensitive_variants():
        found = screen(v.text)
        hit = found.injection is not None or found.is_sensitive
        family, kind = v.family.split("/")
        for table, key in ((sens, family), (sens_kind, kind)):
            table[key][0] += hit
            table[key][1] += 1
    for text in SENSITIVE_WRITTEN:
        found = screen(text)
        hit = found.injection is not None or found.is_sensitive
        for table in (sens, sens_kind):
            table["hand_written"][0] += hit
            table["hand_written"][1] += 1
    false_pos = [t for t in ORDINARY if screen(t) != screen()]

    def rated(counts: dict[str, list[int]]) -> dict[str, dict[str, float]]:
        return {f: {"detected": d, "of": n, "rate": round(d / n, 3)} for f, (d, n) in counts.items()}

    return {
        "injection": rated(inj),
        "sensitive_by_obfuscation": rated(sens),
        "sensitive_by_kind": rated(sens_kind),
        "ordinary": {"all": {"false_positives": len(false_pos), "of": len(ORDINARY),
                             "rate": round(len(false_pos) / len(ORDINARY), 3)}},
        "false_positive_texts": {t[:60]: {"found": 1.0} for t in false_pos},
    }


def costs() -> dict[str, float]:
    started = time.perf_counter()
    for text in ORDINARY:  # the first pass loads whatever is loaded on first use
        screen(text)
    first = time.perf_counter() - started
    runs = 20
    per_save = float("inf")
    for _ in range(5):  # CPU time of this thread, best of 5: steady on a shared machine, where wall time is not
        started = time.thread_time()
        for _ in range(runs):
            for text in ORDINARY:
                screen(text)
        per_save = min(per_save, (time.thread_time() - started) / (runs * len(ORDINARY)))
    out = {"ordinary_first_pass_ms": round(first * 1000, 2), "ordinary_per_save_cpu_us": round(per_save * 1e6, 1)}
    for label, unit in {"prose": PROSE, **{f"repeated {f!r}": f for f in FRAGMENTS}}.items():
        text = (unit * (20_000 // len(unit) + 1))[:20_000]
        out[f"20k {label} cpu_ms"] = round(best_of(text) * 1000, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "screening.json"))
    args = parser.parse_args()
    cost = costs()  # first: the first pass is what a fresh process pays
    found = rates()
    for section in ("injection", "sensitive_by_obfuscation", "sensitive_by_kind"):
        table = found[section]
        total = sum(int(v["detected"]) for v in table.values()), sum(int(v["of"]) for v in table.values())
        print(f"\n{section} (detected {total[0]}/{total[1]})")
        for family, v in sorted(table.items()):
            print(f"  {family:<38} {int(v['detected']):>4}/{int(v['of']):<4} {v['rate']:>6.0%}")
    o = found["ordinary"]["all"]
    print(f"\nordinary text: {o['false_positives']}/{o['of']} refused or forced private ({o['rate']:.1%})")
    for text in found["false_positive_texts"]:
        print(f"  false positive: {text!r}")
    print("\ncost")
    for label, value in cost.items():
        print(f"  {label:<38} {value:>10}")
    Path(args.out).write_text(json.dumps({"rates": found, "cost": cost}, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
