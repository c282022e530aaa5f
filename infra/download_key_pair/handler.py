"""The custom resource that gives the download links' CloudFront key group its key pair, at deploy time.

CloudFormation has no resource that makes an RSA key pair, and CloudFront needs the public key's PEM in the
template (``AWS::CloudFront::PublicKey``). This function, called by CloudFormation with the stack's secret:

- **Create**: makes a 2,048-bit RSA key pair (what CloudFront's signed URLs take), puts the private key (PKCS #8
  PEM) in the secret and answers the public key's PEM (``PublicKeyPem``), which becomes the key group's key.
- **Update** (the function's code or the secret's ARN changed): the key the secret already holds is kept and its
  public key answered again, so the key group, the key pair id and every link already given stay as they are;
  only a secret that holds no RSA key (a new secret) gets a new pair.
- **Delete**: nothing. The secret is the stack's own resource (CloudFormation deletes it), so is the public key.

The private key is never in the answer, the logs or the template. The answer goes to CloudFormation's
pre-signed ``ResponseURL``, also on failure, so a deploy never waits on a function that raised.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any, Protocol, cast

import boto3
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

KEY_BITS = 2048  # CloudFront's key groups take RSA 2048 for signed URLs
PUBLIC_KEY_ATTRIBUTE = "PublicKeyPem"


class Secrets(Protocol):
    def get_secret_value(self, *, SecretId: str) -> dict[str, Any]: ...

    def put_secret_value(self, *, SecretId: str, SecretString: str) -> dict[str, Any]: ...


def new_private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


def public_key_pem(private_key_pem: str) -> str:
    key = serialization.load_pem_private_key(private_key_pem.encode("ascii"), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("not an RSA private key")
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def held_key(secrets: Secrets, secret_arn: str) -> str | None:
    """The RSA private key the secret holds, or None (a secret just made holds CloudFormation's random text)."""
    value = str(secrets.get_secret_value(SecretId=secret_arn).get("SecretString", ""))
    try:
        public_key_pem(value)
    except (ValueError, TypeError):  # not a PEM, not RSA, or a key that wants a password
        return None
    return value


def on_event(event: dict[str, Any], secrets: Secrets) -> tuple[str, dict[str, str]]:
    """The physical id and the answer's data for one CloudFormation request."""
    secret_arn = str(event["ResourceProperties"]["SecretArn"])
    physical_id = str(event.get("PhysicalResourceId") or f"download-key-pair:{secret_arn}")
    if event["RequestType"] == "Delete":
        return physical_id, {}
    private_key = held_key(secrets, secret_arn)
    if private_key is None:
        private_key = new_private_key_pem()
        secrets.put_secret_value(SecretId=secret_arn, SecretString=private_key)
    return physical_id, {PUBLIC_KEY_ATTRIBUTE: public_key_pem(private_key)}


def respond(event: dict[str, Any], status: str, physical_id: str, data: dict[str, str], reason: str = "") -> None:
    body = json.dumps({
        "Status": status, "Reason": reason or status, "PhysicalResourceId": physical_id,
        "StackId": event["StackId"], "RequestId": event["RequestId"], "LogicalResourceId": event["LogicalResourceId"],
        "Data": data,
    }).encode()
    request = urllib.request.Request(
        event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": "", "Content-Length": str(len(body))}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # CloudFormation's own pre-signed S3 URL
        answer.read()


def lambda_handler(event: dict[str, Any], _context: object) -> None:
    fallback_id = str(event.get("PhysicalResourceId") or "download-key-pair-not-made")
    try:
        physical_id, data = on_event(event, cast(Secrets, boto3.client("secretsmanager")))
    except Exception as error:  # every failure is answered: CloudFormation rolls back instead of waiting
        print(f"download key pair: {event.get('RequestType')} failed: {type(error).__name__}: {error}")
        respond(event, "FAILED", fallback_id, {}, f"{type(error).__name__}: {error}"[:500])
        return
    print(f"download key pair: {event['RequestType']} done ({physical_id})")
    respond(event, "SUCCESS", physical_id, data)
