"""The deploy-time custom resource that makes the download links' key pair (infra/download_key_pair/handler.py),
against moto's Secrets Manager: a new key on create, the same key on every update (links already given keep
working), nothing on delete, and an answer to CloudFormation whatever happens."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from infra.download_key_pair import handler


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from moto import mock_aws

    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "eu-west-1"}.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="eu-west-1")


def _event(kind: str, secret_arn: str, physical_id: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "RequestType": kind, "ResourceProperties": {"SecretArn": secret_arn, "ServiceToken": "arn:fn"},
        "StackId": "arn:aws:cloudformation:eu-west-1:123456789012:stack/agentmem-stateful/1",
        "RequestId": "r-1", "LogicalResourceId": "DownloadLinksKeyPair", "ResponseURL": "https://cfn.example/answer",
    }
    if physical_id:
        event["PhysicalResourceId"] = physical_id
    return event


def _new_secret(secrets: Any) -> str:
    # what CloudFormation's AWS::SecretsManager::Secret holds before the custom resource runs: random text
    return str(secrets.create_secret(Name="agentmem-download-key", SecretString="r4nd0m-Placeholder")["ARN"])


def test_create_makes_an_rsa_2048_key_keeps_its_private_half_and_answers_only_the_public_one(secrets: Any) -> None:
    # Given the stack's new secret, When CloudFormation creates the resource
    arn = _new_secret(secrets)
    physical_id, data = handler.on_event(_event("Create", arn), secrets)
    # Then the secret holds an RSA 2048 private key, and the answer is that key's public half, nothing private
    stored = secrets.get_secret_value(SecretId=arn)["SecretString"]
    private_key = serialization.load_pem_private_key(stored.encode(), password=None)
    assert isinstance(private_key, rsa.RSAPrivateKey) and private_key.key_size == 2048
    assert set(data) == {"PublicKeyPem"}
    public_key = serialization.load_pem_public_key(data["PublicKeyPem"].encode())
    assert isinstance(public_key, rsa.RSAPublicKey)
    assert public_key.public_numbers() == private_key.public_key().public_numbers()
    assert "PRIVATE" not in data["PublicKeyPem"] and stored not in str(data)
    assert physical_id


def test_update_keeps_the_key_and_delete_leaves_it(secrets: Any) -> None:
    # Given a key made on create
    arn = _new_secret(secrets)
    physical_id, created = handler.on_event(_event("Create", arn), secrets)
    stored = secrets.get_secret_value(SecretId=arn)["SecretString"]
    # When the stack is updated (the function's code changed, say), Then the same key and id are answered: the key
    # group, the key pair id and the links already given all stay
    again_id, updated = handler.on_event(_event("Update", arn, physical_id), secrets)
    assert (again_id, updated) == (physical_id, created)
    assert secrets.get_secret_value(SecretId=arn)["SecretString"] == stored
    # When it is deleted, Then nothing is touched (CloudFormation deletes the secret, its own resource)
    assert handler.on_event(_event("Delete", arn, physical_id), secrets) == (physical_id, {})
    assert secrets.get_secret_value(SecretId=arn)["SecretString"] == stored


def test_every_request_is_answered_also_when_it_fails(secrets: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    answers: list[tuple[str, str, dict[str, str], str]] = []
    monkeypatch.setattr(handler, "respond", lambda event, status, pid, data, reason="": answers.append(
        (status, pid, data, reason)))
    # Given a secret that is not there (its ARN wrong), When CloudFormation creates the resource
    missing = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:gone-AbCdEf"
    handler.lambda_handler(_event("Create", missing), None)
    # Then it is told the creation failed, and why, rather than left waiting
    (status, pid, data, reason), = answers
    assert (status, data) == ("FAILED", {}) and "ResourceNotFoundException" in reason and pid
    # Given the stack's secret, Then a create is answered with the public key
    answers.clear()
    handler.lambda_handler(_event("Create", _new_secret(secrets)), None)
    (status, _, data, _), = answers
    assert status == "SUCCESS" and data["PublicKeyPem"].startswith("-----BEGIN PUBLIC KEY-----")
