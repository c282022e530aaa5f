"""The API-key authorizer: a valid key gets an Allow policy with the caller; anything else a 401."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentmem.bootstrap import Container, build_container, set_container
from agentmem.domain.models import Principal
from agentmem.observability import logger
from agentmem.settings import Settings
from moto_server import FakeLambdaContext

from functions.authorizer.handler import lambda_handler

CONTEXT = FakeLambdaContext("agentmem-authorizer", aws_request_id="req-authorizer-1")

METHOD_ARN = "arn:aws:execute-api:eu-west-1:123456789012:abc123defg/prod/GET/v1/memories/company"
STAGE_ARN = "arn:aws:execute-api:eu-west-1:123456789012:abc123defg/prod/*"


@pytest.fixture
def container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Container]:
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    built = build_container(Settings(data_dir=tmp_path))
    set_container(built)
    yield built
    set_container(None)


def _event(authorization: str | None) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "TOKEN", "methodArn": METHOD_ARN}
    if authorization is not None:
        event["authorizationToken"] = authorization
    return event


def test_an_account_key_is_allowed_on_the_whole_stage_with_its_account(container: Container) -> None:
    # Given an account and its first key
    account, secret = container.keys.create_account("acme")
    # When API Gateway asks about that key
    answer = lambda_handler(_event(f"Bearer {secret}"), CONTEXT)
    # Then every method of the stage is allowed (the answer is cached per key) and the caller travels along
    assert answer["policyDocument"]["Statement"] == [
        {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": STAGE_ARN}
    ]
    assert answer["context"]["account_id"] == account.account_id
    assert answer["context"]["kind"] == "account"
    assert answer["context"]["user_id"] == ""
    assert answer["principalId"] == answer["context"]["key_id"]
    assert all(isinstance(value, str) for value in answer["context"].values())


def test_a_user_key_carries_its_user(container: Container) -> None:
    account, secret = container.keys.create_account("acme")
    key = container.keys.authenticate(f"Bearer {secret}")
    _, user_secret = container.keys.create_key(
        Principal(account_id=account.account_id, key_id=key.key_id, kind="account"), user="user_42"
    )
    answer = lambda_handler(_event(f"bearer {user_secret}"), CONTEXT)
    assert answer["context"] == {
        "account_id": account.account_id, "key_id": answer["principalId"], "kind": "user", "user_id": "user_42",
    }


def test_a_request_authorizer_event_reads_the_header(container: Container) -> None:
    _, secret = container.keys.create_account("acme")
    event = {"type": "REQUEST", "methodArn": METHOD_ARN, "headers": {"authorization": f"Bearer {secret}"}}
    assert lambda_handler(event, CONTEXT)["policyDocument"]["Statement"][0]["Effect"] == "Allow"


@pytest.mark.parametrize("authorization", [None, "", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer am_not-a-real-key"])
def test_a_missing_or_wrong_key_is_unauthorized(container: Container, authorization: str | None) -> None:
    container.keys.create_account("acme")
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        lambda_handler(_event(authorization), CONTEXT)


def test_a_deleted_key_is_unauthorized(container: Container) -> None:
    _, secret = container.keys.create_account("acme")
    owner = container.keys.authenticate(f"Bearer {secret}")
    _, other = container.keys.create_key(owner)
    container.keys.delete_key(owner, container.keys.authenticate(f"Bearer {other}").key_id)
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        lambda_handler(_event(f"Bearer {other}"), CONTEXT)


def _log_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_it_logs_with_the_lambda_context_and_never_the_key(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = io.StringIO()
    monkeypatch.setattr(logger.registered_handler, "stream", logs)  # the process's Powertools logger
    # Given an account's key, and a key that is not valid
    account, secret = container.keys.create_account("acme")
    # When API Gateway asks about each
    lambda_handler(_event(f"Bearer {secret}"), CONTEXT)
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        lambda_handler(_event("Bearer am_not-a-real-key"), CONTEXT)
    output = logs.getvalue()
    # Then each answer is one Powertools line carrying the invocation (the other functions' shape)
    lines = _log_lines(output)
    assert [line["message"] for line in lines] == ["key allowed", "key refused"]
    for line in lines:
        assert line["service"] == "agentmem"
        assert line["function_request_id"] == "req-authorizer-1"
        assert line["function_name"] == "agentmem-authorizer"
        assert "cold_start" in line
    assert lines[0]["account_id"] == account.account_id and lines[0]["kind"] == "account"
    assert "account_id" not in lines[1]  # clear_state: the last caller does not carry over
    assert "not valid" in lines[1]["reason"]
    # and neither key appears anywhere in the logs
    assert secret not in output and "am_not-a-real-key" not in output
