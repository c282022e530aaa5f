"""The fenced code blocks of a Markdown page, so tests can run documented code as written."""

from __future__ import annotations

import re


def fenced_blocks(markdown: str, language: str) -> list[str]:
    """The bodies of the page's ```{language} blocks, in page order (unindented fences only)."""
    return re.findall(rf"^```{language}\n(.*?)^```", markdown, flags=re.S | re.M)
