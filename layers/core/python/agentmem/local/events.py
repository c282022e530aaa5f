"""Translate between plain HTTP requests and API Gateway REST (v1) proxy events.

The local server and the SDK's in-process transport both use this, so what runs
on a laptop goes through exactly the handler that runs on Lambda.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Mapping
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
) -> dict[str, Any]:
    """An API Gateway REST proxy event for one request.

    ``raw_path`` is the URL path as sent (percent-encoded); API Gateway hands the
    handler the decoded path, so we do the same.
    """
    headers = dict(headers or {})
    pairs = parse_qsl(query, keep_blank_values=True)
    single: dict[str, str] = {}
    multi: dict[str, list[str]] = {}
    for key, value in pairs:
        single[key] = value
        multi.setdefault(key, []).append(value)
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    is_text = not body or content_type.startswith(_TEXT_TYPES) or content_type == ""
    if body is None:
        encoded_body: str | None = None
        is_base64 = False
    elif is_text:
        try:
            encoded_body = body.decode("utf-8")
            is_base64 = False
        except UnicodeDecodeError:
            encoded_body = base64.b64encode(body).decode("ascii")
            is_base64 = True
    else:
        encoded_body = base64.b64encode(body).decode("ascii")
        is_base64 = True
    path = unquote(raw_path)
    multi_headers: dict[str, list[str]] = {k: [v] for k, v in headers.items()}
    return {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method.upper(),
        "headers": headers,
        "multiValueHeaders": multi_headers,
        "queryStringParameters": single or None,
        "multiValueQueryStringParameters": multi or None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/{proxy+}",
            "httpMethod": method.upper(),
            "path": path,
            "stage": "local",
            "requestId": str(uuid.uuid4()),
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": source_ip, "userAgent": headers.get("User-Agent", "")},
            "protocol": "HTTP/1.1",
        },
        "body": encoded_body,
        "isBase64Encoded": is_base64,
    }


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
