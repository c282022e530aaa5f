"""The generated block of a docs page that a benchmark rewrites with its latest tables."""

from __future__ import annotations

from pathlib import Path


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
