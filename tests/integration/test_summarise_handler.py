"""The summary state machine's task handler on its own: dispatch, validation, error reporting.

(Run by moto inside the real state machine in test_stepfunctions_jobs.py.)
"""

from __future__ import annotations

from typing import Any

import pytest
from moto_server import FakeLambdaContext

from functions.summarise import handler as summarise
from functions.summarise.handler import STEPS, InvalidStepInputError, handle, lambda_handler, run_pass

JOB = {"account": "acct_1", "agent": "support", "user": "ana", "conversation": "order-42", "from_seq": 41}


def test_each_step_returns_its_input_with_the_trail_of_steps_so_far() -> None:
    results: dict[str, Any] = {}
    for position, step in enumerate(STEPS):
        result = handle({"step": step, "job": JOB, "results": results})
        assert result == {"step": step, "job": JOB, "done": list(STEPS[: position + 1])}
        results[step] = result


def test_a_whole_pass_in_process_gives_what_an_execution_outputs() -> None:
    output = run_pass(JOB)
    assert output["job"] == JOB
    assert list(output["results"]) == list(STEPS)
    assert output["results"]["write_checkpoint"]["done"] == list(STEPS)


def test_the_job_may_be_with_the_account_itself() -> None:
    job = {"account": "acct_1", "agent": "support", "user": None, "conversation": "ops"}
    assert handle({"step": "flush", "job": job})["job"] == job


@pytest.mark.parametrize(
    ("event", "says"),
    [
        ({"step": "compact", "job": JOB, "results": {}}, "step"),
        ({"job": JOB}, "step: Field required"),
        ({"step": "flush", "job": {"account": "acct_1", "agent": "support"}}, "job.conversation"),
        ({"step": "flush", "job": {**JOB, "account": ""}}, "job.account"),
        ({"step": "flush", "job": "order-42"}, "job"),
        ({"step": "flush", "job": JOB, "extra": 1}, "extra"),
        ({"step": "summarise", "job": JOB, "results": {}}, "runs after the results of flush, not none"),
        ({"step": "flush", "job": JOB, "results": {"flush": {}}}, "runs after the results of none, not flush"),
        ({"step": "write_checkpoint", "job": JOB, "results": {"summarise": {}}}, "flush, summarise"),
        ({"step": "flush", "job": JOB, "results": {"later": {}}}, "results.later"),
        ([], "event"),
    ],
)
def test_input_that_is_not_a_step_input_is_refused_with_the_reason(event: Any, says: str) -> None:
    with pytest.raises(InvalidStepInputError) as raised:
        handle(event)
    assert says in str(raised.value)


def test_a_step_that_fails_raises_its_own_error_for_the_state_machine_to_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_: Any) -> Any:
        raise ConnectionError("bedrock is unreachable")

    monkeypatch.setitem(summarise.STEP_HANDLERS, "summarise", broken)  # type: ignore[arg-type]
    with pytest.raises(ConnectionError, match="bedrock"):
        handle({"step": "summarise", "job": JOB, "results": {"flush": {}}})


def test_the_lambda_entry_point_runs_a_step() -> None:
    result = lambda_handler({"step": "flush", "job": JOB, "results": {}}, FakeLambdaContext("agentmem-summarise"))
    assert result["done"] == ["flush"]
