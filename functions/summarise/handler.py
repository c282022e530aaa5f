"""The summary state machine's task handler: one Lambda, three steps (SPEC §4.3–4.5).

The state machine (``infra/constructs/summary_state_machine.py``) calls it once per step with::

    {"step": "flush" | "summarise" | "write_checkpoint",
     "job": <the execution input>,
     "results": {<each step already done>: <what it returned>}}

and keeps what it returns under ``results.<step>`` for the steps after it::

    flush ──▶ summarise ──▶ write_checkpoint

Input that is not a step's input (unknown step, a job of the wrong shape, a step whose predecessors
have no results, stray results) raises ``InvalidStepInputError``: retrying cannot fix it, and the
execution fails with it. Any other error a step raises leaves as is, for the state machine's Retry.

Each step is a method of the container's ``SummaryPass`` (``agentmem/services/summary_pass.py``), the
same code the embedded backend's job runner runs in one go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from agentmem.bootstrap import get_container
from agentmem.invocation import entry_point
from agentmem.observability import logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ConfigDict, Field, ValidationError

Step = Literal["flush", "summarise", "write_checkpoint"]
STEPS: tuple[Step, ...] = ("flush", "summarise", "write_checkpoint")


class InvalidStepInputError(Exception):
    """The event is not the input of a summary step (its ``errorType`` in Step Functions)."""


class SummaryJob(BaseModel):
    """One summary pass of one conversation. Fields beyond these (the seq range, thresholds...) are
    the conversations issue's to add; they travel through the steps untouched."""

    model_config = ConfigDict(extra="allow")

    account: str = Field(min_length=1)
    agent: str = Field(min_length=1)
    user: str | None = None  # None: the conversation is with the account itself
    conversation: str = Field(min_length=1)


class StepInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: Step
    job: SummaryJob
    results: dict[Step, Any] = Field(default_factory=dict)


StepResult = dict[str, Any]


def _results(step_input: StepInput) -> dict[str, Any]:
    return {str(step): result for step, result in step_input.results.items()}


def _flush(step_input: StepInput) -> StepResult:
    """Extract durable facts from the messages about to be folded (SPEC §4.5)."""
    return get_container().summary_pass.flush(step_input.job.model_dump())


def _summarise(step_input: StepInput) -> StepResult:
    """Write the new summary from the current checkpoint and the folded messages (SPEC §4.3)."""
    return get_container().summary_pass.summarise(step_input.job.model_dump(), _results(step_input))


def _write_checkpoint(step_input: StepInput) -> StepResult:
    """Store the summary as the conversation's checkpoint and move the folded mark (SPEC §4.4)."""
    return get_container().summary_pass.write_checkpoint(step_input.job.model_dump(), _results(step_input))


STEP_HANDLERS: Mapping[Step, Callable[[StepInput], StepResult]] = {
    "flush": _flush,
    "summarise": _summarise,
    "write_checkpoint": _write_checkpoint,
}


def parse(event: Mapping[str, Any]) -> StepInput:
    """The validated step input; InvalidStepInputError naming every problem otherwise."""
    try:
        parsed = StepInput.model_validate(event)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in issue['loc']) or 'event'}: {issue['msg']}" for issue in error.errors()
        )
        raise InvalidStepInputError(problems) from None
    before = STEPS[: STEPS.index(parsed.step)]
    if set(parsed.results) != set(before):
        expected, given = ", ".join(before) or "none", ", ".join(parsed.results) or "none"
        raise InvalidStepInputError(f"results: step {parsed.step} runs after the results of {expected}, not {given}")
    return parsed


def handle(event: Mapping[str, Any]) -> StepResult:
    """Run one step and return its result (kept under ``results.<step>`` by the state machine)."""
    try:
        step_input = parse(event)
    except InvalidStepInputError as error:
        logger.error("invalid summary step input", extra={"reason": str(error)})
        raise
    job = step_input.job
    log = {"step": step_input.step, "conversation": job.conversation, "agent": job.agent}
    try:
        result = STEP_HANDLERS[step_input.step](step_input)
    except Exception as error:
        logger.exception("summary step failed", extra={**log, "error_type": type(error).__name__})
        raise
    logger.info("summary step done", extra=log)
    return result


def run_pass(job: Mapping[str, Any]) -> dict[str, Any]:
    """Every step in order, passing results along as the state machine does; returns what an execution
    outputs (``{"job", "results"}``). What an in-process runner runs."""
    results: dict[str, Any] = {}
    for step in STEPS:
        results[step] = handle({"step": step, "job": dict(job), "results": dict(results)})
    return {"job": dict(job), "results": results}


_instrumented = entry_point(lambda event, context: handle(event))


def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result: dict[str, Any] = _instrumented(event, context)
    return result
