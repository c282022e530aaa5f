"""One agentmem Lambda function: its own role, its own log group, both layers, the shared settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from ..config import DeploymentConfig
from ..nag import RUNTIME_REASON, XRAY_REASON, acknowledge
from .packaging import RUNTIME, Layers, function_code

POWERTOOLS_SERVICE = "agentmem"  # agentmem.observability.SERVICE
POWERTOOLS_NAMESPACE = "agentmem"  # agentmem.observability.NAMESPACE


@dataclass(frozen=True)
class FunctionSpec:
    """What differs between the functions. ``name`` is the folder under ``functions/``."""

    name: str
    description: str
    memory_mb: int
    timeout: Duration


def base_environment(settings: Mapping[str, str]) -> dict[str, str]:
    """Powertools' names and the agentmem settings (``AGENTMEM_*``) every function starts from."""
    return {
        "POWERTOOLS_SERVICE_NAME": POWERTOOLS_SERVICE,
        "POWERTOOLS_METRICS_NAMESPACE": POWERTOOLS_NAMESPACE,
        "POWERTOOLS_LOG_LEVEL": "INFO",
        # pydantic looks for plugins in every installed package's entry points when it builds its first model
        # (the settings, on every cold start); the layers hold none
        "PYDANTIC_DISABLE_PLUGINS": "__all__",
        "AGENTMEM_BACKEND": "aws",
        **settings,
    }


class AgentmemFunction(Construct):
    """A function on the Lambda runtime's Python (``infra.config.LAMBDA_PYTHON``) from ``functions/<name>/``,
    with a role that starts with no permissions.

    Every function has the package layer and the dependency layer, and no other.

    The role can only write its own log group and send traces; each capability grants what it needs.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, spec: FunctionSpec, layers: Layers,
        config: DeploymentConfig, environment: Mapping[str, str],
    ) -> None:
        super().__init__(scope, construct_id)
        self.spec = spec
        self.role = self._build_role()
        self.log_group = self._build_log_group(config)
        self.function = self._build_function(
            layers.all, layers.architecture, environment, config.reserved_concurrency(spec.name)
        )
        self.log_group.grant_write(self.role)
        self._acknowledge()

    def acknowledge_wildcard(self, reason: str) -> None:
        """Another action on ``*`` besides tracing; the reason is added to the tracing one."""
        acknowledge(self.role, "AwsSolutions-IAM5[Resource::*]", f"{XRAY_REASON} {reason}")

    def _build_role(self) -> iam.Role:
        return iam.Role(
            self, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"agentmem {self.spec.name} function: only what it needs",
        )

    def _build_log_group(self, config: DeploymentConfig) -> logs.LogGroup:
        return logs.LogGroup(
            self, "Logs", retention=retention(config.log_retention_days), removal_policy=RemovalPolicy.DESTROY
        )

    def _build_function(
        self, layers: list[lambda_.ILayerVersion], architecture: lambda_.Architecture, environment: Mapping[str, str],
        reserved_concurrency: int | None,
    ) -> lambda_.Function:
        return lambda_.Function(
            self, "Function",
            description=self.spec.description,
            runtime=RUNTIME,
            architecture=architecture,
            handler="handler.lambda_handler",  # functions/<name>/handler.py is the asset's root
            code=function_code(self.spec.name),
            layers=layers,
            role=self.role,
            log_group=self.log_group,
            memory_size=self.spec.memory_mb,
            timeout=self.spec.timeout,
            tracing=lambda_.Tracing.ACTIVE,
            environment=dict(environment),
            reserved_concurrent_executions=reserved_concurrency,  # agentmem:<name>ReservedConcurrency
        )

    def grant(self, actions: Sequence[str], resources: Sequence[str]) -> None:
        self.role.add_to_principal_policy(iam.PolicyStatement(actions=list(actions), resources=list(resources)))

    def _acknowledge(self) -> None:
        acknowledge(self.function, "AwsSolutions-L1", RUNTIME_REASON)
        acknowledge(self.role, "AwsSolutions-IAM5[Resource::*]", XRAY_REASON)

    @property
    def function_arn(self) -> str:
        return self.function.function_arn


RETENTION = {
    1: logs.RetentionDays.ONE_DAY, 7: logs.RetentionDays.ONE_WEEK, 14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH, 90: logs.RetentionDays.THREE_MONTHS, 180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR, 731: logs.RetentionDays.TWO_YEARS,
}


def retention(days: int) -> logs.RetentionDays:
    if days not in RETENTION:
        raise ValueError(f"agentmem:logRetentionDays is one of {sorted(RETENTION)}, not {days}")
    return RETENTION[days]
