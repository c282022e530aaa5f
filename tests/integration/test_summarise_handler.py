"""The summary state machine's task handler on its own, step by step, doing real passes.

A real container (embedded backend, temporary data dir) is the one ``get_container()`` gives the handler.
Its jobs are a recorder: an append over the threshold records the payload the state machine would get
as its input, and the test then plays the state machine, calling the handler for each step with the
results of the steps before it. (Run by moto inside the real state machine in test_stepfunctions_jobs.py.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agentmem import bootstrap
from agentmem.bootstrap import Container, build_container, set_container
from agentmem.domain.agents import AgentRecord
from agentmem.domain.clock import iso
from agentmem.domain.conversations import ConversationRecord, ConversationRef, Message, MessageDraft, checkpoint_name
from agentmem.domain.errors import NotFoundError
from agentmem.domain.models import Entry, Layer, Principal
from agentmem.ports.jobs import JobRun, Jobs, run_name
from agentmem.services.agents import AgentSettings
from agentmem.settings import Settings
from moto_server import FakeLambdaContext
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

from functions.summarise.handler import STEPS, InvalidStepInputError, handle, lambda_handler, run_pass

JOB = {"account": "acct_1", "agent": "support", "user": "ana", "conversation": "order-42", "from_seq": 41}


# --- the world: a real container whose jobs only record -------------------------------------------------


@dataclass(frozen=True)
class Started:
    name: str
    payload: dict[str, Any]
    discriminator: str


@dataclass
class RecordingJobs(Jobs):
    """Jobs that record each start without running anything (the test runs the steps)."""

    started: list[Started] = field(default_factory=list)

    def start(self, name: str, payload: Mapping[str, Any], *, discriminator: str = "") -> str:
        self.started.append(Started(name, dict(payload), discriminator))
        return run_name(name, discriminator)

    def describe(self, run_id: str) -> JobRun:
        raise NotFoundError(f"no job run {run_id!r}: this recorder runs nothing")


@dataclass
class World:
    container: Container
    principal: Principal
    agent: AgentRecord
    jobs: RecordingJobs

    @property
    def account(self) -> str:
        return self.principal.account_id

    def ref(self, user: str | None = USER, key: str = CONVERSATION) -> ConversationRef:
        return ConversationRef(self.account, AGENT, user, key)

    def append(self, rows: Sequence[MessageDraft], *, user: str | None = USER, key: str = CONVERSATION) -> None:
        """The conversation as a client sends it: one turn or two per append."""
        for start in range(0, len(rows), 4):
            self.container.conversations.append(self.principal, AGENT, key, rows[start : start + 4], user=user)

    def record(self, user: str | None = USER, key: str = CONVERSATION) -> ConversationRecord:
        found = self.container.conversations.store.get(self.ref(user, key))
        assert found is not None
        return found

    def checkpoint(self, user: str | None = USER, key: str = CONVERSATION) -> tuple[Entry, ConversationRecord]:
        entry, record, _ = self.container.conversations.checkpoint(self.principal, AGENT, key, user=user)
        return entry, record

    def entry(self, name: str, user: str | None = USER) -> Entry | None:
        layer = Layer(self.account, self.agent.own_memory, user)
        return self.container.entries.store.get(layer, name, iso(self.container.entries.clock()))

    def journal(self, user: str | None = USER, key: str = CONVERSATION) -> list[Message]:
        rows, _ = self.container.conversations.messages(self.principal, AGENT, key, user=user, limit=1000)
        return rows

    def job(self, user: str | None = USER, key: str = CONVERSATION) -> dict[str, Any]:
        """The payload of the pass the appends started (the state machine's execution input)."""
        ref = self.ref(user, key)
        runs = [s for s in self.jobs.started if s.name == ref.job_name]
        assert runs, f"no pass was started for {ref.key}"
        return runs[-1].payload


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    previous = bootstrap._container
    container = build_container(Settings(backend="embedded", data_dir=tmp_path / "data", summariser="extractive"))
    jobs = RecordingJobs()
    container._jobs = jobs
    _, secret = container.keys.create_account("summaries")
    principal = container.keys.authenticate(f"Bearer {secret}")
    agent, _ = container.agents.put(principal, AGENT, AgentSettings(summary_messages=SUMMARY_MESSAGES))
    set_container(container)
    try:
        yield World(container, principal, agent, jobs)
    finally:
        set_container(previous)


def step(name: str, job: Mapping[str, Any], results: Mapping[str, Any]) -> dict[str, Any]:
    """One task of the state machine: the handler's input as the ASL builds it."""
    return handle({"step": name, "job": dict(job), "results": dict(results)})


# --- a real pass, step by step ----------------------------------------------------------------------------


def test_an_append_over_the_threshold_starts_the_pass_of_the_conversation(world: World) -> None:
    world.append(script())
    ref = world.ref()
    # Then each append past 24 un-folded messages asked for the same pass, named after the conversation
    # and the mark it folds from
    assert world.jobs.started
    assert {(s.name, s.discriminator) for s in world.jobs.started} == {(ref.job_name,
                                                                         world.record().pass_discriminator(0))}
    assert world.job() == {"account": world.account, "agent": AGENT, "user": USER, "conversation": CONVERSATION,
                           "surface": "agent", "reason": "threshold"}
    record = world.record()
    assert record.last_seq == 44 and record.unfolded_messages == 44 and record.due_since is not None


def test_each_step_does_its_part_of_the_pass(world: World) -> None:
    world.append(script())
    job = world.job()
    results: dict[str, Any] = {}

    # flush: the facts the user stated in the messages leaving the window, saved in the agent's own memory
    results["flush"] = step("flush", job, results)
    assert results["flush"]["skip"] is False
    assert sorted(results["flush"]["saved"]) == sorted(FACTS)
    assert (results["flush"]["start"], results["flush"]["end"]) == (0, FOLDED_THROUGH)
    for name, content in FACTS.items():
        saved = world.entry(name)  # the user's layer of the agent's own memory
        assert saved is not None, name
        assert saved.content == content
        assert (saved.memory, saved.user_id, saved.visibility) == (world.agent.own_memory, USER, "private")
        assert saved.updated_by == "system" and saved.conversation is None
        assert world.entry(name, user=None) is None  # not in the account's layer
    # nothing is folded yet
    with pytest.raises(NotFoundError):
        world.checkpoint()
    assert world.record().folded_through == 0

    # summarise: the summary of those messages, the remembered item word for word, the key left out
    results["summarise"] = step("summarise", job, results)
    made = results["summarise"]
    assert made["skip"] is False
    assert REMEMBERED in made["summary"]
    assert "French" in made["summary"]
    assert ACCESS_KEY not in made["summary"]
    assert "harbour of town 7" in made["summary"]  # seq 24, the last folded
    assert "town 8" not in made["summary"]  # seq 25 on: the window, not folded
    assert (made["start"], made["end"], made["messages"]) == (0, FOLDED_THROUGH, FOLDED_THROUGH)
    assert (made["base_version"], made["expected_folded_through"]) == (0, 0)
    assert made["tokens"] > 0
    with pytest.raises(NotFoundError):
        world.checkpoint()

    # write_checkpoint: the checkpoint entry, and the folded mark moved to what it covers
    results["write_checkpoint"] = step("write_checkpoint", job, results)
    written = results["write_checkpoint"]
    assert written["skip"] is False
    assert written["checkpoint"] == checkpoint_name(CONVERSATION)
    assert (written["version"], written["covers_through_seq"]) == (1, FOLDED_THROUGH)

    entry, record = world.checkpoint()
    assert entry.name == checkpoint_name(CONVERSATION)
    content = entry.content or ""
    assert content == made["summary"].strip()
    assert REMEMBERED in content and "French" in content and ACCESS_KEY not in content
    assert (entry.category, entry.conversation, entry.updated_by) == ("checkpoint", CONVERSATION, "system")
    assert (entry.memory, entry.user_id, entry.visibility, entry.version) == (
        world.agent.own_memory, USER, "private", 1)
    assert str(FOLDED_THROUGH) in entry.description
    assert record.folded_through == FOLDED_THROUGH  # covers_through_seq
    assert (record.unfolded_messages, record.due_since) == (44 - FOLDED_THROUGH, None)
    # And the journal still holds every message, whole (the key too: the journal is the transcript)
    journal = world.journal()
    assert [m.seq for m in journal] == list(range(1, 45))
    assert ACCESS_KEY in journal[4].content


def test_the_context_for_the_next_turn_holds_the_summary_and_the_window(world: World) -> None:
    world.append(script())
    run_pass(world.job())
    context = world.container.conversations.context(world.principal, AGENT, CONVERSATION, user=USER)
    assert context["summary"]["covers_through_seq"] == FOLDED_THROUGH
    assert REMEMBERED in context["summary"]["text"]
    assert [row["seq"] for row in context["window"]["messages"]] == list(range(FOLDED_THROUGH + 1, 45))
    assert ACCESS_KEY not in repr(context["messages"])


def test_a_whole_pass_in_process_gives_what_an_execution_outputs(world: World) -> None:
    world.append(script())
    job = world.job()
    output = run_pass(job)
    assert output["job"] == job
    assert list(output["results"]) == list(STEPS)
    assert sorted(output["results"]["flush"]["saved"]) == sorted(FACTS)
    assert REMEMBERED in output["results"]["summarise"]["summary"]
    assert output["results"]["write_checkpoint"]["covers_through_seq"] == FOLDED_THROUGH
    assert world.checkpoint()[1].folded_through == FOLDED_THROUGH


def test_the_job_may_be_with_the_account_itself(world: World) -> None:
    # Given the same conversation with the account itself (no user)
    world.append(script(), user=None, key="ops")
    job = world.job(user=None, key="ops")
    assert job["user"] is None
    output = run_pass(job)
    # Then the facts and the checkpoint are in the account's layer of the agent's memory, shared
    assert sorted(output["results"]["flush"]["saved"]) == sorted(FACTS)
    for name in FACTS:
        saved = world.entry(name, user=None)
        assert saved is not None and saved.visibility == "shared", name
    entry, record = world.checkpoint(user=None, key="ops")
    assert (entry.user_id, entry.visibility) == (None, "shared")
    assert REMEMBERED in (entry.content or "") and ACCESS_KEY not in (entry.content or "")
    assert record.folded_through == FOLDED_THROUGH


# --- nothing to fold ------------------------------------------------------------------------------------


def every_step(job: Mapping[str, Any]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in STEPS:
        results[name] = step(name, job, results)
    return results


def test_a_conversation_inside_its_window_has_nothing_to_fold(world: World) -> None:
    world.append(script()[:12])
    assert world.jobs.started == []  # under the threshold: no pass was started
    job = {"account": world.account, "agent": AGENT, "user": USER, "conversation": CONVERSATION,
           "surface": "agent", "reason": "compact"}
    results = every_step(job)
    assert results == {"flush": {"skip": True, "saved": []}, "summarise": {"skip": True},
                       "write_checkpoint": {"skip": True}}
    assert world.entry("remembered-door-code") is None
    with pytest.raises(NotFoundError):
        world.checkpoint()
    assert world.record().folded_through == 0


def test_a_pass_run_again_once_it_has_folded_is_skipped_at_every_step(world: World) -> None:
    world.append(script())
    job = world.job()
    every_step(job)
    before, record_before = world.checkpoint()
    # When the same job runs again (a late trigger, a redelivered execution)
    results = every_step(job)
    # Then every step skips, and nothing changed
    assert all(results[name]["skip"] is True for name in STEPS)
    after, record_after = world.checkpoint()
    assert (after.version, after.content) == (before.version, before.content)
    assert record_after == record_before


@pytest.mark.parametrize("change", [{"agent": "nobody"}, {"conversation": "never-started"}, {"user": "bob"}])
def test_a_job_for_a_conversation_or_agent_that_is_not_there_is_skipped(world: World, change: dict[str, str]) -> None:
    world.append(script())
    results = every_step({**world.job(), **change})
    assert all(results[name]["skip"] is True for name in STEPS)
    assert world.record().folded_through == 0


# --- input that is not a step's input ------------------------------------------------------------------


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
def test_input_that_is_not_a_step_input_is_refused_with_the_reason(world: World, event: Any, says: str) -> None:
    with pytest.raises(InvalidStepInputError) as raised:
        handle(event)
    assert says in str(raised.value)


# --- a step that fails -------------------------------------------------------------------------------------


class UnreachableSummariser:
    def summarise(self, previous: str | None, messages: Sequence[Message]) -> str:
        raise ConnectionError("bedrock is unreachable")


def test_a_step_that_fails_raises_its_own_error_for_the_state_machine_to_retry(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.append(script())
    job = world.job()
    results = {"flush": step("flush", job, {})}
    # When the summariser fails
    with monkeypatch.context() as patched:
        patched.setattr(world.container, "summariser", UnreachableSummariser)
        with pytest.raises(ConnectionError, match="bedrock"):
            step("summarise", job, results)
    # Then nothing was folded: no checkpoint, every message there, the conversation still due
    with pytest.raises(NotFoundError):
        world.checkpoint()
    record = world.record()
    assert (record.folded_through, record.last_seq, record.unfolded_messages) == (0, 44, 44)
    assert record.due_since is not None
    assert len(world.journal()) == 44
    # And the retry of the step (the state machine's Retry, same input) does the pass
    results["summarise"] = step("summarise", job, results)
    results["write_checkpoint"] = step("write_checkpoint", job, results)
    entry, record = world.checkpoint()
    assert REMEMBERED in (entry.content or "")
    assert record.folded_through == FOLDED_THROUGH


@pytest.mark.parametrize("first_answer", ["throttled", "unavailable", "malformed"])
def test_a_bedrock_answer_that_fails_the_step_folds_nothing_and_the_retry_does_the_pass(
    world: World, monkeypatch: pytest.MonkeyPatch, first_answer: str
) -> None:
    # Given the Bedrock summariser (its client stubbed on the real bedrock-runtime model) as the container's
    import boto3
    from agentmem.adapters.aws.bedrock import BedrockSummariser, MalformedSummaryError
    from agentmem.domain.summary import TITLE
    from botocore.exceptions import ClientError
    from botocore.stub import Stubber

    client = boto3.session.Session(region_name="us-east-1", aws_access_key_id="testing",
                                   aws_secret_access_key="testing").client("bedrock-runtime")
    summariser = BedrockSummariser("amazon.nova-micro-v1:0", bedrock_client=client)
    monkeypatch.setattr(world.container, "summariser", lambda: summariser)
    world.append(script())
    job = world.job()
    results = {"flush": step("flush", job, {})}

    def reply(text: str) -> dict[str, Any]:
        return {"output": {"message": {"role": "assistant", "content": [{"text": text}]}}, "stopReason": "end_turn",
                "usage": {"inputTokens": 900, "outputTokens": 120, "totalTokens": 1020}, "metrics": {"latencyMs": 800}}

    with Stubber(client) as bedrock:
        # When Bedrock first throttles past the client's retries, or answers with something that is not a summary
        if first_answer == "throttled":
            bedrock.add_client_error("converse", service_error_code="ThrottlingException",
                                     service_message="Too many requests", http_status_code=429)
        elif first_answer == "unavailable":  # a 5xx: Bedrock failing for a moment
            bedrock.add_client_error("converse", service_error_code="ServiceUnavailableException",
                                     service_message="Service unavailable", http_status_code=503)
        else:
            bedrock.add_response("converse", reply("I can't summarise this conversation."))
        with pytest.raises(MalformedSummaryError if first_answer == "malformed" else ClientError):
            step("summarise", job, results)
        # Then the step failed cleanly: no checkpoint, nothing folded, every message still there
        with pytest.raises(NotFoundError):
            world.checkpoint()
        assert world.record().folded_through == 0 and len(world.journal()) == 44
        # And the state machine's retry of the step, answered with a summary, does the pass
        bedrock.add_response("converse", reply(f"{TITLE}\n\n## Facts\n- plan: Team, billed yearly.\n"))
        results["summarise"] = step("summarise", job, results)
        results["write_checkpoint"] = step("write_checkpoint", job, results)
        bedrock.assert_no_pending_responses()
    entry, record = world.checkpoint()
    assert "- plan: Team, billed yearly." in (entry.content or "")
    assert REMEMBERED in (entry.content or "")  # put back word for word, whatever the model wrote
    assert record.folded_through == FOLDED_THROUGH


def test_the_lambda_entry_point_runs_a_step(world: World) -> None:
    world.append(script())
    result = lambda_handler({"step": "flush", "job": world.job(), "results": {}},
                            FakeLambdaContext("agentmem-summarise"))
    assert result["skip"] is False
    assert sorted(result["saved"]) == sorted(FACTS)
