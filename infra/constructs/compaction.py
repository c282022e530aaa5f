"""Periodic compaction: every 15 minutes, start summary passes for conversations left over threshold."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from constructs import Construct

from ..config import DeploymentConfig
from .function import AgentmemFunction, FunctionSpec
from .grants import TABLE_READ, TABLE_WRITE, grant_start_execution, grant_table
from .packaging import Layers

SCHEDULE = events.Schedule.rate(Duration.minutes(15))


class CompactionSchedule(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeploymentConfig, layers: Layers,
        environment: dict[str, str], table: dynamodb.ITable, state_machine_arn: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.sweeper = AgentmemFunction(
            self, "Compaction", layers=layers, config=config, environment=environment,
            spec=FunctionSpec(
                name="compaction", description="agentmem: start summary passes left over threshold",
                memory_mb=256, timeout=Duration.minutes(2),
            ),
        )
        # the sweep purges trashed memories past their 30 days and flushes usage counters
        grant_table(self.sweeper, table, TABLE_READ + TABLE_WRITE)
        grant_start_execution(self.sweeper, state_machine_arn)
        self.rule = events.Rule(
            self, "Every15Minutes", schedule=SCHEDULE,
            description="agentmem: compaction sweep (functions/compaction/handler.lambda_handler)",
            targets=[
                targets.LambdaFunction(self.sweeper.function, retry_attempts=2, max_event_age=Duration.minutes(10))
            ],
        )
