"""Download links on the deployed stack: CloudFront signed URLs with a canned policy
(agentmem.adapters.aws.cloudfront_links). A link says when it expires and is signed with the deployment's own
key, so it works for its whole stated life, whatever becomes of the credentials of the function that made it;
its path and the file name it carries are under the signature. Upload links stay S3 presigned."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, parse_qsl, unquote, urlsplit

import boto3
import pytest
from agentmem.adapters.aws.cloudfront_links import CloudFrontLinkSigner, secret_reader
from agentmem.adapters.aws.s3 import S3BlobStore
from agentmem.bootstrap import build_download_links
from agentmem.settings import Settings, SettingsError, load_settings
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

DOMAIN = "d1234abcd.cloudfront.net"
KEY_PAIR_ID = "K2JCJMDEHXQW5F"
NOW = 1_780_000_000.0  # a moment in 2026, in epoch seconds
KEY = "w/0123456789abcdef/0123456789abcdef/0123456789abcdef/0123456789abcdef/f/reports/q3 résumé+final.csv"
SIGNED_PARAMS = ("Expires", "Signature", "Key-Pair-Id")


@pytest.fixture(scope="module")
def private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def pem(private_key: rsa.RSAPrivateKey) -> str:
    return private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


class SecretReads:
    """Stands in for Secrets Manager: the PEM, and how many times it was asked for."""

    def __init__(self, pem: str) -> None:
        self.pem = pem
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        return self.pem


def signer_for(pem: str, now: float = NOW) -> tuple[CloudFrontLinkSigner, SecretReads]:
    reads = SecretReads(pem)
    return CloudFrontLinkSigner(DOMAIN, KEY_PAIR_ID, reads, clock=lambda: now), reads


def split_link(url: str) -> tuple[str, dict[str, str]]:
    """The URL CloudFront checks the signature against (the link without its three signing parameters), and
    those parameters."""
    parts = urlsplit(url)
    pairs = parts.query.split("&")
    kept = [p for p in pairs if p.split("=", 1)[0] not in SIGNED_PARAMS]
    signing = dict(parse_qsl("&".join(p for p in pairs if p.split("=", 1)[0] in SIGNED_PARAMS)))
    resource = f"{parts.scheme}://{parts.netloc}{parts.path}" + ("?" + "&".join(kept) if kept else "")
    return resource, signing


def verifies(public_key: rsa.RSAPublicKey, resource: str, expires: int, signature: str) -> bool:
    """Whether ``signature`` (CloudFront's URL-safe base64) is the key's RSA-SHA1 signature of the canned policy
    for ``resource`` until ``expires``: what CloudFront checks at the edge."""
    policy = json.dumps(
        {"Statement": [{"Resource": resource, "Condition": {"DateLessThan": {"AWS:EpochTime": expires}}}]},
        separators=(",", ":"),
    ).encode()
    raw = base64.b64decode(signature.replace("-", "+").replace("_", "=").replace("~", "/"))
    try:
        public_key.verify(raw, policy, padding.PKCS1v15(), hashes.SHA1())
    except InvalidSignature:
        return False
    return True


def test_a_download_link_expires_when_it_says_and_is_signed_by_the_key_group_key(
    pem: str, private_key: rsa.RSAPrivateKey
) -> None:
    # Given a signer for the distribution, When it makes a one-day link (the longest SPEC §8 allows)
    signer, _ = signer_for(pem)
    url = signer.url(KEY, expires_in_s=86_400)
    resource, signing = split_link(url)
    # Then the link is on the distribution, at the object's key, with the key group's key pair id
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc) == ("https", DOMAIN)
    assert unquote(parts.path) == "/" + KEY
    assert signing["Key-Pair-Id"] == KEY_PAIR_ID
    # and it expires exactly a day from now: CloudFront refuses it after that second, not before
    assert int(signing["Expires"]) == int(NOW) + 86_400
    # and its signature verifies against the public key for exactly this URL and this expiry
    public_key = private_key.public_key()
    assert verifies(public_key, resource, int(signing["Expires"]), signing["Signature"])
    # and not for another object, nor for a later expiry (a link cannot be stretched or pointed elsewhere)
    assert not verifies(public_key, resource.replace("q3", "q4"), int(signing["Expires"]), signing["Signature"])
    assert not verifies(public_key, resource, int(signing["Expires"]) + 1, signing["Signature"])


def test_a_download_link_carries_the_file_name_and_type_under_its_signature(
    pem: str, private_key: rsa.RSAPrivateKey
) -> None:
    # Given a link asked for with the file's name and type
    signer, _ = signer_for(pem)
    url = signer.url(KEY, expires_in_s=600, filename="q3 résumé.csv", content_type="text/csv; charset=utf-8")
    resource, signing = split_link(url)
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    # Then S3 is asked (through the distribution) to answer with them
    assert query["response-content-type"] == "text/csv; charset=utf-8"
    disposition = query["response-content-disposition"]
    assert disposition.startswith("attachment;") and "UTF-8''q3%20r%C3%A9sum%C3%A9.csv" in disposition
    # and they are part of what is signed: a link with another file name does not verify
    assert int(signing["Expires"]) == int(NOW) + 600
    assert verifies(private_key.public_key(), resource, int(signing["Expires"]), signing["Signature"])
    changed = resource.replace("text%2Fcsv", "text%2Fhtml")
    assert changed != resource
    assert not verifies(private_key.public_key(), changed, int(signing["Expires"]), signing["Signature"])


def test_the_private_key_is_read_once_on_the_first_link_and_kept(pem: str) -> None:
    # Given a signer just made (a cold start), Then it has not read the secret yet
    signer, reads = signer_for(pem)
    assert reads.calls == 0 and not signer.key_loaded
    # When it makes many links, for many files and lifetimes
    urls = {signer.url(f"w/a/f/file-{n}.txt", expires_in_s=60 + n) for n in range(50)}
    # Then the secret was read once, and every link is its own
    assert reads.calls == 1 and signer.key_loaded
    assert len(urls) == 50


def test_a_secret_that_is_not_an_rsa_key_fails_the_link_and_is_read_again_next_time(pem: str) -> None:
    reads = SecretReads("not a key")
    signer = CloudFrontLinkSigner(DOMAIN, KEY_PAIR_ID, reads, clock=lambda: NOW)
    with pytest.raises(ValueError):
        signer.url(KEY, expires_in_s=60)
    reads.pem = pem  # the secret put right: the next link reads it again, and works
    assert split_link(signer.url(KEY, expires_in_s=60))[1]["Key-Pair-Id"] == KEY_PAIR_ID
    assert reads.calls == 2


@pytest.fixture
def s3_store(pem: str) -> Callable[[CloudFrontLinkSigner | None], S3BlobStore]:
    session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                            aws_session_token="session-token", region_name="eu-west-1")

    def make(downloads: CloudFrontLinkSigner | None) -> S3BlobStore:
        return S3BlobStore("agentmem-workspace", boto3_session=session, downloads=downloads)

    return make


def test_the_workspace_bucket_gives_cloudfront_download_links_and_s3_upload_links(
    pem: str, private_key: rsa.RSAPrivateKey, s3_store: Callable[[CloudFrontLinkSigner | None], S3BlobStore]
) -> None:
    # Given the workspace bucket as the deployed API builds it, with the distribution's signer
    signer, _ = signer_for(pem)
    store = s3_store(signer)
    # When it is asked for a download link, Then the link is the distribution's, signed by the key group key
    download = store.signed_url(KEY, method="GET", expires_in_s=3600, filename="q3.csv", content_type="text/csv")
    resource, signing = split_link(download)
    assert urlsplit(download).netloc == DOMAIN
    assert verifies(private_key.public_key(), resource, int(signing["Expires"]), signing["Signature"])
    assert "X-Amz-Signature" not in download
    # When it is asked for an upload link, Then it is S3's presigned PUT with the size signed, as before
    upload = store.signed_url(KEY, method="PUT", expires_in_s=3600, size=42)
    query = {k: v[0] for k, v in parse_qs(urlsplit(upload).query).items()}
    assert urlsplit(upload).netloc == "agentmem-workspace.s3.eu-west-1.amazonaws.com"
    assert query["X-Amz-Expires"] == "3600"
    assert "content-length" in query["X-Amz-SignedHeaders"].split(";")
    # And without a distribution (agentmem serve --backend aws), download links are S3 presigned too
    plain = s3_store(None).signed_url(KEY, method="GET", expires_in_s=900, filename="q3.csv")
    plain_query = {k: v[0] for k, v in parse_qs(urlsplit(plain).query).items()}
    assert plain_query["X-Amz-Expires"] == "900" and "Key-Pair-Id" not in plain_query


def test_the_private_key_comes_from_its_secret(pem: str) -> None:
    from moto import mock_aws

    with mock_aws():
        session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="eu-west-1")
        arn = session.client("secretsmanager").create_secret(Name="link-key", SecretString=pem)["ARN"]
        assert secret_reader(arn, session)() == pem


def test_settings_take_the_distribution_whole_or_not_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:agentmem-link-key-AbCdEf"
    for key in ("AGENTMEM_DOWNLOAD_DOMAIN", "AGENTMEM_DOWNLOAD_KEY_PAIR_ID", "AGENTMEM_DOWNLOAD_KEY_SECRET_ARN"):
        monkeypatch.delenv(key, raising=False)
    # Given all three, Then the AWS backend signs downloads on the distribution, reading no secret yet
    whole = Settings(backend="aws", download_domain=DOMAIN, download_key_pair_id=KEY_PAIR_ID,
                     download_key_secret_arn=arn)
    links = build_download_links(whole, boto3.Session(region_name="eu-west-1"))
    assert isinstance(links, CloudFrontLinkSigner)
    assert (links.domain, links.key_pair_id) == (DOMAIN, KEY_PAIR_ID)
    # Given none, Then there is no signer (S3 presigned links)
    assert build_download_links(Settings(backend="aws"), boto3.Session(region_name="eu-west-1")) is None
    # Given only some, or a domain that is a URL, Then the start stops, naming what is missing or wrong
    monkeypatch.setenv("AGENTMEM_DOWNLOAD_DOMAIN", DOMAIN)
    with pytest.raises(SettingsError, match="AGENTMEM_DOWNLOAD_KEY_PAIR_ID and AGENTMEM_DOWNLOAD_KEY_SECRET_ARN"):
        load_settings()
    monkeypatch.setenv("AGENTMEM_DOWNLOAD_DOMAIN", f"https://{DOMAIN}/")
    monkeypatch.setenv("AGENTMEM_DOWNLOAD_KEY_PAIR_ID", KEY_PAIR_ID)
    monkeypatch.setenv("AGENTMEM_DOWNLOAD_KEY_SECRET_ARN", arn)
    with pytest.raises(SettingsError, match="AGENTMEM_DOWNLOAD_DOMAIN"):
        load_settings()


def test_a_link_from_the_service_expires_when_the_service_says(
    pem: str, private_key: rsa.RSAPrivateKey, tmp_path: Any
) -> None:
    from datetime import UTC, datetime, timedelta

    from agentmem.adapters.embedded.blobs import FileBlobStore
    from agentmem.bootstrap import Adapters, build_container
    from agentmem.domain.clock import parse_iso
    from agentmem.services.agents import AgentSettings
    from moto import mock_aws

    now = [datetime(2026, 12, 2, 9, 30, 15, 250_000, tzinfo=UTC)]

    def clock() -> datetime:
        return now[0]

    with mock_aws():
        # Given the service with the deployed stack's workspace bucket (S3 in moto, links signed for CloudFront),
        # one clock for both, and a file in a conversation's workspace
        session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="eu-west-1")
        session.client("s3").create_bucket(Bucket="agentmem-workspace",
                                           CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        signer = CloudFrontLinkSigner(DOMAIN, KEY_PAIR_ID, SecretReads(pem), clock=lambda: now[0].timestamp())
        store = S3BlobStore("agentmem-workspace", boto3_session=session, downloads=signer)
        container = build_container(
            Settings(backend="embedded", data_dir=tmp_path), clock=clock,
            adapters=Adapters(embedder=None, journal=FileBlobStore(tmp_path / "journal"), workspaces=store),
        )
        _, secret = container.keys.create_account("acme")
        account = container.keys.authenticate("Bearer " + secret)
        container.agents.put(account, "support", AgentSettings())
        container.workspaces.write(account, "support", "c1", "reports/q3.csv", b"a,b\n", user="ana")
        # When a one-day download link is asked for (the longest SPEC §8 allows)
        link = container.workspaces.link(account, "support", "c1", "reports/q3.csv", user="ana", expires_in_s=86_400)
    # Then it is the distribution's, its signature verifies, and it works until the expiry the service states
    # and stops within the second after it (CloudFront's Expires is whole seconds)
    resource, signing = split_link(link["url"])
    stated = parse_iso(link["expires_at"])
    assert stated == now[0] + timedelta(days=1)
    expires = datetime.fromtimestamp(int(signing["Expires"]), UTC)
    assert stated <= expires < stated + timedelta(seconds=1), (stated, expires)
    assert verifies(private_key.public_key(), resource, int(signing["Expires"]), signing["Signature"])
    assert unquote(urlsplit(link["url"]).path).endswith("/f/reports/q3.csv")
