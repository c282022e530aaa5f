"""What a summary never keeps: credentials, and lines that try to steer the model (SPEC §2.5, last point). Pure.

The rules are ``screening.screen``'s: a credential is what it calls ``aws_access_key``, ``private_key``,
``api_token``, ``password`` or ``jwt`` (personal data — emails, phones … — is a fact about the user, kept in
the user's layer), and a line it finds an injection in is dropped. ``leave_out_secrets`` is the filter for
any text (the extractive summary's sections, a model's answer, a line a person wrote into a checkpoint);
what the user asked to remember is kept word for word (``keep``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .screening import screen

__all__ = ["REDACTED", "SECRET_KINDS", "has_secret", "leave_out_secrets", "stated_secret", "steers", "withheld"]

REDACTED = "{secret left out}"  # "{" so screening does not take it for the value of a "password: …" pair

# The credential kinds of screening.screen: what a summary leaves out. Personal data (emails, phones …) is a
# fact about the user, kept in the user's layer; a conversation with the account itself drops it when the
# checkpoint is written (services.summary_pass.safe_summary).
SECRET_KINDS = frozenset({"aws_access_key", "private_key", "api_token", "password", "jwt"})


_KEY_BLOCK_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_SPACES = re.compile(r"(\s+)")
_KEY_VALUE_TOKEN = re.compile(r"^([^:=\s]+[:=]+[\"']?)(.+)$")


def _secret_kinds(text: str) -> set[str]:
    return set(screen(text).sensitive) & SECRET_KINDS


def has_secret(text: str) -> bool:
    """Whether ``text`` holds a credential (``SECRET_KINDS`` of ``screening.screen``)."""
    return bool(_secret_kinds(text))


def _mask(line: str, kept: Sequence[str]) -> str:
    for item in kept:
        line = line.replace(item, " ")
    return line


def _redact_token(token: str) -> str:
    m = _KEY_VALUE_TOKEN.match(token)
    if m is not None and not has_secret(m.group(1)):
        return m.group(1) + REDACTED
    return REDACTED


def _redact_line(line: str, kept: Sequence[str]) -> str | None:
    """The line with each credential replaced by ``REDACTED``, or None when one can't be isolated."""
    protected: list[tuple[int, int]] = []
    for item in kept:
        start = line.find(item)
        while start != -1:
            protected.append((start, start + len(item)))
            start = line.find(item, start + 1)
    parts = _SPACES.split(line)
    words: list[int] = []
    spans: list[tuple[int, int]] = []
    offset = 0
    for part in parts:
        spans.append((offset, offset + len(part)))
        offset += len(part)
    words = [i for i, part in enumerate(parts) if part and not part.isspace()]

    def free(i: int) -> bool:
        a, b = spans[i]
        return not any(a < pb and pa < b for pa, pb in protected)

    for i in words:
        if free(i) and has_secret(parts[i]):
            parts[i] = _redact_token(parts[i])
    previous: int | None = None
    for i in words:  # a credential made of two words: "Bearer <token>", "password: <value>"
        if previous is not None and free(i) and REDACTED not in parts[i] \
                and has_secret(parts[previous] + " " + parts[i]):
            parts[i] = REDACTED
        previous = i
    candidate = "".join(parts)
    return None if has_secret(_mask(candidate, kept)) else candidate


def leave_out_secrets(text: str, *, keep: Iterable[str] = ()) -> str:
    """``text`` without its credentials and without any line that tries to steer the model.

    Line by line: a line ``screen`` finds an injection in is dropped; a credential is replaced by
    ``{secret left out}`` where it can be told apart (a token, ``key=value``, ``Bearer <token>``,
    ``password: <value>``, "the admin password is <value>"), else its whole line is dropped; a private key
    block goes whole. Text that is part of a ``keep`` item (a remembered item: the user asked for it word
    for word) is left as it is.
    """
    kept = sorted({ln.strip() for item in keep for ln in item.splitlines() if ln.strip()}, key=len, reverse=True)
    out: list[str] = []
    in_key_block = False
    for line in text.split("\n"):
        if in_key_block:
            if _KEY_BLOCK_END.search(line) is not None:
                in_key_block = False
            continue
        found = screen(line)
        if found.injection is not None:
            continue
        if stated_secret(line):
            line = _redact_stated(line, kept)
        if not SECRET_KINDS.intersection(found.sensitive):
            out.append(line)
            continue
        masked = _mask(line, kept)
        if not has_secret(masked):
            out.append(line)
            continue
        if "private_key" in _secret_kinds(masked):
            in_key_block = _KEY_BLOCK_END.search(line) is None
            continue
        redacted = _redact_line(line, kept)
        if redacted is not None:
            out.append(redacted)
    return "\n".join(out)


# A secret said in words, which screening's key=value shapes do not see: "the admin password is Xyz!234q",
# "the API key for staging is sk9-…". The value must look like one (a digit, a symbol or a capital inside it),
# so "the password is stored safely" is no secret, and a placeholder ({…}, <…>, ***) is none either.
_STATED_SECRET = re.compile(
    r"\b(?:pass(?:word|phrase|code|wd)s?|pwd|pin|secret(?:\s+key)?|api[\s_-]?key|access[\s_-]?key|"
    r"private[\s_-]?key|(?:auth|access|api|bearer|session)[\s_-]?token|token|credentials?)"
    r"(?:\s+(?:for|of|to|on)\s+(?:[\w.@/-]+\s+){0,3}?[\w.@/-]+)?"
    r"\s*(?:\bis\b|\bwas\b|\bare\b|[:=])\s*(?:now\s+)?[\"'`]?(?![{<*])(?P<v>[^\s\"'`,;]{4,})",
    re.IGNORECASE,
)


def _stated_secrets(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in _STATED_SECRET.finditer(text):
        value = m.group("v").rstrip(".!?)")
        if any(c.isdigit() for c in value) or any(not c.isalnum() for c in value) or \
                any(c.isupper() for c in value[1:]):
            spans.append((m.start("v"), m.start("v") + len(value)))
    return spans


def stated_secret(text: str) -> bool:
    """Whether ``text`` says a secret in words ("the admin password is Xyz!234q")."""
    return bool(_stated_secrets(text))


def _redact_stated(line: str, kept: Sequence[str]) -> str:
    protected = [(i, i + len(item)) for item in kept for i in _find_all(line, item)]
    for a, b in reversed(_stated_secrets(line)):
        if not any(a < pb and pa < b for pa, pb in protected):
            line = line[:a] + REDACTED + line[b:]
    return line


def _find_all(line: str, item: str) -> list[int]:
    found, start = [], line.find(item)
    while start != -1:
        found.append(start)
        start = line.find(item, start + 1)
    return found


def withheld(text: str) -> bool:
    """A credential (a secret said in words too), or text that tries to steer the model: never kept outside
    the remembered items."""
    found = screen(text)
    return found.injection is not None or bool(SECRET_KINDS.intersection(found.sensitive)) or stated_secret(text)


def steers(text: str) -> bool:
    return screen(text).injection is not None
