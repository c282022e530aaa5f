"""Summary passes as named Step Functions executions, run by moto with our real task handler.

The state machine is the one the CDK deploys (``infra/constructs/summary_state_machine.py``); moto
executes it, and each Lambda task reaches ``functions/summarise/handler.lambda_handler`` in this
process through the harness's bridge (tests/support/moto_server.py).
"""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from agentmem.adapters.aws.stepfunctions import StepFunctionsJobs, execution_arn
from agentmem.domain.errors import NotFoundError
from agentmem.ports.jobs import JobRun, run_name
from moto_server import ACCOUNT, MotoServer

from functions.summarise.handler import STEPS, lambda_handler
from infra.constructs.summary_state_machine import summary_definition

JOB = {"account": "acct_1", "agent": "support", "user": "ana", "conversation": "order-42"}
PASS = "summary/acct_1/support/ana/order-42"


def no_retry_of_invalid_input(definition: dict[str, Any]) -> dict[str, Any]:
    """The change asked of the ASL: a step's InvalidStepInputError is not retried (retrying cannot fix
    the input). A no-op once the definition has it."""
    changed = copy.deepcopy(definition)
    for state in changed["States"].values():
        retry = state.get("Retry")
        if retry is not None and not any("InvalidStepInputError" in r["ErrorEquals"] for r in retry):
            retry.insert(0, {"ErrorEquals": ["InvalidStepInputError"], "MaxAttempts": 0})
    return changed


@contextmanager
def summary_machine(
    moto: MotoServer, sfn: Any, handler: Callable[[Any, Any], Any], *, fix_retry: bool = False
) -> Iterator[tuple[StepFunctionsJobs, str]]:
    """The summary state machine on moto, its tasks answered by ``handler``; yields (jobs, function name)."""
    function = f"agentmem-summarise-{uuid.uuid4().hex[:8]}"
    with moto.lambda_function(function, handler) as function_arn:
        definition = summary_definition(function_arn)
        if fix_retry:
            definition = no_retry_of_invalid_input(definition)
        machine = sfn.create_state_machine(
            name=f"summary-{uuid.uuid4().hex[:8]}", definition=json.dumps(definition),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/agentmem-summary",
        )["stateMachineArn"]
        yield StepFunctionsJobs(machine, boto3_client=sfn), function


def finished(jobs: StepFunctionsJobs, run_id: str, timeout: float = 30) -> JobRun:
    deadline = time.monotonic() + timeout
    while True:
        run = jobs.describe(run_id)
        if run.state != "running" or time.monotonic() > deadline:
            return run
        time.sleep(0.05)


def steps_called(moto: MotoServer, function: str) -> list[tuple[str, str | None]]:
    return [(i.event.get("step"), i.error) for i in moto.bridge.invocations if i.function == function]


def test_a_summary_pass_runs_every_step_through_our_handler(moto: MotoServer, sfn: Any) -> None:
    with summary_machine(moto, sfn, lambda_handler) as (jobs, function):
        # When a pass is started through the adapter
        run_id = jobs.start(PASS, JOB, discriminator="0")
        run = finished(jobs, run_id)
    # Then it is a named execution of the state machine, and it succeeded
    assert run_id == execution_arn(jobs.state_machine_arn, run_name(PASS, "0"))
    assert run.name == run_name(PASS, "0")
    assert run.state == "succeeded", run.error
    # And each step ran once, in order, in our handler, leaving its trail in the output
    assert steps_called(moto, function) == [(step, None) for step in STEPS]
    assert run.output is not None
    assert run.output["job"] == JOB
    for position, step in enumerate(STEPS):
        assert run.output["results"][step]["done"] == list(STEPS[: position + 1])
        assert run.output["results"][step]["job"] == JOB


def test_starting_a_pass_that_is_running_is_a_no_op(moto: MotoServer, sfn: Any) -> None:
    # Given a pass held inside its first step
    entered, release = threading.Event(), threading.Event()

    def held(event: Any, context: Any) -> Any:
        entered.set()
        assert release.wait(20)
        return lambda_handler(event, context)

    with summary_machine(moto, sfn, held) as (jobs, function):
        first = jobs.start(PASS, JOB, discriminator="40")
        assert entered.wait(20)
        # When it is started again: same input (Step Functions answers with the running execution)
        # and another input (Step Functions refuses: ExecutionAlreadyExists)
        same = jobs.start(PASS, JOB, discriminator="40")
        other = jobs.start(PASS, {**JOB, "note": "a later trigger"}, discriminator="40")
        # Then both are the running execution, and it is the only one
        assert same == first and other == first
        executions = sfn.list_executions(stateMachineArn=jobs.state_machine_arn)["executions"]
        assert [e["executionArn"] for e in executions] == [first]
        assert jobs.describe(first).state == "running"
        release.set()
        assert finished(jobs, first).state == "succeeded"
        # And once it has finished, a late trigger of the same pass starts nothing
        assert jobs.start(PASS, JOB, discriminator="40") == first
        assert len(sfn.list_executions(stateMachineArn=jobs.state_machine_arn)["executions"]) == 1
    assert [step for step, _ in steps_called(moto, function)] == list(STEPS)


def test_a_step_that_fails_is_retried_by_the_state_machine(moto: MotoServer, sfn: Any) -> None:
    # Given a summariser that fails its first call (the ASL retries task failures after 5 s)
    failures = iter([RuntimeError("the model is throttled")])

    def flaky(event: Any, context: Any) -> Any:
        if event.get("step") == "summarise":
            error = next(failures, None)
            if error is not None:
                raise error
        return lambda_handler(event, context)

    with summary_machine(moto, sfn, flaky) as (jobs, function):
        run = finished(jobs, jobs.start(PASS, JOB, discriminator="retry"), timeout=40)
    assert run.state == "succeeded", run.error
    assert steps_called(moto, function) == [
        ("flush", None), ("summarise", "RuntimeError"), ("summarise", None), ("write_checkpoint", None),
    ]


def test_an_invalid_job_fails_the_pass_at_once(moto: MotoServer, sfn: Any) -> None:
    # Given the state machine (with invalid input not retried) and a job without its conversation
    with summary_machine(moto, sfn, lambda_handler, fix_retry=True) as (jobs, function):
        run = finished(jobs, jobs.start(PASS, {"account": "acct_1", "agent": "support"}, discriminator="bad"))
    # Then the handler refused it with its own error, once, and the execution failed through the Catch
    assert steps_called(moto, function) == [("flush", "InvalidStepInputError")]
    assert run.state == "failed"
    assert run.error is not None and run.error.startswith("SummaryPassFailed")


def test_describing_an_execution_that_does_not_exist_is_not_found(moto: MotoServer, sfn: Any) -> None:
    with summary_machine(moto, sfn, lambda_handler) as (jobs, _), pytest.raises(NotFoundError):
        jobs.describe(execution_arn(jobs.state_machine_arn, "never-started"))
    with pytest.raises(ValueError):
        StepFunctionsJobs("arn:aws:lambda:us-east-1:123456789012:function:not-a-machine", boto3_client=sfn)
