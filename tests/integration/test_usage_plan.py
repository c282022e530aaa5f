"""Per-account keys in the stack's usage plan (adapters/aws/usage_plan.py), against moto's API Gateway, and the
authorizer naming them (``usageIdentifierKey``) so API Gateway throttles each account on its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from agentmem.adapters.aws.usage_plan import UsagePlanKeys, usage_key_value
from agentmem.bootstrap import Container, build_container, set_container
from agentmem.local.server import LocalContext
from agentmem.settings import Settings
from moto import mock_aws

from functions.authorizer.handler import lambda_handler

PLAN = "agentmem-per-account"
METHOD_ARN = "arn:aws:execute-api:us-east-1:123456789012:abc123defg/prod/GET/v1/memories"


@pytest.fixture
def apigateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in (("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("apigateway", region_name="us-east-1")
        client.create_usage_plan(name="another-stack-per-account")
        client.create_usage_plan(name=PLAN)
        yield client


def _plan_id(client: Any, name: str = PLAN) -> str:
    return next(p["id"] for p in client.get_usage_plans()["items"] if p["name"] == name)


def _keys_in_plan(client: Any, name: str = PLAN) -> list[str]:
    return sorted(k["value"] for k in client.get_usage_plan_keys(usagePlanId=_plan_id(client, name))["items"])


def test_an_account_gets_one_key_in_the_plan_on_first_sight(apigateway: Any) -> None:
    keys = UsagePlanKeys(PLAN, boto3_client=apigateway)
    # When the authorizer asks for an account's key twice
    first = keys.key_for("acct_1")
    again = keys.key_for("acct_1")
    # Then it is the same value, made once, in this stack's plan only
    assert first == again == usage_key_value(PLAN, "acct_1")
    assert _keys_in_plan(apigateway) == [first]
    assert _keys_in_plan(apigateway, "another-stack-per-account") == []
    assert [k["name"] for k in apigateway.get_api_keys()["items"]] == [first]
    # And another account gets a key of its own
    assert keys.key_for("acct_2") != first
    assert len(_keys_in_plan(apigateway)) == 2


def test_a_key_another_process_made_is_found_and_used(apigateway: Any) -> None:
    # Given a key made by another authorizer process (a cold start of its own)
    UsagePlanKeys(PLAN, boto3_client=apigateway).key_for("acct_1")
    # When this process meets the account
    value = UsagePlanKeys(PLAN, boto3_client=apigateway).key_for("acct_1")
    # Then the existing key is used (its creation is refused as a conflict), and nothing is duplicated
    assert _keys_in_plan(apigateway) == [value]
    assert len(apigateway.get_api_keys()["items"]) == 1


def test_a_plan_that_does_not_exist_is_an_error_naming_it(apigateway: Any) -> None:
    with pytest.raises(RuntimeError, match="no usage plan named 'nope'"):
        UsagePlanKeys("nope", boto3_client=apigateway).key_for("acct_1")


def test_key_values_are_long_enough_for_api_gateway() -> None:
    assert len(usage_key_value("abc-per-account", "a")) >= 20


@pytest.fixture
def container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Container]:
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    built = build_container(Settings(data_dir=tmp_path))
    set_container(built)
    yield built
    set_container(None)


def test_the_authorizer_names_the_accounts_key_as_the_usage_identifier(container: Container, apigateway: Any) -> None:
    # Given the stack's usage plan, and two keys of one account and a key of another
    container.usage_plan_keys = UsagePlanKeys(PLAN, boto3_client=apigateway)
    account, first = container.keys.create_account("acme")
    _, second = container.keys.create_key(container.keys.authenticate(f"Bearer {first}"))
    _, other = container.keys.create_account("globex")
    # When API Gateway asks about each
    answers = [lambda_handler({"type": "TOKEN", "methodArn": METHOD_ARN, "authorizationToken": f"Bearer {secret}"},
                              LocalContext()) for secret in (first, second, other)]
    # Then both keys of the account name its one usage key, and the other account its own: each account is
    # throttled by the plan on its own
    identifiers = [answer["usageIdentifierKey"] for answer in answers]
    assert identifiers[0] == identifiers[1] == usage_key_value(PLAN, account.account_id)
    assert identifiers[2] != identifiers[0]
    assert _keys_in_plan(apigateway) == sorted(set(identifiers))


def test_without_a_usage_plan_the_authorizer_names_none(container: Container) -> None:
    # Given no AGENTMEM_USAGE_PLAN (or the embedded backend)
    _, secret = container.keys.create_account("acme")
    token = {"type": "TOKEN", "methodArn": METHOD_ARN, "authorizationToken": f"Bearer {secret}"}
    answer = lambda_handler(token, LocalContext())
    assert "usageIdentifierKey" not in answer
    assert container.usage_plan_keys is None
