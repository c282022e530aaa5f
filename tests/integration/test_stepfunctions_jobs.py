"""Summary passes as named Step Functions executions, run by moto with our real task handler, doing real passes.

The state machine is the one the CDK deploys (``infra/constructs/summary_state_machine.py``); moto
executes it, and each Lambda task reaches ``functions/summarise/handler.lambda_handler`` in this
process through the harness's bridge (tests/support/moto_server.py). The handler's ``get_container()``
is the test's container (embedded backend on a temporary data dir), whose jobs are the Step Functions
adapter against moto: an append over the threshold starts the execution, as on AWS.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agentmem import bootstrap
from agentmem.adapters.aws.stepfunctions import StepFunctionsJobs, execution_arn
from agentmem.bootstrap import Container, build_container, set_container
from agentmem.domain.agents import AgentRecord
from agentmem.domain.clock import iso
from agentmem.domain.conversations import ConversationRecord, ConversationRef, Message, MessageDraft, checkpoint_name
from agentmem.domain.errors import NotFoundError
from agentmem.domain.models import Entry, Layer, Principal
from agentmem.ports.jobs import JobRun, run_name
from agentmem.services.agents import AgentSettings
from agentmem.settings import Settings
from moto_server import ACCOUNT, MotoServer
from summary_script import (
    ACCESS_KEY,
    AGENT,
    CONVERSATION,
    FACTS,
    FOLDED_THROUGH,
    REMEMBERED,
    SUMMARY_MESSAGES,
    USER,
    script,
)

from functions.summarise.handler import STEPS, lambda_handler
from infra.constructs.summary_state_machine import summary_definition

RETRIES = 3  # the ASL's MaxAttempts for a step's own errors (States.TaskFailed)

LambdaHandler = Callable[[Any, Any], Any]
Definition = dict[str, Any]


# --- the world: a real container, the handler's -----------------------------------------------------------


@dataclass
class World:
    container: Container
    principal: Principal
    agent: AgentRecord

    @property
    def account(self) -> str:
        return self.principal.account_id

    @property
    def ref(self) -> ConversationRef:
        return ConversationRef(self.account, AGENT, USER, CONVERSATION)

    def append(self, rows: Sequence[MessageDraft]) -> None:
        """One append (at most 40 messages): the service starts the pass if it crosses the threshold."""
        self.container.conversations.append(self.principal, AGENT, CONVERSATION, list(rows), user=USER)

    def record(self) -> ConversationRecord:
        found = self.container.conversations.store.get(self.ref)
        assert found is not None
        return found

    def checkpoint(self) -> tuple[Entry, ConversationRecord]:
        entry, record, _ = self.container.conversations.checkpoint(self.principal, AGENT, CONVERSATION, user=USER)
        return entry, record

    def entry(self, name: str, user: str | None = USER) -> Entry | None:
        layer = Layer(self.account, self.agent.own_memory, user)
        return self.container.entries.store.get(layer, name, iso(self.container.entries.clock()))

    def journal(self) -> list[Message]:
        rows, _ = self.container.conversations.messages(self.principal, AGENT, CONVERSATION, user=USER, limit=1000)
        return rows

    def payload(self) -> dict[str, Any]:
        """The execution input the service gives a pass started by an append."""
        return {"account": self.account, "agent": AGENT, "user": USER, "conversation": CONVERSATION,
                "surface": "agent", "reason": "threshold"}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """A real container made the process's (what the handler's get_container() returns), then put back."""
    previous = bootstrap._container
    container = build_container(Settings(backend="embedded", data_dir=tmp_path / "data", summariser="extractive"))
    _, secret = container.keys.create_account("summaries")
    principal = container.keys.authenticate(f"Bearer {secret}")
    agent, _ = container.agents.put(principal, AGENT, AgentSettings(summary_messages=SUMMARY_MESSAGES))
    set_container(container)
    try:
        yield World(container, principal, agent)
    finally:
        set_container(previous)


# --- the state machine on moto -------------------------------------------------------------------------------


def no_retry_of_invalid_input(definition: Definition) -> Definition:
    """The change asked of the ASL: a step's InvalidStepInputError is not retried (retrying cannot fix
    the input). A no-op once the definition has it."""
    changed = copy.deepcopy(definition)
    for state in changed["States"].values():
        retry = state.get("Retry")
        if retry is not None and not any("InvalidStepInputError" in r["ErrorEquals"] for r in retry):
            retry.insert(0, {"ErrorEquals": ["InvalidStepInputError"], "MaxAttempts": 0})
    return changed


def quick_retries(definition: Definition) -> Definition:
    """The deployed retries (same errors, same MaxAttempts), 1 s apart rather than 5, 10 and 20 s, so that
    running out of them does not take 35 s of the test."""
    changed = copy.deepcopy(definition)
    for state in changed["States"].values():
        for retry in state.get("Retry", []):
            retry["IntervalSeconds"], retry["BackoffRate"] = 1, 1.0
    return changed


@contextmanager
def summary_machine(
    moto: MotoServer, sfn: Any, handler: LambdaHandler, *, change: Callable[[Definition], Definition] | None = None,
    world: World | None = None,
) -> Iterator[tuple[StepFunctionsJobs, str]]:
    """The summary state machine on moto, its tasks answered by ``handler``; yields (jobs, function name).
    With ``world``, the jobs are its container's: passes the service starts are executions of this machine."""
    function = f"agentmem-summarise-{uuid.uuid4().hex[:8]}"
    with moto.lambda_function(function, handler) as function_arn:
        definition = summary_definition(function_arn)
        if change is not None:
            definition = change(definition)
        machine = sfn.create_state_machine(
            name=f"summary-{uuid.uuid4().hex[:8]}", definition=json.dumps(definition),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/agentmem-summary",
        )["stateMachineArn"]
        jobs = StepFunctionsJobs(machine, boto3_client=sfn)
        if world is not None:
            world.container._jobs = jobs
        yield jobs, function


