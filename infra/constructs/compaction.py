"""Periodic compaction: every 15 minutes, the sweep — summary passes for conversations left over threshold, and the
trash purge of memories and agents past their 30 days."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ..config import DeploymentConfig
from ..nag import acknowledge
from ..stacks.shared import SharedResources
from .function import AgentmemFunction, FunctionSpec
from .grants import OBJECT_DELETE, TABLE_READ, TABLE_WRITE, grant_bucket, grant_start_execution, grant_table
from .packaging import Layers

SCHEDULE = events.Schedule.rate(Duration.minutes(15))


class CompactionSchedule(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeploymentConfig, layers: Layers,
        environment: dict[str, str], shared: SharedResources, state_machine_arn: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.sweeper = AgentmemFunction(
            self, "Compaction", layers=layers, config=config, environment=environment,
            spec=FunctionSpec(
                name="compaction", description="agentmem: start summary passes left over threshold",
                memory_mb=256, timeout=Duration.minutes(2),
            ),
        )
        # the sweep purges trashed memories and agents past their 30 days and flushes usage counters; an
        # agent's purge deletes its conversations' sealed journal segments and its workspaces' files (it lists
        # and deletes objects, and reads none)
        grant_table(self.sweeper, shared.table, TABLE_READ + TABLE_WRITE)
        grant_bucket(self.sweeper, shared.journal_bucket, OBJECT_DELETE, arn_label=shared.journal_arn_label,
                     list_objects=True)
        grant_bucket(self.sweeper, shared.workspace_bucket, OBJECT_DELETE, arn_label=shared.workspace_arn_label,
                     list_objects=True)
        grant_start_execution(self.sweeper, state_machine_arn)
        self.failed_sweeps = self._build_dead_letter_queue()
        self.rule = events.Rule(
            self, "Every15Minutes", schedule=SCHEDULE,
            description="agentmem: compaction sweep (functions/compaction/handler.lambda_handler)",
            targets=[
                targets.LambdaFunction(
                    self.sweeper.function, retry_attempts=2, max_event_age=Duration.minutes(10),
                    dead_letter_queue=self.failed_sweeps,
                )
            ],
        )

    def _build_dead_letter_queue(self) -> sqs.Queue:
        """Where EventBridge puts a schedule's event it could not deliver to the sweep after its retries (the
        function throttled or missing, its permission gone): alarmed on (Monitoring.watch_queue)."""
        queue = sqs.Queue(
            self, "FailedSweeps", retention_period=Duration.days(14), enforce_ssl=True,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
        )
        acknowledge(
            queue, "AwsSolutions-SQS3",
            "This queue is itself the dead-letter queue of the compaction schedule's target (events EventBridge "
            "could not deliver after its retries); a queue behind it would only move the same events again.",
        )
        return queue
