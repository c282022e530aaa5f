"""What a JSON request body may hold, read once for every body the API takes (REST, tools, MCP).

Python reads more than JSON and less than JSON: it takes ``NaN`` and ``Infinity`` (no JSON numbers), turns
``1e999`` into infinity, keeps the last of two members of one name, reads ``"\\ud800"`` (half of a surrogate
pair, alone) into a string that is not Unicode text (no store, log line or answer can encode it), and gives up
on an integer of more than 4,300 digits or a body nested a thousand deep with an error no route expects. The
handler reads every JSON body here before routing, so each of these is a 400 naming where it is, whatever the
route (one added tomorrow included, MCP's too); the resolver's body parser then takes the value read here, and
MCP's protocol reads its message with ``read_json``, the same reading.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from contextvars import ContextVar
from itertools import accumulate
from typing import Any

from ..domain.errors import InvalidError

MAX_DEPTH = 64  # arrays and objects inside one another, the body's own object counting one
MAX_INTEGER_DIGITS = 4_300  # Python's own limit on reading an integer (sys.get_int_max_str_digits)

# a JSON string, escapes and all (unrolled, so a long string is one pass); what is left holds the brackets
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# where a string that is not Unicode text can come from in text decoded from UTF-8: an escape of half a surrogate
# pair (alone, or one of a pair: only reading tells). A scan for it costs about half of json.loads.
_MAYBE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")

# the body read by the handler before routing, so that the resolver does not read it again
_read: ContextVar[tuple[str, Any] | None] = ContextVar("json_body_read", default=None)


class _Unfit:
    """Stands, in a body being read, where a value was that the body may not hold (``member``: the name
    of an object's member that is at fault, when it is a name and not the object)."""

    __slots__ = ("member", "reason")

    def __init__(self, reason: str, member: str | None = None) -> None:
        self.reason = reason
        self.member = member


def read_json_body(text: str) -> dict[str, Any] | None:
    """The body's JSON object (or null). A body that is not JSON raises ``json.JSONDecodeError`` (each protocol answers
    that its own way); JSON the service cannot hold raises ``InvalidError`` naming the field."""
    value = read_json(text)
    if value is not None and not isinstance(value, dict):  # null: as no body, which a route may take
        kind = "an array" if isinstance(value, list) else "a single value"
        raise InvalidError(f"the body must be a JSON object, not {kind}", field="body")
    return value


def read_json(text: str) -> Any:
    """A JSON value the service can hold, whatever its type (``read_json_body``'s reading): text that is not JSON
    raises ``json.JSONDecodeError``, JSON the service cannot hold ``InvalidError`` naming where it is. ``text`` is
    as decoded from UTF-8 (strictly: it holds no lone surrogate of its own; only its escapes can make one)."""
    _check_depth(text)
    unfit: list[_Unfit] = []

    def refuse(reason: str, member: str | None = None) -> _Unfit:
        unfit.append(_Unfit(reason, member))
        return unfit[-1]

    def integer(literal: str) -> int | _Unfit:
        digits = len(literal) - literal.startswith("-")
        if digits > MAX_INTEGER_DIGITS:
            return refuse(f"holds an integer of {digits:,} digits; at most {MAX_INTEGER_DIGITS:,} are accepted")
        return int(literal)

    def number(literal: str) -> float | _Unfit:
        value = float(literal)
        if math.isfinite(value):
            return value
        shown = literal if len(literal) <= 24 else f"{literal[:12]}…{literal[-6:]}"
        return refuse(f"holds {shown}, a number too large to hold")

    def constant(literal: str) -> _Unfit:
        return refuse(f"holds {literal}, which is not a JSON number")

    def members(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Unfit:
        value = dict(pairs)
        if len(value) == len(pairs):
            return value
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                break
            seen.add(name)
        return refuse("appears twice in one object; a name may appear once", member=name)

    try:
        value = json.loads(text, parse_int=integer, parse_float=number, parse_constant=constant,
                           object_pairs_hook=members)
    except RecursionError:  # the depth is checked first; this is the parser's own guard
        raise _too_deep() from None
    if unfit:
        location, reason = _first_unfit(value, []) or ([], unfit[0].reason)
        field = field_name(location)
        raise InvalidError(f"{field} {reason}", field=field)
    if _MAYBE_SURROGATE.search(text) is not None:
        _check_text(value)
    return value


def _check_text(value: Any) -> None:
    """Refuses a value holding a string (or a member's name) that is not Unicode text: one with a lone surrogate,
    which UTF-8 cannot encode. (Found by encoding it all at once; where it is, by looking only then.)"""
    try:
        json.dumps(value, ensure_ascii=False, check_circular=False).encode("utf-8")
    except UnicodeEncodeError:
        location, escape, in_name = _first_surrogate(value, []) or ([], "", False)
        field = field_name(location)
        what = "a member name" if in_name else "text"
        raise InvalidError(f"{field} holds {what} that is not valid Unicode: {escape} is half of a UTF-16 surrogate "
                           "pair, alone (send UTF-8 text, or the escapes of a whole pair)", field=field) from None


def _first_surrogate(value: Any, location: list[Any]) -> tuple[list[Any], str, bool] | None:
    """Where the first string that UTF-8 cannot encode is, its first lone surrogate as an escape (``\\ud800``),
    and whether it is in a member's name (the location is then the object's: the name cannot be shown)."""
    if isinstance(value, str):
        escape = lone_surrogate(value)
        return None if escape is None else (location, escape, False)
    if isinstance(value, dict):
        for key, child in value.items():
            escape = lone_surrogate(key)
            if escape is not None:
                return location, escape, True
            found = _first_surrogate(child, [*location, key])
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found = _first_surrogate(child, [*location, index])
            if found is not None:
                return found
    return None


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate of ``text`` as an escape (``\\udced``), or None when it is Unicode text. (A query
    value read with ``surrogateescape`` holds one for each byte that was not UTF-8.)"""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"\\u{ord(text[error.start]):04x}"
    return None


def screen_json_body(event: dict[str, Any]) -> None:
    """Read the JSON body of an API Gateway event (refusing what it may not hold) before any route sees it.
    An event without a body, or whose ``Content-Type`` is not JSON, is left to its route."""
    _read.set(None)
    body = event.get("body")
    if not body or not declared_content_type(event).startswith("application/json"):
        return
    if event.get("isBase64Encoded"):  # API Gateway sends every body base64-encoded (binary media type */*)
        try:
            raw = base64.b64decode(body)
        except (binascii.Error, ValueError):
            return  # the route reads it and refuses it as it would
    else:
        raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidError(f"the body is not UTF-8 text (byte {error.start} cannot be read); send JSON encoded "
                           "as UTF-8", field="body") from None
    try:
        value = read_json_body(text)
    except json.JSONDecodeError:
        return  # not JSON at all: the route answers as its protocol does (a 400, or JSON-RPC's parse error)
    _read.set((text, value))


def resolver_json_body(text: str) -> Any:
    """The resolver's body parser: the value the handler read, or (outside the handler) a reading here."""
    read = _read.get()
    if read is not None and read[0] == text:
        return read[1]
    return read_json_body(text)


def forget_json_body() -> None:
    _read.set(None)


def field_name(location: list[Any]) -> str:
    """``["messages", 0, "role"]`` → ``messages[0].role``, as the services name the fields they check."""
    name = ""
    for part in location:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "body"


def _check_depth(text: str) -> None:
    if text.count("[") + text.count("{") <= MAX_DEPTH:  # most bodies: too few to nest too deep
        return
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if brackets and max(accumulate(map(_STEP.__getitem__, brackets))) > MAX_DEPTH:
        raise _too_deep()


def _too_deep() -> InvalidError:
    return InvalidError(f"the body is nested too deeply: at most {MAX_DEPTH} arrays and objects inside one "
                        "another", field="body")


def _first_unfit(value: Any, location: list[Any]) -> tuple[list[Any], str] | None:
    """Where the first value the body may not hold is, and why (the depth is at most MAX_DEPTH)."""
    if isinstance(value, _Unfit):
        return ([*location, value.member] if value.member is not None else location), value.reason
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        found = _first_unfit(child, [*location, key])
        if found is not None:
            return found
    return None


def declared_content_type(event: dict[str, Any]) -> str:
    """The request's Content-Type, lower-cased ("" when none was sent)."""
    headers = event.get("headers") or {}
    return next((str(v) for k, v in headers.items() if k.lower() == "content-type"), "").lower()
