"""The data that must outlive any deploy: the single table and the journal and workspace buckets.

Everything here is retained when the stack is deleted (see docs/deploying.md, "Tearing it down").
"""

from __future__ import annotations

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..config import DeploymentConfig
from ..table_schema import (
    BILLING_MODE,
    PARTITION_KEY,
    SORT_KEY,
    STREAM_VIEW,
    TABLE_GSIS,
    TTL_ATTRIBUTE,
    GlobalIndex,
)

_PROJECTIONS = {
    "ALL": dynamodb.ProjectionType.ALL,
    "KEYS_ONLY": dynamodb.ProjectionType.KEYS_ONLY,
    "INCLUDE": dynamodb.ProjectionType.INCLUDE,
}
ABORT_INCOMPLETE_UPLOADS = s3.LifecycleRule(
    id="abort-incomplete-uploads", abort_incomplete_multipart_upload_after=Duration.days(1)
)
# the API's origin (the console's): https://<api id>.execute-api.<region>.amazonaws.com
CONSOLE_ORIGIN = f"https://*.execute-api.{Aws.REGION}.{Aws.URL_SUFFIX}"
# what the console's fetch(PUT, file) sends that CORS asks about: the file's type (Content-Length is the browser's)
CONSOLE_UPLOAD_HEADERS = ("content-type",)
_TYPES = {"S": dynamodb.AttributeType.STRING, "N": dynamodb.AttributeType.NUMBER}


class Storage(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: DeploymentConfig) -> None:
        super().__init__(scope, construct_id)
        self.table = self._build_table()
        self.access_logs = self._build_access_log_bucket()
        self.journal_bucket = self._build_journal_bucket()
        self.workspace_bucket = self._build_workspace_bucket(config)

    # -- DynamoDB ----------------------------------------------------------------------------------------
    def _build_table(self) -> dynamodb.Table:
        table = dynamodb.Table(
            self, "Table",
            partition_key=dynamodb.Attribute(name=PARTITION_KEY, type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=SORT_KEY, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode[BILLING_MODE],
            time_to_live_attribute=TTL_ATTRIBUTE,
            stream=dynamodb.StreamViewType[STREAM_VIEW],
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        for index in TABLE_GSIS:
            _add_index(table, index)
        return table

    # -- S3 ----------------------------------------------------------------------------------------------
    def _build_access_log_bucket(self) -> s3.Bucket:
        bucket = s3.Bucket(
            self, "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,  # S3 server access logging cannot write to SSE-KMS
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            lifecycle_rules=[
                s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365)),
                ABORT_INCOMPLETE_UPLOADS,
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        return bucket  # cdk-nag's S1 knows a log destination bucket does not log itself

    def _build_journal_bucket(self) -> s3.Bucket:
        """Sealed conversation segments: written once (If-None-Match), read back whole, kept."""
        return s3.Bucket(
            self, "Journal",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            versioned=True,  # the durable transcript: a bad overwrite or delete can be undone for 30 days
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="journal/",
            lifecycle_rules=[
                ABORT_INCOMPLETE_UPLOADS,
                s3.LifecycleRule(id="expire-noncurrent-versions", noncurrent_version_expiration=Duration.days(30)),
                s3.LifecycleRule(id="remove-expired-delete-markers", expired_object_delete_marker=True),
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )

    def _build_workspace_bucket(self, config: DeploymentConfig) -> s3.Bucket:
        """The files of conversations, reached through presigned URLs (so CORS for browser uploads)."""
        return s3.Bucket(
            self, "Workspace",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            versioned=True,  # an overwritten or deleted file can be recovered for 7 days
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="workspace/",
            cors=[
                s3.CorsRule(
                    allowed_methods=[s3.HttpMethods.GET, s3.HttpMethods.PUT, s3.HttpMethods.HEAD],
                    allowed_origins=list(config.workspace_cors_origins),
                    allowed_headers=["*"],
                    exposed_headers=["ETag"],
                    max_age=3600,
                ),
                # the console (served by the API at /console) uploads a dropped file with a PUT to an upload link:
                # whatever workspaceCorsOrigins says, its origin may. That origin is the REST API's, whose id the
                # stateless stack makes after this one: any REST API's of the region is as close as this stack can
                # name it. CORS guards nothing here (an upload link is its own credential, good for one path and
                # size); it lets a browser send what the link allows.
                s3.CorsRule(
                    id="console-uploads",
                    allowed_methods=[s3.HttpMethods.PUT, s3.HttpMethods.POST],
                    allowed_origins=[CONSOLE_ORIGIN],
                    allowed_headers=list(CONSOLE_UPLOAD_HEADERS),
                    exposed_headers=["ETag"],
                    max_age=3600,
                ),
            ],
            lifecycle_rules=[
                ABORT_INCOMPLETE_UPLOADS,
                s3.LifecycleRule(id="expire-noncurrent-versions", noncurrent_version_expiration=Duration.days(7)),
                s3.LifecycleRule(id="remove-expired-delete-markers", expired_object_delete_marker=True),
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )


def _add_index(table: dynamodb.Table, index: GlobalIndex) -> None:
    table.add_global_secondary_index(
        index_name=index.name,
        partition_key=dynamodb.Attribute(name=index.partition_key, type=_TYPES[index.partition_key_type]),
        sort_key=(
            dynamodb.Attribute(name=index.sort_key, type=_TYPES[index.sort_key_type]) if index.sort_key else None
        ),
        projection_type=_PROJECTIONS[index.projection],
        non_key_attributes=list(index.non_key_attributes) if index.projection == "INCLUDE" else None,
    )
