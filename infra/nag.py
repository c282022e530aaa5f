"""cdk-nag acknowledgements, each with its reason, through one helper so they can be listed."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct

# (construct path, rule id) → reason, for every acknowledgement made while building the app
ACKNOWLEDGED: dict[tuple[str, str], str] = {}


def acknowledge(construct: IConstruct, rule: str, reason: str) -> None:
    """Accept one cdk-nag finding on ``construct`` (and its children), for the reason given."""
    if len(reason.strip()) < 20:
        raise ValueError(f"a cdk-nag acknowledgement needs a real reason: {rule} on {construct.node.path}")
    Validations.of(construct).acknowledge(Acknowledgment(id=rule, reason=reason))
    ACKNOWLEDGED[(construct.node.path, rule)] = reason


XRAY_REASON = (
    "X-Ray's PutTraceSegments/PutTelemetryRecords (and the sampling reads) do not support resource-level "
    "permissions; the statement allows only those tracing actions, no data access."
)
RUNTIME_REASON = (
    "The functions run Python 3.13 (infra.config.LAMBDA_PYTHON), the version the layers' wheels and bytecode "
    "are built and checked for; a newer runtime is the same one-line change, made with the layer build."
)