def finished(jobs: StepFunctionsJobs, run_id: str, timeout: float = 30) -> JobRun:
    deadline = time.monotonic() + timeout
    while True:
        run = jobs.describe(run_id)
        if run.state != "running" or time.monotonic() > deadline:
            return run
        time.sleep(0.05)


def steps_called(moto: MotoServer, function: str) -> list[tuple[str, str | None]]:
    return [(i.event.get("step"), i.error) for i in moto.bridge.invocations if i.function == function]


def executions(sfn: Any, jobs: StepFunctionsJobs) -> list[str]:
    return [e["executionArn"] for e in sfn.list_executions(stateMachineArn=jobs.state_machine_arn)["executions"]]


def the_pass(world: World, jobs: StepFunctionsJobs) -> str:
    """The execution ARN of the conversation's first pass (it folds from seq 0)."""
    return execution_arn(jobs.state_machine_arn, run_name(world.ref.job_name, world.record().pass_discriminator(0)))


def start_by_appending(world: World) -> None:
    """A client's appends: 4 messages (under the threshold), then 40 more (over it: the pass starts)."""
    rows = script()
    world.append(rows[:4])
    world.append(rows[4:])


class UnreachableSummariser:
    def summarise(self, previous: str | None, messages: Sequence[Message]) -> str:
        raise ConnectionError("bedrock is unreachable")


# --- the tests -------------------------------------------------------------------------------------------------


def test_an_append_over_the_threshold_runs_the_pass_on_the_state_machine(
    moto: MotoServer, sfn: Any, world: World
) -> None:
    with summary_machine(moto, sfn, lambda_handler, world=world) as (jobs, function):
        # Given a conversation under its threshold: no pass
        rows = script()
        world.append(rows[:4])
        assert executions(sfn, jobs) == []
        # When an append takes it over the threshold
        world.append(rows[4:])
        # Then it started one named execution of the state machine, and it succeeded
        assert executions(sfn, jobs) == [the_pass(world, jobs)]
        run = finished(jobs, the_pass(world, jobs))
    assert run.state == "succeeded", run.error
    assert run.name == run_name(world.ref.job_name, world.record().pass_discriminator(0))
    # And each step ran once, in order, in our handler
    assert steps_called(moto, function) == [(step, None) for step in STEPS]
    assert run.output is not None
    assert run.output["job"] == world.payload()
    results = run.output["results"]
    assert list(results) == list(STEPS)
    assert sorted(results["flush"]["saved"]) == sorted(FACTS)
    assert results["write_checkpoint"]["covers_through_seq"] == FOLDED_THROUGH
    # And the pass did its work: the facts in the agent's own memory, the user's layer ...
    for name, content in FACTS.items():
        saved = world.entry(name)
        assert saved is not None and saved.content == content, name
        assert world.entry(name, user=None) is None
    # ... the checkpoint, with the remembered item word for word and without the key ...
    entry, record = world.checkpoint()
    assert entry.name == checkpoint_name(CONVERSATION)
    content = entry.content or ""
    assert content == results["summarise"]["summary"].strip()
    assert REMEMBERED in content and "French" in content
    assert ACCESS_KEY not in content
    assert "harbour of town 7" in content and "town 8" not in content  # seq 24 folded, 25 not
    assert (entry.conversation, entry.category, entry.user_id, entry.version) == (CONVERSATION, "checkpoint", USER, 1)
    # ... covering the messages that left the window, and the conversation no longer due
    assert record.folded_through == FOLDED_THROUGH
    assert (record.last_seq, record.unfolded_messages, record.due_since) == (44, 44 - FOLDED_THROUGH, None)
    assert [m.seq for m in world.journal()] == list(range(1, 45))


