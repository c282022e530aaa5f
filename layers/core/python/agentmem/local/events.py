"""Translate between plain HTTP requests and API Gateway REST (v1) proxy events.

The local server and the SDK's in-process transport both use this, so what runs
on a laptop goes through exactly the handler that runs on Lambda.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote

_TEXT_TYPES = ("application/json", "text/", "application/xml", "application/javascript")


def build_rest_event(
    method: str,
    raw_path: str,
    query: str = "",
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    source_ip: str = "127.0.0.1",
    *,
    copy_headers: bool = True,
) -> dict[str, Any]:
    """An API Gateway REST proxy event for one request.

    ``raw_path`` is the URL path as sent (percent-encoded); API Gateway hands the
    handler the decoded path, so we do the same. ``copy_headers=False``: the event
    takes ``headers`` itself (a dict made for it), not a copy.
    """
    headers = dict(headers or {}) if copy_headers or not isinstance(headers, dict) else headers
    if query:
        single: dict[str, str] = {}
        multi: dict[str, list[str]] = {}
        # bytes that are not UTF-8 are kept (as lone surrogates), for the API to refuse naming the parameter
        for key, value in parse_qsl(query, keep_blank_values=True, errors="surrogateescape"):
            single[key] = value
            multi.setdefault(key, []).append(value)
    else:
        single, multi = {}, {}
    if body is None:
        encoded_body: str | None = None
        is_base64 = False
    else:
        content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
        encoded_body, is_base64 = None, True
        if not body or content_type == "" or content_type.startswith(_TEXT_TYPES):
            with contextlib.suppress(UnicodeDecodeError):  # not UTF-8: sent base64-encoded, as a binary body
                encoded_body, is_base64 = body.decode("utf-8"), False
        if encoded_body is None:
            encoded_body = base64.b64encode(body).decode("ascii")
    # (percent-escapes of bytes that are not UTF-8 kept as lone surrogates, as in the query: refused by the API)
    path = unquote(raw_path, errors="surrogateescape") if "%" in raw_path else raw_path
    method = method.upper()
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": single or None,
        "multiValueQueryStringParameters": multi or None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "path": path,
            "stage": "local",
            "requestId": request_id(),
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": source_ip, "userAgent": headers.get("User-Agent", "")},
            "protocol": "HTTP/1.1",
        },
        "body": encoded_body,
        "isBase64Encoded": is_base64,
    }


def _new_request_ids() -> None:
    global _request_ids, _request_id_prefix
    _request_id_prefix = str(uuid.uuid4())[:24]
    _request_ids = itertools.count(1)


_request_ids: Iterator[int]
_request_id_prefix: str
_new_request_ids()
os.register_at_fork(after_in_child=_new_request_ids)  # each worker of a server counts from its own prefix


def request_id() -> str:
    """A request id in a UUID's shape, unique in this process and across processes: a random prefix per
    process and a count (a random UUID each time reads the system's entropy on every request)."""
    return f"{_request_id_prefix}{next(_request_ids):012x}"


def decode_lambda_response(result: Mapping[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, header pairs and raw body of a Lambda proxy response."""
    status = int(result.get("statusCode", 200))
    pairs: list[tuple[str, str]] = []
    multi = result.get("multiValueHeaders") or {}
    for key, values in multi.items():
        for value in values:
            pairs.append((key, str(value)))
    seen = {k.lower() for k, _ in pairs}
    for key, value in (result.get("headers") or {}).items():
        if key.lower() not in seen:
            pairs.append((key, str(value)))
    raw = result.get("body") or ""
    body = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode("utf-8")
    return status, pairs, body
