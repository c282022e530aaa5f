"""What the stateful stack shares with the stateless one: named CloudFormation exports.

Named exports (rather than CDK's generated ones) make the contract between the stacks explicit and
stable: the stateless stack can be rebuilt, replaced or deleted without touching the data, and an
export never disappears because a consumer stopped using it for one deploy.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import CfnOutput, Fn
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..config import DeploymentConfig
from ..constructs.download_links import DownloadLinks
from ..constructs.search import SearchCollection, collection_name
from ..constructs.storage import Storage


def export_name(config: DeploymentConfig, key: str) -> str:
    return f"{config.name}:{key}"


def publish(
    scope: Construct, config: DeploymentConfig, storage: Storage, search: SearchCollection | None,
    downloads: DownloadLinks,
) -> None:
    """The stateful stack's outputs, exported under stable names (also what an operator reads). Without a
    search collection (``agentmem:searchCollection=false``) its two are left out."""
    values = {
        "TableName": ("table-name", storage.table.table_name, "AGENTMEM_TABLE"),
        "TableArn": ("table-arn", storage.table.table_arn, "the table's ARN"),
        "TableStreamArn": ("table-stream-arn", storage.table.table_stream_arn or "", "the table's stream"),
        "JournalBucketName": ("journal-bucket-name", storage.journal_bucket.bucket_name, "AGENTMEM_JOURNAL_BUCKET"),
        "JournalBucketArn": ("journal-bucket-arn", storage.journal_bucket.bucket_arn, "the journal bucket's ARN"),
        "WorkspaceBucketName": (
            "workspace-bucket-name", storage.workspace_bucket.bucket_name, "AGENTMEM_WORKSPACE_BUCKET"
        ),
        "WorkspaceBucketArn": (
            "workspace-bucket-arn", storage.workspace_bucket.bucket_arn, "the workspace bucket's ARN"
        ),
        "DownloadDomain": ("download-domain", downloads.domain_name, "AGENTMEM_DOWNLOAD_DOMAIN"),
        "DownloadKeyPairId": ("download-key-pair-id", downloads.key_pair_id, "AGENTMEM_DOWNLOAD_KEY_PAIR_ID"),
        "DownloadKeySecretArn": (
            "download-key-secret-arn", downloads.secret.secret_arn, "AGENTMEM_DOWNLOAD_KEY_SECRET_ARN"
        ),
    }
    if search is not None:
        values["CollectionArn"] = ("collection-arn", search.arn, "the search collection's ARN")
        values["CollectionEndpoint"] = ("collection-endpoint", search.endpoint, "AGENTMEM_OPENSEARCH_ENDPOINT")
    for output_id, (key, value, description) in values.items():
        CfnOutput(scope, output_id, value=value, description=description, export_name=export_name(config, key))


@dataclass(frozen=True)
class SharedCollection:
    """The search collection as the stateless stack sees it."""

    name: str
    arn: str
    endpoint: str


@dataclass(frozen=True)
class SharedResources:
    """The stateful resources as the stateless stack sees them (imported by export name)."""

    table: dynamodb.ITable
    table_name: str
    journal_bucket: s3.IBucket
    workspace_bucket: s3.IBucket
    search: SharedCollection | None  # None: the deployment has no search collection
    downloads: dict[str, str]  # the download links' settings (the API's): distribution domain, key pair id, secret
    journal_arn_label: str  # how cdk-nag names the imported bucket ARNs in its findings
    workspace_arn_label: str

    @classmethod
    def import_into(cls, scope: Construct, config: DeploymentConfig) -> SharedResources:
        def imported(key: str) -> str:
            return Fn.import_value(export_name(config, key))

        table = dynamodb.Table.from_table_attributes(
            scope, "Table", table_arn=imported("table-arn"), table_stream_arn=imported("table-stream-arn"),
        )
        journal = s3.Bucket.from_bucket_attributes(
            scope, "JournalBucket", bucket_arn=imported("journal-bucket-arn"),
            bucket_name=imported("journal-bucket-name"),
        )
        workspace = s3.Bucket.from_bucket_attributes(
            scope, "WorkspaceBucket", bucket_arn=imported("workspace-bucket-arn"),
            bucket_name=imported("workspace-bucket-name"),
        )
        return cls(
            table=table, table_name=imported("table-name"), journal_bucket=journal, workspace_bucket=workspace,
            search=SharedCollection(
                name=collection_name(config), arn=imported("collection-arn"), endpoint=imported("collection-endpoint"),
            ) if config.search_collection else None,
            downloads={
                "AGENTMEM_DOWNLOAD_DOMAIN": imported("download-domain"),
                "AGENTMEM_DOWNLOAD_KEY_PAIR_ID": imported("download-key-pair-id"),
                "AGENTMEM_DOWNLOAD_KEY_SECRET_ARN": imported("download-key-secret-arn"),
            },
            journal_arn_label=export_name(config, "journal-bucket-arn"),
            workspace_arn_label=export_name(config, "workspace-bucket-arn"),
        )