def test_starting_the_same_pass_twice_is_one_execution(moto: MotoServer, sfn: Any, world: World) -> None:
    # Given a pass held inside its first step
    entered, release = threading.Event(), threading.Event()

    def held(event: Any, context: Any) -> Any:
        if event.get("step") == "flush":
            entered.set()
            assert release.wait(20)
        return lambda_handler(event, context)

    with summary_machine(moto, sfn, held, world=world) as (jobs, function):
        start_by_appending(world)
        first = the_pass(world, jobs)
        assert entered.wait(20)
        # When it is started again while it runs: by another append over the threshold (same input), by
        # the service again, and through the adapter with another input (ExecutionAlreadyExists)
        world.append([MessageDraft("user", "Are you still there?"), MessageDraft("assistant", "Oui.")])
        assert world.container.conversations.start_pass(world.record(), reason="threshold") == first
        later = {**world.payload(), "note": "a later trigger"}
        assert jobs.start(world.ref.job_name, later, discriminator=world.record().pass_discriminator(0)) == first
        # Then it is the running execution, and the only one
        assert executions(sfn, jobs) == [first]
        assert jobs.describe(first).state == "running"
        release.set()
        run = finished(jobs, first)
        assert run.state == "succeeded", run.error
        # And once it has finished, a late trigger of the same pass starts nothing
        again = world.record().pass_discriminator(0)
        assert jobs.start(world.ref.job_name, world.payload(), discriminator=again) == first
        assert executions(sfn, jobs) == [first]
    assert steps_called(moto, function) == [(step, None) for step in STEPS]
    # The pass read the journal as it stood when it ran: 46 messages, the window seq 27-46
    entry, record = world.checkpoint()
    assert record.folded_through == 26 and record.due_since is None
    assert REMEMBERED in (entry.content or "") and ACCESS_KEY not in (entry.content or "")


def test_a_step_that_fails_once_is_retried_by_the_state_machine(
    moto: MotoServer, sfn: Any, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a summariser that fails its first call
    real = world.container.summariser
    calls: list[int] = []

    def flaky() -> Any:
        calls.append(1)
        return UnreachableSummariser() if len(calls) == 1 else real()

    monkeypatch.setattr(world.container, "summariser", flaky)
    with summary_machine(moto, sfn, lambda_handler, change=quick_retries, world=world) as (jobs, function):
        start_by_appending(world)
        run = finished(jobs, the_pass(world, jobs))
    # Then the state machine retried the step, and the pass went through
    assert run.state == "succeeded", run.error
    assert steps_called(moto, function) == [
        ("flush", None), ("summarise", "ConnectionError"), ("summarise", None), ("write_checkpoint", None),
    ]
    entry, record = world.checkpoint()
    assert REMEMBERED in (entry.content or "")
    assert record.folded_through == FOLDED_THROUGH


def test_a_step_that_keeps_failing_is_retried_then_caught_and_nothing_is_lost(
    moto: MotoServer, sfn: Any, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a summariser that always fails
    monkeypatch.setattr(world.container, "summariser", UnreachableSummariser)
    with summary_machine(moto, sfn, lambda_handler, change=quick_retries, world=world) as (jobs, function):
        start_by_appending(world)
        run = finished(jobs, the_pass(world, jobs))
    # Then the step was tried once and retried 3 times, and the execution failed through the Catch
    assert steps_called(moto, function) == [("flush", None)] + [("summarise", "ConnectionError")] * (1 + RETRIES)
    assert run.state == "failed"
    assert run.error is not None and run.error.startswith("SummaryPassFailed")
    # And no message is lost: nothing folded, no checkpoint, the journal whole, the conversation still due
    with pytest.raises(NotFoundError):
        world.checkpoint()
    record = world.record()
    assert (record.last_seq, record.folded_through, record.unfolded_messages) == (44, 0, 44)
    assert record.due_since is not None
    journal = world.journal()
    assert [m.seq for m in journal] == list(range(1, 45))
    assert [m.content for m in journal] == [r.content for r in script()]


def test_an_invalid_job_fails_the_pass_at_once(moto: MotoServer, sfn: Any, world: World) -> None:
    # Given the state machine (with invalid input not retried) and a job without its conversation
    with summary_machine(moto, sfn, lambda_handler, change=no_retry_of_invalid_input) as (jobs, function):
        job = {"account": world.account, "agent": AGENT}
        run = finished(jobs, jobs.start("summary/invalid", job, discriminator="bad"))
    # Then the handler refused it with its own error, once, and the execution failed through the Catch
    assert steps_called(moto, function) == [("flush", "InvalidStepInputError")]
    assert run.state == "failed"
    assert run.error is not None and run.error.startswith("SummaryPassFailed")


def test_describing_an_execution_that_does_not_exist_is_not_found(moto: MotoServer, sfn: Any) -> None:
    with summary_machine(moto, sfn, lambda_handler) as (jobs, _), pytest.raises(NotFoundError):
        jobs.describe(execution_arn(jobs.state_machine_arn, "never-started"))
    with pytest.raises(ValueError):
        StepFunctionsJobs("arn:aws:lambda:us-east-1:123456789012:function:not-a-machine", boto3_client=sfn)
