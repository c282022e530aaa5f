"""Blobs on S3: journal segments and workspace files, one bucket each (names from settings).

A create-only write is a conditional PutObject with ``If-None-Match: *``: S3 answers 412 when an object
is already there, which becomes ``BlobExistsError``. While another conditional write of the same key
is in flight S3 may answer 409 ``ConditionalRequestConflict`` instead; that one is retried, since
its outcome decides whether ours can land.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import boto3
from botocore.exceptions import ClientError

from ...domain.clock import iso
from ...domain.workspaces import content_disposition
from ...ports.blobs import BlobExistsError, BlobInfo, BlobNotFoundError, BlobStore, check_key
from .config import client_config

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from .cloudfront_links import CloudFrontLinkSigner

_CONFLICT_RETRIES = 3
_CONFLICT_PAUSE_S = 0.05
_EXISTS_CODES = frozenset({"PreconditionFailed", "412"})
_MISSING_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


class S3BlobStore(BlobStore):
    def __init__(
        self,
        bucket: str,
        *,
        boto3_client: S3Client | None = None,
        boto3_session: boto3.session.Session | None = None,
        page_size: int = 1000,
        downloads: CloudFrontLinkSigner | None = None,
    ) -> None:
        self.bucket = bucket
        # download links as CloudFront signed URLs (the deployed stack); None: S3 presigned, like upload links
        self.downloads = downloads
        self.page_size = page_size  # keys per ListObjectsV2 page (S3's maximum is 1000)
        self._session = boto3_session or boto3.session.Session()
        self.client: S3Client = boto3_client or self._session.client("s3", config=client_config())
        # a client handed in without its session presigns itself (its credentials are not reachable otherwise)
        self._presigner: S3Client | None = boto3_client if boto3_client is not None and boto3_session is None else None

    @property
    def presigner(self) -> S3Client:
        """A client that presigns with SigV4 (botocore would still use SigV2 for some regions) and, on AWS,
        virtual-hosted URLs on the bucket's regional endpoint; against an emulator, its endpoint."""
        if self._presigner is None:
            endpoint = self.client.meta.endpoint_url
            on_aws = endpoint.endswith(".amazonaws.com") or endpoint.endswith(".amazonaws.com.cn")
            config = client_config(signature_version="s3v4", s3={"addressing_style": "virtual" if on_aws else "path"})
            self._presigner = self._session.client(
                "s3", region_name=self.client.meta.region_name, endpoint_url=None if on_aws else endpoint, config=config
            )
        return self._presigner

    def put(self, key: str, data: bytes, *, if_none_match: bool = False) -> None:
        check_key(key)
        for attempt in range(_CONFLICT_RETRIES + 1):
            try:
                if if_none_match:
                    self.client.put_object(Bucket=self.bucket, Key=key, Body=data, IfNoneMatch="*")
                else:
                    self.client.put_object(Bucket=self.bucket, Key=key, Body=data)
                return
            except ClientError as error:
                code = _code(error)
                if if_none_match and code in _EXISTS_CODES:
                    raise BlobExistsError(f"a blob already exists at {key!r}", key=key) from None
                if code == "ConditionalRequestConflict" and attempt < _CONFLICT_RETRIES:
                    time.sleep(_CONFLICT_PAUSE_S * (attempt + 1))
                    continue
                raise

    def get(self, key: str) -> bytes:
        check_key(key)
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if _code(error) in _MISSING_CODES:
                raise BlobNotFoundError(f"no blob at {key!r}") from None
            raise
        return response["Body"].read()

    def delete(self, key: str) -> None:
        check_key(key)
        self.client.delete_object(Bucket=self.bucket, Key=key)

    def stat(self, key: str) -> BlobInfo:
        check_key(key)
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if _code(error) in _MISSING_CODES:
                raise BlobNotFoundError(f"no blob at {key!r}") from None
            raise
        return BlobInfo(key=key, size=head["ContentLength"], last_modified=iso(head["LastModified"]))

    def list(self, prefix: str = "", *, start_after: str = "") -> Iterator[BlobInfo]:
        paginator = self.client.get_paginator("list_objects_v2")
        extra = {"StartAfter": start_after} if start_after else {}
        pages = paginator.paginate(
            Bucket=self.bucket, Prefix=prefix, PaginationConfig={"PageSize": self.page_size}, **extra  # type: ignore[arg-type]
        )
        for page in pages:
            for item in page.get("Contents", []):
                yield BlobInfo(key=item["Key"], size=item["Size"], last_modified=iso(item["LastModified"]))

    def delete_prefix(self, prefix: str) -> builtins.list[str]:
        """DeleteObjects, 1,000 keys a call."""
        removed: builtins.list[str] = []
        batch: builtins.list[str] = []
        for info in self.list(prefix):
            batch.append(info.key)
            if len(batch) == 1000:
                self._delete_batch(batch)
                removed += batch
                batch = []
        if batch:
            self._delete_batch(batch)
            removed += batch
        return removed

    def _delete_batch(self, keys: builtins.list[str]) -> None:
        answer = self.client.delete_objects(
            Bucket=self.bucket, Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True}
        )
        failed = answer.get("Errors", [])
        if failed:
            raise RuntimeError(f"S3 kept {len(failed)} of {len(keys)} objects: {failed[0].get('Message', '')}")

    def signed_url(
        self, key: str, *, method: str, expires_in_s: int, size: int | None = None, filename: str | None = None,
        content_type: str | None = None,
    ) -> str:
        """A SigV4 presigned URL. A PUT link signs ``Content-Length``, so S3 takes exactly ``size`` bytes.
        With ``downloads``, a GET link is a CloudFront signed URL instead, which outlives the signing session."""
        check_key(key)
        params: dict[str, object] = {"Bucket": self.bucket, "Key": key}
        if method == "PUT":
            if size is not None:
                params["ContentLength"] = size
            return self.presigner.generate_presigned_url("put_object", Params=params, ExpiresIn=expires_in_s)
        if self.downloads is not None:
            return self.downloads.url(key, expires_in_s=expires_in_s, filename=filename, content_type=content_type)
        if filename:
            params["ResponseContentDisposition"] = content_disposition(filename)
        if content_type:
            params["ResponseContentType"] = content_type
        return self.presigner.generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in_s)

    def ensure_bucket(self) -> bool:
        """Create the bucket when it is missing (local mode's ``--create-resources``); True when created."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
            return False
        except ClientError as error:
            if _code(error) not in ("404", "NoSuchBucket", "NotFound"):
                raise
        region = self.client.meta.region_name
        if region and region != "us-east-1":
            self.client.create_bucket(
                Bucket=self.bucket,
                CreateBucketConfiguration={"LocationConstraint": region},  # type: ignore[typeddict-item]
            )
        else:
            self.client.create_bucket(Bucket=self.bucket)
        return True
