"""Jobs on Step Functions: each run is a NAMED execution of the summary state machine.

The execution's name is ``run_name(name, discriminator)``, so starting a run twice starts one
execution: Step Functions either returns the running execution (same name, same input) or refuses with
``ExecutionAlreadyExists`` (different input, or already finished) — both mean "already started", and
the adapter answers with that execution's ARN. Input is JSON with sorted keys so equal payloads are
equal inputs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import ClientError

from ...domain.errors import NotFoundError
from ...observability import logger
from ...ports.jobs import JobRun, Jobs, JobState, run_name
from .config import client_config

if TYPE_CHECKING:
    from mypy_boto3_stepfunctions import SFNClient

_STATES: Mapping[str, JobState] = {
    "RUNNING": "running",
    "PENDING_REDRIVE": "running",
    "SUCCEEDED": "succeeded",
    "FAILED": "failed",
    "TIMED_OUT": "failed",
    "ABORTED": "failed",
}


def execution_arn(state_machine_arn: str, name: str) -> str:
    """``arn:<p>:states:<r>:<a>:stateMachine:<sm>`` → ``arn:<p>:states:<r>:<a>:execution:<sm>:<name>``."""
    parts = state_machine_arn.split(":")
    if len(parts) != 7 or parts[2] != "states" or parts[5] != "stateMachine":
        raise ValueError(f"not a state machine ARN: {state_machine_arn!r}")
    return ":".join([*parts[:5], "execution", parts[6], name])


class StepFunctionsJobs(Jobs):
    def __init__(
        self,
        state_machine_arn: str,
        *,
        boto3_client: SFNClient | None = None,
        boto3_session: boto3.session.Session | None = None,
    ) -> None:
        execution_arn(state_machine_arn, "x")  # validates the ARN's shape up front
        self.state_machine_arn = state_machine_arn
        self.client: SFNClient = boto3_client or (boto3_session or boto3.session.Session()).client(
            "stepfunctions", config=client_config()
        )

    def start(self, name: str, payload: Mapping[str, Any], *, discriminator: str = "") -> str:
        execution = run_name(name, discriminator)
        body = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        try:
            response = self.client.start_execution(
                stateMachineArn=self.state_machine_arn, name=execution, input=body
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
                raise
            logger.info("job already started", extra={"job": name, "execution": execution})
            return execution_arn(self.state_machine_arn, execution)
        logger.info("job started", extra={"job": name, "execution": execution})
        return response["executionArn"]

    def describe(self, run_id: str) -> JobRun:
        try:
            response = self.client.describe_execution(executionArn=run_id)
        except ClientError as failure:
            if failure.response.get("Error", {}).get("Code") in ("ExecutionDoesNotExist", "InvalidArn"):
                raise NotFoundError(f"no job run {run_id!r}") from None
            raise
        state = _STATES.get(response["status"], "failed")
        output = json.loads(response["output"]) if state == "succeeded" and response.get("output") else None
        error = None
        if state == "failed":
            kind, cause = response.get("error") or response["status"], response.get("cause")
            error = f"{kind}: {cause}" if cause else kind
        return JobRun(run_id=run_id, name=response["name"], state=state, output=output, error=error)
