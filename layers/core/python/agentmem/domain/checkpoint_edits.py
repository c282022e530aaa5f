"""The lines a person wrote into a checkpoint, and how every summary pass carries them (SPEC §4.4). Pure.

An edit wins over the next summary twice over. The pass starts from the edited text (the summariser reads it
as the previous summary), and then, whatever the summariser made of it — the extractive one, a model —
every line a person wrote is in the new summary, word for word, until the conversation contradicts it or
the person edits it away:

* **whose line** — the checkpoint's history says who wrote each version (``updated_by``): the lines a version
  written by a person (``api``, ``console``, ``agent``) holds that the version before it did not are theirs
  (when that version is no longer kept, every line of theirs is). The conversation record keeps those lines'
  ids (``line_id``) and when each was written from pass to pass, so they stay a person's after the history is
  gone (30 days). A line no longer in the text — the person edited it away — is no longer carried.
* **contradicted** — a message said *after* the line was written, once folded, states the same thing anew (a
  fact or a remembered item of the same key: "The deadline is now Monday." after "CORRECTED: the deadline is
  Friday."), or asks to forget what the line says: the line is dropped, and the summary keeps what the
  conversation said. A message said before the edit never undoes it: the person corrected what it said.
* **carried** — a line of the person's that the summary lacks goes back at the end of the section it sat in
  (a section the summary no longer has comes back with it), word for word (one it kept with a bullet added
  gets its own form back); a credential in it is left out
  as in any summary line, except in the Remembered section. If the result would not fit an entry, the
  summariser's lines go first (recent topics, open questions, decisions, facts), never the person's.

Lines are compared without their bullet and spacing ("- x" and "x" are one line).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .conversations import Message
from .rules import CONTENT_MAX
from .statements import assistant_statements, forget_hits, user_statements
from .summary import DROPPED_NOTE, FACT_LINE, HEADING, NONE_LINE, SECTION, SECTION_TITLES, TITLE
from .summary_secrets import leave_out_secrets
from .summary_words import SUBJECT, fact_key

__all__ = ["ByHand", "Carried", "Version", "carry", "contradicted", "line_id", "lines_by_hand"]

SYSTEM = "system"
_STATING = ("profile", "preference", "fact", "remember")
_CUT_FIRST = ("recent topics", "open questions", "decisions", "facts", "remembered")


@dataclass(frozen=True)
class Version:
    """One kept version of the checkpoint (its history, newest first, as the store gives it)."""

    version: int
    updated_by: str
    content: str
    at: str  # when it was written (ISO-8601, as the journal's ``created_at``)
    deleted: bool = False


@dataclass(frozen=True)
class ByHand:
    """One line of the checkpoint a person wrote, and when."""

    line: str
    at: str

    @property
    def mark(self) -> str:
        """How the conversation record keeps it: ``<line id>@<when>``."""
        return f"{line_id(self.line)}@{self.at}"


@dataclass(frozen=True)
class Carried:
    """A pass's summary with the person's lines in it, and their marks (``ByHand.mark``, for the record)."""

    text: str
    lines_by_hand: tuple[str, ...]


def _norm(line: str) -> str:
    text = line.strip()
    if text[:2] in ("- ", "* ", "+ "):
        text = text[2:]
    return " ".join(text.split())


def line_id(line: str) -> str:
    """A line's id: the same for the same words, bullet and spacing aside."""
    return hashlib.sha256(_norm(line).encode("utf-8")).hexdigest()[:12]


def _own_structure(line: str) -> bool:
    """The summary's own scaffolding, never a person's line: the title, its sections' headings, "(none)"."""
    text = _norm(line)
    if not text or text == TITLE.strip() or text == NONE_LINE or DROPPED_NOTE.match(text):
        return True
    m = SECTION.match(line.strip())
    return m is not None and m.group("t").lower() in {t.lower() for t in SECTION_TITLES}


def _norms(text: str | None) -> set[str]:
    return {_norm(line) for line in (text or "").splitlines() if not _own_structure(line)}


def lines_by_hand(
    current: Version, history: Sequence[Version], *, carried: Iterable[str] = (), since: int = 0
) -> list[ByHand]:
    """The lines of the ``current`` checkpoint a person wrote, in order: those ``carried`` marks name (what
    the record kept) and those added by each version a person wrote after version ``since`` (the one the last
    pass wrote), found in ``history`` (newest first; nothing before a deletion counts)."""
    kept: dict[int, Version] = {}
    for item in history:
        if item.deleted:
            break
        kept.setdefault(item.version, item)
    kept.setdefault(current.version, current)
    added: dict[str, str] = {}  # line → when a person wrote it
    for number in sorted(kept):
        item = kept[number]
        if number <= since or item.updated_by == SYSTEM:
            continue
        before = kept.get(number - 1)
        for norm in _norms(item.content) - (_norms(before.content) if before is not None else set()):
            added.setdefault(norm, item.at)
    marks = dict(mark.split("@", 1) for mark in carried if "@" in mark)
    out: list[ByHand] = []
    seen: set[str] = set()
    for line in current.content.splitlines():
        norm = _norm(line)
        if _own_structure(line) or norm in seen:
            continue
        at = marks.get(line_id(line)) or added.get(norm)
        if at is not None:
            out.append(ByHand(line, at))
            seen.add(norm)
    return out


