"""The fenced code blocks of a Markdown page, so tests can run documented code as written."""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any


def fenced_blocks(markdown: str, language: str) -> list[str]:
    """The bodies of the page's ```{language} blocks, in page order (unindented fences only)."""
    return re.findall(rf"^```{language}\n(.*?)^```", markdown, flags=re.S | re.M)


PRINT_WITH_VALUE = re.compile(r"^(?P<code>.*\bprint\(.*?)\s+#\s(?P<value>.*)$")
COMMENT_LINE = re.compile(r"^\s*#\s?(?P<value>.*)$")


def expected_output(block: str) -> list[str]:
    """What a block's comments say it prints: ``print(...)  # value``, and the comment lines right under a
    print (a loop's output). A comment starting ``e.g.`` is an illustration, not a promise."""
    values: list[str] = []
    after_print = False
    illustration = False
    for line in block.splitlines():
        printed = PRINT_WITH_VALUE.match(line)
        comment = COMMENT_LINE.match(line)
        if printed:
            illustration = printed["value"].startswith("e.g.")
            if not illustration:
                values.append(printed["value"])
            after_print = True
        elif comment and after_print:
            if comment["value"].startswith("e.g."):
                illustration = True
            if not illustration:
                values.append(comment["value"].strip())
        else:
            after_print = "print(" in line
            illustration = False
    return values


def check_printed(block: str, printed: str, where: str) -> None:
    """Each value the comments promise was printed, in order (a value may add ``: explanation``)."""
    lines = printed.splitlines()
    position = 0
    for value in expected_output(block):
        while position < len(lines) and not (value == lines[position] or value.startswith(lines[position] + ": ")):
            position += 1
        assert position < len(lines), f"{where}: the comment says it prints {value!r}; it printed:\n{printed}"
        position += 1


def run_block(block: str, namespace: dict[str, Any], where: str) -> str:
    """Run one Python block in ``namespace`` (a reader's session), check what it printed against its
    comments (``check_printed``), and return the printed text."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, where, "exec"), namespace)
    check_printed(block, out.getvalue(), where)
    return out.getvalue()


def section(page: str, title: str) -> str:
    """The page's text under the heading ``## title``, up to the next heading of the page's outline
    (headings inside fenced blocks do not count)."""
    headings = re.findall(r"^## (.+)$", re.sub(r"^```.*?^```", "", page, flags=re.S | re.M), flags=re.M)
    start = page.index(f"\n## {title}\n")
    following = headings[headings.index(title) + 1 :]
    return page[start : page.index(f"\n## {following[0]}\n") if following else len(page)]
