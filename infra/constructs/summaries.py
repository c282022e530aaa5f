"""The summary pass: the summarise task function and the state machine that runs its three steps."""

from __future__ import annotations

import json

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ..config import DeploymentConfig
from ..nag import XRAY_REASON, acknowledge
from ..stacks.shared import SharedResources
from .function import AgentmemFunction, FunctionSpec, retention
from .grants import (
    OBJECT_DELETE,
    OBJECT_READ,
    OBJECT_WRITE,
    TABLE_READ,
    TABLE_WRITE,
    grant_bedrock_model,
    grant_bucket,
    grant_table,
)
from .packaging import Layers
from .summary_state_machine import summary_definition

TASK_TIMEOUT = Duration.minutes(5)

LOG_DELIVERY_REASON = (
    "Step Functions' CloudWatch Logs delivery (logs:CreateLogDelivery, PutResourcePolicy, "
    "DescribeLogGroups, ...) is an account-level API without resource-level permissions; CDK grants "
    "exactly those actions for the state machine's log destination."
)


class SummaryPipeline(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeploymentConfig, layers: Layers,
        environment: dict[str, str], shared: SharedResources,
    ) -> None:
        super().__init__(scope, construct_id)
        self.task = self._build_task_function(config, layers, environment, shared)
        self.state_machine = self._build_state_machine(config)

    def _build_task_function(
        self, config: DeploymentConfig, layers: Layers, environment: dict[str, str], shared: SharedResources
    ) -> AgentmemFunction:
        task = AgentmemFunction(
            self, "Summarise", layers=layers, config=config, environment=environment,
            spec=FunctionSpec(
                name="summarise", description="agentmem: the summary pass's steps (flush, summarise, checkpoint)",
                memory_mb=1024, timeout=TASK_TIMEOUT,
            ),
        )
        grant_table(task, shared.table, TABLE_READ + TABLE_WRITE)
        # a pass seals the journal into segments; a seal that loses to a purge removes the ones it wrote
        grant_bucket(
            task, shared.journal_bucket, OBJECT_READ + OBJECT_WRITE + OBJECT_DELETE,
            arn_label=shared.journal_arn_label, list_objects=True,
        )
        grant_bedrock_model(task, config.summary_model_id)
        return task

    def _build_state_machine(self, config: DeploymentConfig) -> sfn.StateMachine:
        log_group = logs.LogGroup(
            self, "ExecutionLogs", retention=retention(config.log_retention_days), removal_policy=RemovalPolicy.DESTROY
        )
        definition = summary_definition(self.task.function_arn, task_timeout_seconds=int(TASK_TIMEOUT.to_seconds()))
        machine = sfn.StateMachine(
            self, "StateMachine",
            comment="agentmem summary pass: flush → summarise → write checkpoint",
            definition_body=sfn.DefinitionBody.from_string(json.dumps(definition)),
            state_machine_type=sfn.StateMachineType.STANDARD,
            timeout=Duration.seconds(definition["TimeoutSeconds"]),
            tracing_enabled=True,
            # ALL events, without execution data: inputs and outputs carry conversation content
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
        )
        machine.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.task.function_arn])
        )
        acknowledge(machine.role, "AwsSolutions-IAM5[Resource::*]", f"{XRAY_REASON} {LOG_DELIVERY_REASON}")
        return machine

    @property
    def state_machine_arn(self) -> str:
        return self.state_machine.state_machine_arn
