"""Workspace download links as CloudFront signed URLs, which work for as long as they say.

An S3 presigned URL is only as good as the credentials that signed it: the API function signs with its role's
session, and that session can end before a one-day link does. A CloudFront signed URL is signed with the
deployment's own RSA key (the private half of the distribution's key group, kept in Secrets Manager), so it
works until its ``Expires`` whatever happens to the function's credentials. CloudFront checks the signature at
the edge and reaches the workspace bucket through its origin access control; S3 answers with the file name and
type the link carries (``response-content-disposition``, ``response-content-type``), which the distribution
forwards. The signature covers the whole link (path and query), so none of it can be changed.

A canned policy: the link is ``https://{domain}/{key}?response-...&Expires=&Signature=&Key-Pair-Id=``.
The private key is read once per process, on the first link made (a cold start that makes no link never reads
it), then kept. Upload links stay S3 presigned (``S3BlobStore``): S3 signs their ``Content-Length``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from ...domain.workspaces import content_disposition
from .config import client_config

if TYPE_CHECKING:
    import boto3
    from botocore.signers import CloudFrontSigner


def rsa_sha1_signer(private_key_pem: str) -> Callable[[bytes], bytes]:
    """What CloudFront's canned policy is signed with: RSASSA-PKCS1-v1_5 over SHA-1, with the PEM's RSA key."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = serialization.load_pem_private_key(private_key_pem.encode("ascii"), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("the download link key is not an RSA private key")

    def sign(message: bytes) -> bytes:
        # SHA-1 is what CloudFront's signed URLs specify (its key groups take RSA-SHA1 signatures)
        return key.sign(message, padding.PKCS1v15(), hashes.SHA1())

    return sign


def secret_reader(secret_arn: str, session: boto3.Session) -> Callable[[], str]:
    """Reads the private key's PEM from Secrets Manager (one GetSecretValue each call)."""

    def read() -> str:
        client: Any = session.client("secretsmanager", config=client_config())
        return str(client.get_secret_value(SecretId=secret_arn)["SecretString"])

    return read


class CloudFrontLinkSigner:
    """Signs download links to ``domain`` (the distribution) with the key group's key ``key_pair_id``.

    ``private_key`` gives the key's PEM; it is called once, on the first link, and the signer kept."""

    def __init__(
        self, domain: str, key_pair_id: str, private_key: Callable[[], str], *, clock: Callable[[], float] = time.time
    ) -> None:
        self.domain = domain
        self.key_pair_id = key_pair_id
        self._private_key = private_key
        self.clock = clock
        self._signer: CloudFrontSigner | None = None
        self._lock = threading.Lock()

    @property
    def key_loaded(self) -> bool:
        """Whether the private key has been read (on the first link; never at start)."""
        return self._signer is not None

    def _cloudfront_signer(self) -> CloudFrontSigner:
        if self._signer is None:
            with self._lock:  # the local server signs from several threads: the secret is still read once
                if self._signer is None:
                    from botocore.signers import CloudFrontSigner

                    self._signer = CloudFrontSigner(self.key_pair_id, rsa_sha1_signer(self._private_key()))
        return self._signer

    def url(
        self, key: str, *, expires_in_s: int, filename: str | None = None, content_type: str | None = None
    ) -> str:
        """A link that downloads the object at ``key`` until ``expires_in_s`` from now, to the second after."""
        query: dict[str, str] = {}
        if filename:
            query["response-content-disposition"] = content_disposition(filename)
        if content_type:
            query["response-content-type"] = content_type
        resource = f"https://{self.domain}/{quote(key, safe='/')}"
        if query:
            resource += "?" + urlencode(query, quote_via=quote)
        # Expires is whole seconds: rounded up, so the link lives at least until the expiry the API states
        expires = datetime.fromtimestamp(math.ceil(self.clock()) + expires_in_s, UTC)
        return self._cloudfront_signer().generate_presigned_url(resource, date_less_than=expires)
