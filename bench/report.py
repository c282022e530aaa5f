"""What the benchmarks share in their reports: the targets, as printed and as Markdown, and the generated
block of a docs page that a benchmark rewrites with its latest tables."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

Check = dict[str, Any]  # {"target": ..., "value": ..., "met": bool, ...}


def replace_block(path: Path, begin: str, end: str, text: str) -> bool:
    """Put ``text`` between the ``begin`` and ``end`` markers of the page; False (and no change) when the
    page or its markers are missing."""
    if not path.exists():
        return False
    page = path.read_text()
    if begin not in page or end not in page:
        return False
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    path.write_text(f"{head}{begin}\n{text}{end}{tail}")
    return True


def print_targets(checks: list[Check], value_text: Callable[[Check], str], width: int) -> None:
    """The targets and this run's value of each, marked PASS or MISS."""
    print("Targets")
    for check in checks:
        mark = "PASS" if check["met"] else "MISS"
        print(f"  [{mark}] {check['target']:<{width}} {value_text(check)}")
    print()


def targets_markdown(checks: list[Check], value_text: Callable[[Check], str]) -> list[str]:
    """The same as the lines of a Markdown table, under a bold heading."""
    out = ["", "**Targets**", "", "| target | this run | met |", "|---|--:|:-:|"]
    for check in checks:
        out.append(f"| {check['target']} | {value_text(check)} | {'✅' if check['met'] else '❌'} |")
    return out
