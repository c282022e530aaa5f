"""Background work gives way to the requests a process is handling (agentmem/foreground.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest
from agentmem import foreground
from agentmem.adapters.embedded.jobs import ThreadJobRunner
from agentmem.foreground import FOREGROUND, Foreground, GivingWay, give_way, in_background


def test_outside_background_work_give_way_returns_at_once_while_a_request_is_handled() -> None:
    with FOREGROUND.serving():
        begun = time.monotonic()
        give_way(limit_s=5.0)
        assert time.monotonic() - begun < 1.0


def held_request(release: threading.Event, said: list[str]) -> tuple[threading.Thread, threading.Event]:
    """A request handled in a thread of its own until ``release`` is set, which says so in ``said`` as it ends:
    the thread (not started yet) and an event set once the request is being handled."""
    served = threading.Event()

    def request() -> None:
        with FOREGROUND.serving():
            served.set()
            release.wait(5)
            said.append("request ended")

    return threading.Thread(target=request), served


def test_background_work_waits_until_the_request_ends() -> None:
    order: list[str] = []
    release = threading.Event()
    thread, served = held_request(release, order)
    thread.start()
    assert served.wait(5)
    threading.Timer(0.3, release.set).start()
    with in_background() as work:
        give_way(limit_s=5.0)
        order.append("background went on")
    thread.join()
    assert order == ["request ended", "background went on"]
    assert work.gave_way == 1 and work.waited_s > 0.1


def test_background_work_waits_no_longer_than_its_limit() -> None:
    with FOREGROUND.serving(), in_background() as work:
        begun = time.monotonic()
        give_way(limit_s=0.2)
        waited = time.monotonic() - begun
    assert 0.15 < waited < 2.0
    assert work.gave_way == 1


def test_under_requests_that_never_stop_background_work_runs_a_share_of_the_time(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    now = iter([10.0, 11.0, 11.1, 11.2, 11.5, 12.5])  # the clock, as give_way reads it
    monkeypatch.setattr(foreground, "_clock", lambda: next(now))
    monkeypatch.setattr(foreground, "GIVE_WAY_S", 0.01)
    with FOREGROUND.serving(), in_background() as work:
        give_way()  # at 10.0 it waits, until 11.0: a second
        assert work.gave_way == 1
        give_way()  # at 11.1 it is within a quarter of that second (20 % of the time): it goes on
        give_way()  # and at 11.2
        assert work.gave_way == 1
        give_way()  # at 11.5, past it, it waits again
    assert work.gave_way == 2 and work.waited_s == pytest.approx(2.0)


def test_a_process_serving_nothing_lets_background_work_run() -> None:
    with in_background() as work:
        give_way(limit_s=5.0)
    assert work.gave_way == 0 and work.waited_s == 0.0


def test_requests_overlapping_keep_the_process_busy_until_the_last_ends() -> None:
    foreground = Foreground()
    with foreground.serving():
        with foreground.serving():
            assert foreground.busy()
        assert foreground.busy()
    assert not foreground.busy()
    assert foreground.wait_idle(0)


def test_a_failing_request_is_no_longer_counted() -> None:
    foreground = Foreground()
    try:
        with foreground.serving():
            raise RuntimeError("the handler failed")
    except RuntimeError:
        pass
    assert not foreground.busy()


def test_giving_way_is_the_sequence_it_wraps_and_gives_way_before_each_item(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(foreground, "GIVE_WAY_S", 30.0)
    items = GivingWay(["a", "b", "c"])
    assert len(items) == 3 and items[1] == "b" and list(items[1:]) == ["b", "c"]
    release = threading.Event()
    seen: list[str] = []
    thread, served = held_request(release, [])
    with in_background() as work:
        iterator = iter(items)
        seen.append(next(iterator))  # nothing is handled: no wait
        thread.start()
        assert served.wait(5)
        threading.Timer(0.2, release.set).start()
        seen.append(next(iterator))  # waits for the request to end
        seen += list(iterator)
    thread.join()
    assert seen == ["a", "b", "c"]
    assert work.gave_way == 1 and work.waited_s > 0.1


def test_a_job_gives_way_to_the_requests_being_handled_and_then_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(foreground, "GIVE_WAY_S", 30.0)  # (however slow the machine, it waits for the request)
    order: list[str] = []

    def work(payload: Mapping[str, Any]) -> Mapping[str, Any]:
        for step in GivingWay(["fold", "write"]):
            order.append(step)
        return {"steps": 2}

    runner = ThreadJobRunner(work, sleep=lambda _: None)
    try:
        with FOREGROUND.serving():
            run = runner.start("pass", {"conversation": "c1"})
            time.sleep(0.3)
            assert order == []  # the request is still being handled: the job waits
            order.append("request ended")
        finished = runner.wait(run, timeout=10)
    finally:
        runner.close()
    assert finished.state == "succeeded"
    assert order == ["request ended", "fold", "write"]
