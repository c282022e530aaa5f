"""The search indexer: the table's stream → the OpenSearch Serverless collection.

Without a collection (``agentmem:searchCollection=false``) the same function stays as the stream's consumer for
one job: counting entries that TTL removed out of their layer's counter. Its subscription then filters the
stream down to those removals (Lambda's event filtering: other records never invoke it), and it neither embeds
nor reaches a collection.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ..config import DeploymentConfig
from ..nag import acknowledge
from .function import AgentmemFunction, FunctionSpec
from .grants import TABLE_COUNTER_UPDATE, grant_bedrock_model, grant_table
from .packaging import Layers

TTL_PRINCIPAL = "dynamodb.amazonaws.com"  # functions/indexer/handler.py: who removes an item by TTL
LIST_STREAMS_REASON = (
    "dynamodb:ListStreams, which the stream event source needs, has no resource-level permissions; the "
    "record-reading actions (DescribeStream, GetRecords, GetShardIterator) are granted on this table's stream only."
)


class SearchIndexer(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeploymentConfig, layers: Layers,
        environment: dict[str, str], table: dynamodb.ITable, search: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        self.indexer = AgentmemFunction(
            self, "Indexer", layers=layers, config=config, environment=environment,
            spec=FunctionSpec(
                name="indexer", memory_mb=512,
                description="agentmem: table stream → search index" if search else "agentmem: TTL removals → counters",
                timeout=Duration.seconds(60),
            ),
        )
        self.failed_batches = self._build_failure_queue()
        self._subscribe(table, search)
        if search:
            grant_bedrock_model(self.indexer, config.embedding_model_id)
        # an entry removed by TTL is counted out of its layer's counter (the entry store's hook)
        grant_table(self.indexer, table, TABLE_COUNTER_UPDATE)

    def _build_failure_queue(self) -> sqs.Queue:
        queue = sqs.Queue(
            self, "FailedBatches", retention_period=Duration.days(14), enforce_ssl=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
        )
        acknowledge(
            queue, "AwsSolutions-SQS3",
            "This queue is itself the dead-letter destination of the indexer's stream subscription (records "
            "that failed every retry); a queue behind it would only move the same records again.",
        )
        return queue

    def _subscribe(self, table: dynamodb.ITable, search: bool) -> None:
        # without a collection, only what TTL removed (the indexer's TTL_PRINCIPAL) reaches the function
        ttl_only = [lambda_.FilterCriteria.filter(
            {"eventName": ["REMOVE"], "userIdentity": {"type": ["Service"], "principalId": [TTL_PRINCIPAL]}}
        )]
        self.indexer.function.add_event_source(
            sources.DynamoEventSource(
                table,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=100,
                max_batching_window=Duration.seconds(1),
                bisect_batch_on_error=True,
                retry_attempts=5,
                report_batch_item_failures=True,
                on_failure=sources.SqsDlq(self.failed_batches),
                filters=None if search else ttl_only,
            )
        )
        self.indexer.acknowledge_wildcard(LIST_STREAMS_REASON)
