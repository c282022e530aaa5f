"""The in-process job runner (the embedded backend's Step Functions) and the run names both backends use."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from agentmem.adapters.embedded.job_runs import INTERRUPTED, SharedRuns
from agentmem.adapters.embedded.jobs import ThreadJobRunner
from agentmem.adapters.embedded.server_state import ServerState
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


# --- the workers of one server: runs claimed in the file they share (job_runs.py) -------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_pass_running_in_one_worker_is_the_answer_to_a_start_in_another(
    runs: list[ThreadJobRunner], tmp_path: Path
) -> None:
    # Given two workers' runners on one shared file, and a pass of c1 held mid-run in the first
    work_a, work_b = Work(), Work()
    work_a.gate.clear()
    first = runner_for(runs, work_a, shared=SharedRuns(ServerState(tmp_path)))
    second = runner_for(runs, work_b, shared=SharedRuns(ServerState(tmp_path)))
    running = first.start("summary/c1", {"n": 1}, discriminator="41")
    assert work_a.entered.wait(5)
    # When the second worker is asked for the same pass, and for a later one of the same conversation
    assert second.start("summary/c1", {"n": 2}, discriminator="41") == running
    assert second.start("summary/c1", {"n": 3}, discriminator="57") == running
    # Then it runs nothing, and says where the first's run stands, to its end
    assert second.describe(running).state == "running"
    work_a.gate.set()
    finished = second.wait(running, timeout=5)
    assert finished.state == "succeeded" and finished.output == {"done": True, "n": 1}
    assert work_b.calls == [] and [call["n"] for call in work_a.calls] == [1]
    # And a run that has run is not run again by either; another conversation's runs where it is started
    assert second.start("summary/c1", {"n": 4}, discriminator="41") == running
    other = second.start("summary/c2", {"n": 5})
    assert second.wait(other, timeout=5).state == "succeeded" and [c["n"] for c in work_b.calls] == [5]
    assert first.describe(other).state == "succeeded"


def test_a_run_whose_worker_died_is_interrupted_once_its_lease_runs_out(
    runs: list[ThreadJobRunner], tmp_path: Path
) -> None:
    # Given a run claimed by a worker that then died (it never renews its lease)
    clock = Clock()
    dead = SharedRuns(ServerState(tmp_path), lease_s=30, clock=clock)
    claimed, mine = dead.claim("summary/c1", "c1-run-41")
    assert mine
    work = Work()
    alive = runner_for(runs, work, shared=SharedRuns(ServerState(tmp_path), lease_s=30, clock=clock))
    # While its lease holds, another worker's start answers it and runs nothing
    assert alive.start("summary/c1", {"n": 1}, discriminator="57") == claimed
    assert work.calls == []
    # When the lease has run out, Then a start runs the pass, and the dead one's run is failed (interrupted)
    clock.now += 31
    again = alive.start("summary/c1", {"n": 2}, discriminator="57")
    assert again != claimed
    assert alive.wait(again, timeout=5).state == "succeeded" and [c["n"] for c in work.calls] == [2]
    lost = alive.describe(claimed)
    assert lost.state == "failed" and lost.error == INTERRUPTED


def test_a_worker_renews_the_lease_of_its_run_while_it_goes_on(runs: list[ThreadJobRunner], tmp_path: Path) -> None:
    # Given a run held mid-run under a short lease
    work = Work()
    work.gate.clear()
    jobs = runner_for(runs, work, shared=SharedRuns(ServerState(tmp_path), lease_s=0.3))
    running = jobs.start("summary/c1", {"n": 1})
    assert work.entered.wait(5)
    # When several leases' worth of time passes, Then another worker still finds it running, and starts nothing
    threading.Event().wait(1.0)
    other = runner_for(runs, Work(), shared=SharedRuns(ServerState(tmp_path), lease_s=0.3))
    assert other.start("summary/c1", {"n": 2}) == running
    work.gate.set()
    assert jobs.wait(running, timeout=5).state == "succeeded"