def _keys(line: str) -> set[str]:
    """What a line states, as the keys of facts and remembered items ("the deadline is Friday" → deadline)."""
    body = _norm(line)
    keys: set[str] = set()
    m = FACT_LINE.match(body)
    if m is not None:
        keys.add(m.group("k"))
    keys |= {st.key for st in user_statements(body) if st.kind in _STATING and st.key}
    parts = [body] + [body[i + 1 :].strip() for i, c in enumerate(body) if c == ":"]
    for part in parts:
        m = SUBJECT.match(part)
        if m is not None:
            key = fact_key(m.group("s"))
            if key:
                keys.add(key)
    return keys


def contradicted(line: str, messages: Sequence[Message], *, after: str = "") -> bool:
    """Whether a message said after ``after`` (when the person wrote ``line``) says otherwise: it states a
    fact or a remembered item of the same key, or asks to forget what the line says."""
    keys = _keys(line)
    body = _norm(line)
    for message in messages:
        if message.created_at <= after:
            continue
        if message.role == "user":
            said = user_statements(message.content)
        elif message.role == "assistant":
            said = assistant_statements(message.content)
        else:
            continue
        for st in said:
            if st.kind in _STATING and st.key in keys and _norm(st.text) != body:
                return True
            if st.kind == "forget" and (st.key or st.target) and forget_hits(st, {"~line": body}, match_text=True):
                return True
    return False


def _section_of(lines: Sequence[str]) -> list[str | None]:
    """The heading each line sits under (None: before the first heading)."""
    heading: str | None = None
    out: list[str | None] = []
    for line in lines:
        if HEADING.match(line) is not None and line.strip() != TITLE.strip():
            heading = line.strip()
        out.append(heading)
    return out


def _same_heading(a: str, b: str) -> bool:
    return " ".join(a.lower().rstrip(":").split()) == " ".join(b.lower().rstrip(":").split())


def _insert(out: list[str], heading: str | None, line: str) -> None:
    if heading is None:  # before the first section, after the title
        at = next((i for i, ln in enumerate(out) if HEADING.match(ln) and ln.strip() != TITLE.strip()), len(out))
        while at > 0 and not out[at - 1].strip():
            at -= 1
        out.insert(at, line)
        return
    start = next((i for i, ln in enumerate(out) if _same_heading(ln, heading)), None)
    if start is None:
        while out and not out[-1].strip():
            out.pop()
        out += ["", heading, line]
        return
    end = next((i for i in range(start + 1, len(out)) if HEADING.match(out[i])), len(out))
    while end > start + 1 and not out[end - 1].strip():
        end -= 1
    if end == start + 2 and out[start + 1].strip() == NONE_LINE:
        out[start + 1] = line
    else:
        out.insert(end, line)


def _fit(out: list[str], theirs: set[str], limit: int) -> list[str]:
    """The summariser's lines go, least important section first and last line first, until it fits."""
    sections = _section_of(out)
    for title in _CUT_FIRST:
        for i in range(len(out) - 1, -1, -1):
            if len("\n".join(out)) <= limit:
                return out
            heading = sections[i]
            if heading is None or not _same_heading(heading, f"## {title}") or HEADING.match(out[i]):
                continue
            if _norm(out[i]) not in theirs and out[i].strip():
                del out[i], sections[i]
    return out


def carry(
    previous: str, summary: str, by_hand: Sequence[ByHand], messages: Sequence[Message], *, limit: int = CONTENT_MAX
) -> Carried:
    """``summary`` (a pass's, made from ``previous`` and ``messages``) with every line of ``by_hand`` (the
    person's lines of ``previous``) that ``messages`` do not contradict, each where it was."""
    headings = dict(zip(previous.splitlines(), _section_of(previous.splitlines()), strict=True))
    kept: list[tuple[str | None, ByHand]] = []
    gone: set[str] = set()
    for item in by_hand:
        heading = headings.get(item.line)
        if contradicted(item.line, messages, after=item.at):
            gone.add(_norm(item.line))
            continue
        if heading is None or not _same_heading(heading, "## Remembered"):
            safe = leave_out_secrets(item.line)
            if not _norm(safe):
                continue
            item = ByHand(safe, item.at)
        kept.append((heading, item))
    theirs = {_norm(item.line): item.line for _, item in kept}
    out = [ln for ln in summary.splitlines() if _norm(ln) not in gone or _norm(ln) in theirs]
    out = [theirs.get(_norm(ln), ln) if not HEADING.match(ln) else ln for ln in out]  # their own form
    present = {_norm(ln) for ln in out}
    for heading, item in kept:
        line = item.line
        if _norm(line) in present:
            continue
        if heading is not None and HEADING.match(line) and _norm(line) == _norm(heading):
            heading = None  # a heading of theirs goes back on its own, its lines after it
            out += ["", line] if out and out[-1].strip() else [line]
        else:
            _insert(out, heading, line)
        present.add(_norm(line))
    text = "\n".join(_fit(out, set(theirs), limit)).rstrip() + "\n"
    return Carried(text, tuple(dict.fromkeys(item.mark for _, item in kept)))
