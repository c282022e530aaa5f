"""The summary pass as a Step Functions state machine: flush → summarise → write checkpoint.

``summary_definition(task_function_arn)`` returns the Amazon States Language document. The CDK
deploys it (with the summarise function's ARN), and the test harness creates the very same state
machine on moto with an ARN of its own. Pure Python: no CDK import.

What the task handler (``functions/summarise/handler.lambda_handler``) receives, for each step::

    {"step": "flush" | "summarise" | "write_checkpoint",
     "job": <the execution input, as given to StartExecution>,
     "results": {"flush": <what the flush step returned>, ...}}   # the steps already done

Each step's return value is kept under ``results.<step>`` for the steps after it. A step that
fails is retried (Lambda service errors quickly, the step's own errors 3 times with backoff);
when the retries run out the execution ends in ``SummaryFailed``: conversations keep being served
and the next pass (the schedule, or the next append over threshold) starts from what is stored.
"""

from __future__ import annotations

from typing import Any

STEPS: tuple[str, ...] = ("flush", "summarise", "write_checkpoint")
STATE_NAMES: dict[str, str] = {"flush": "Flush", "summarise": "Summarise", "write_checkpoint": "WriteCheckpoint"}
PREPARE_STATE = "Prepare"
DONE_STATE = "Done"
FAILED_STATE = "SummaryFailed"

LAMBDA_SERVICE_ERRORS = [
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
]


def task_retries() -> list[dict[str, Any]]:
    return [
        {"ErrorEquals": LAMBDA_SERVICE_ERRORS, "IntervalSeconds": 2, "MaxAttempts": 6, "BackoffRate": 2.0},
        {"ErrorEquals": ["States.TaskFailed", "States.Timeout"], "IntervalSeconds": 5, "MaxAttempts": 3,
         "BackoffRate": 2.0},
    ]


def task_state(step: str, task_function_arn: str, next_state: str, timeout_seconds: int) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Comment": f"functions/summarise/handler.lambda_handler, step {step!r}",
        "Resource": task_function_arn,
        "Parameters": {"step": step, "job.$": "$.job", "results.$": "$.results"},
        "ResultPath": f"$.results.{step}",
        "TimeoutSeconds": timeout_seconds,
        "Retry": task_retries(),
        "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": FAILED_STATE}],
        "Next": next_state,
    }


def summary_definition(task_function_arn: str, *, task_timeout_seconds: int = 300) -> dict[str, Any]:
    """The ASL document of the summary pass, its three tasks calling ``task_function_arn``."""
    states: dict[str, Any] = {
        PREPARE_STATE: {
            "Type": "Pass",
            "Comment": "keep the execution input under $.job and start an empty $.results",
            "Parameters": {"job.$": "$", "results": {}},
            "Next": STATE_NAMES[STEPS[0]],
        },
    }
    for position, step in enumerate(STEPS):
        following = STATE_NAMES[STEPS[position + 1]] if position + 1 < len(STEPS) else DONE_STATE
        states[STATE_NAMES[step]] = task_state(step, task_function_arn, following, task_timeout_seconds)
    states[DONE_STATE] = {"Type": "Succeed"}
    states[FAILED_STATE] = {
        "Type": "Fail",
        "Error": "SummaryPassFailed",
        "Cause": "a step of the summary pass failed after its retries; the next pass catches up",
    }
    return {
        "Comment": "agentmem summary pass: flush sealed messages, summarise them, write the checkpoint",
        "StartAt": PREPARE_STATE,
        "TimeoutSeconds": task_timeout_seconds * len(STEPS) * 2,
        "States": states,
    }
