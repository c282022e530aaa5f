"""The fenced code blocks of a Markdown page, so tests can run documented code as written."""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
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
    """Each value the comments promise was printed, in order (a value may add ``: explanation``, or an
    explanation set off by two spaces or more)."""
    lines = printed.splitlines()
    position = 0
    for value in expected_output(block):
        while position < len(lines) and not _says(value, lines[position]):
            position += 1
        assert position < len(lines), f"{where}: the comment says it prints {value!r}; it printed:\n{printed}"
        position += 1


def _says(value: str, line: str) -> bool:
    if value == line or value.startswith(line + ": "):
        return True
    return re.fullmatch(re.escape(line) + r" {2,}\S.*", value) is not None


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


# --- every block of a page, as a reader meets them ------------------------------------------------------

RUNNABLE = {"python": "python", "bash": "bash", "sh": "bash"}
NOT_RUN = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>.+?)\s*-->\s*$")
PAGE_NOT_RUN = re.compile(r"^<!--\s*page not run:\s*(?P<reason>.+?)\s*-->\s*$", flags=re.M)
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: where it starts (the fence's line, 1-based), its language (the fence's
    first word: ``python``, ``bash``; ``sh`` counts as ``bash``), its body with the list indentation taken
    off, and why it is not run, when the page says so (``<!-- not run: reason -->`` on the line before the
    fence, or ``<!-- page not run: reason -->`` anywhere on the page for all of its blocks)."""

    line: int
    language: str
    body: str
    not_run: str | None

    @property
    def runs(self) -> bool:
        return self.language in RUNNABLE and self.not_run is None


def page_blocks(markdown: str) -> list[Block]:
    """Every fenced block of the page in page order, indented ones (in a list item) included."""
    page_reason = PAGE_NOT_RUN.search(markdown)
    lines = markdown.splitlines()
    blocks: list[Block] = []
    number = 0
    while number < len(lines):
        opening = FENCE.match(lines[number])
        if not opening:
            number += 1
            continue
        indent, info = opening["indent"], opening["info"].strip()
        body: list[str] = []
        end = number + 1
        while end < len(lines) and lines[end].strip() != "```":
            body.append(lines[end][len(indent):] if lines[end].startswith(indent) else lines[end].lstrip())
            end += 1
        previous = next((line for line in reversed(lines[:number]) if line.strip()), "")
        marked = NOT_RUN.match(previous)
        reason = marked["reason"] if marked else page_reason["reason"] if page_reason else None
        language = info.split()[0] if info else ""
        blocks.append(Block(number + 1, RUNNABLE.get(language, language), "\n".join(body) + "\n", reason))
        number = end + 1
    return blocks
