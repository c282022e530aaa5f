"""The in-process job runner (the embedded backend's Step Functions) and the run names both backends use."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from agentmem.adapters.embedded.jobs import ThreadJobRunner
from agentmem.domain.errors import NotFoundError
from agentmem.ports.jobs import MAX_RUN_NAME, run_name
from hypothesis import given
from hypothesis import strategies as st

SFN_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


class Work:
    """A pass that records its calls, can be held at a gate, and fails its first ``failures`` calls."""

    def __init__(self, failures: int = 0) -> None:
        self.calls: list[Mapping[str, Any]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.failures = failures
        self._lock = threading.Lock()

    def __call__(self, payload: Mapping[str, Any]) -> Mapping[str, Any]:
        with self._lock:
            self.calls.append(payload)
            failing = len(self.calls) <= self.failures
        self.entered.set()
        assert self.gate.wait(10)
        if failing:
            raise RuntimeError("the summariser is down")
        return {"done": True, **payload}


@pytest.fixture
def runs() -> Iterator[list[ThreadJobRunner]]:
    made: list[ThreadJobRunner] = []
    yield made
    for runner in made:
        runner.close()


def runner_for(runs: list[ThreadJobRunner], work: Work, **options: Any) -> ThreadJobRunner:
    runner = ThreadJobRunner(work, sleep=lambda _: None, **options)
    runs.append(runner)
    return runner


def test_a_started_run_succeeds_with_the_work_output(runs: list[ThreadJobRunner]) -> None:
    work = Work()
    jobs = runner_for(runs, work)
    run_id = jobs.start("summary/c1", {"conversation": "c1"}, discriminator="41")
    finished = jobs.wait(run_id, timeout=5)
    assert finished.state == "succeeded"
    assert finished.output == {"done": True, "conversation": "c1"}
    assert jobs.describe(run_id) == finished


def test_starting_a_name_that_is_running_is_a_no_op_returning_the_running_id(runs: list[ThreadJobRunner]) -> None:
    # Given a pass of conversation c1 held mid-run
    work = Work()
    work.gate.clear()
    jobs = runner_for(runs, work)
    first = jobs.start("summary/c1", {"n": 1}, discriminator="41")
    assert work.entered.wait(5)
    # When the same pass is triggered again, and a later one (another discriminator) too
    again = jobs.start("summary/c1", {"n": 2}, discriminator="41")
    later = jobs.start("summary/c1", {"n": 3}, discriminator="57")
    # Then both answers are the running run, and nothing else started
    assert again == first and later == first
    assert jobs.describe(first).state == "running"
    work.gate.set()
    assert jobs.wait(first, timeout=5).state == "succeeded"
    assert [call["n"] for call in work.calls] == [1]


def test_another_name_runs_beside_it(runs: list[ThreadJobRunner]) -> None:
    work = Work()
    work.gate.clear()
    jobs = runner_for(runs, work, max_workers=2)
    one = jobs.start("summary/c1", {"n": 1})
    two = jobs.start("summary/c2", {"n": 2})
    assert one != two
    work.gate.set()
    assert jobs.wait(one, timeout=5).state == jobs.wait(two, timeout=5).state == "succeeded"


def test_a_finished_run_is_not_run_again_but_the_next_discriminator_is(runs: list[ThreadJobRunner]) -> None:
    work = Work()
    jobs = runner_for(runs, work)
    first = jobs.start("summary/c1", {"n": 1}, discriminator="41")
    jobs.wait(first, timeout=5)
    # The same run again (a late trigger of a pass that already ran) is the old run, as on Step Functions
    assert jobs.start("summary/c1", {"n": 2}, discriminator="41") == first
    # The next pass (the window moved on) is a new run
    second = jobs.start("summary/c1", {"n": 3}, discriminator="57")
    assert second != first
    jobs.wait(second, timeout=5)
    assert [call["n"] for call in work.calls] == [1, 3]


def test_a_failing_run_is_tried_three_times_then_fails_with_the_error(runs: list[ThreadJobRunner]) -> None:
    work = Work(failures=10)
    pauses: list[float] = []
    jobs = ThreadJobRunner(work, sleep=pauses.append, backoff_s=1.0, backoff_rate=2.0)
    runs.append(jobs)
    run = jobs.wait(jobs.start("summary/c1", {}), timeout=5)
    assert run.state == "failed"
    assert run.error == "RuntimeError: the summariser is down"
    assert len(work.calls) == 3
    assert pauses == [1.0, 2.0]
    # And the name is free again: the next pass may start
    assert jobs.describe(jobs.start("summary/c1", {}, discriminator="next")).name != run.name


def test_a_run_that_fails_then_recovers_succeeds(runs: list[ThreadJobRunner]) -> None:
    work = Work(failures=2)
    jobs = runner_for(runs, work)
    run = jobs.wait(jobs.start("summary/c1", {"n": 1}), timeout=5)
    assert run.state == "succeeded"
    assert len(work.calls) == 3


def test_the_payload_is_json_and_is_copied(runs: list[ThreadJobRunner]) -> None:
    work = Work()
    jobs = runner_for(runs, work)
    payload: dict[str, Any] = {"seq": [1, 2]}
    jobs.wait(jobs.start("summary/c1", payload), timeout=5)
    payload["seq"].append(3)
    assert work.calls == [{"seq": [1, 2]}]
    with pytest.raises(TypeError):
        jobs.start("summary/c2", {"not json": object()})


def test_a_closed_runner_refuses_new_runs_and_keeps_nothing_half_started() -> None:
    jobs = ThreadJobRunner(Work(), sleep=lambda _: None)
    jobs.close()
    with pytest.raises(RuntimeError):
        jobs.start("summary/c1", {})
    with pytest.raises(NotFoundError):
        jobs.describe(run_name("summary/c1"))


def test_an_unknown_run_is_not_found(runs: list[ThreadJobRunner]) -> None:
    jobs = runner_for(runs, Work())
    with pytest.raises(NotFoundError):
        jobs.describe("never-started")


def test_run_names_are_readable_and_deterministic() -> None:
    name = run_name("summary/acct_1/support/ana/order-42", "120")
    assert name == run_name("summary/acct_1/support/ana/order-42", "120")
    assert name.startswith("summary-acct_1-support-ana-order-42--120-")
    assert SFN_NAME.match(name)


@given(st.text(max_size=300), st.text(max_size=100), st.text(max_size=300), st.text(max_size=100))
def test_run_names_are_valid_execution_names_and_tell_runs_apart(a: str, da: str, b: str, db: str) -> None:
    first, second = run_name(a, da), run_name(b, db)
    assert SFN_NAME.match(first) and len(first) <= MAX_RUN_NAME
    assert (first == second) == ((a, da) == (b, db))
