"""The local server's token buckets (local/rate_limit.py), on a clock the test moves: in the process, and in the
file the workers of one server share (every limit the same, whichever worker a request reaches)."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agentmem.adapters.embedded.server_state import ServerState
from agentmem.domain.errors import RateLimitedError
from agentmem.domain.models import Principal
from agentmem.local.rate_limit import (
    LEASE_MOST,
    LEASE_S,
    Rate,
    RateLimiter,
    TokenBuckets,
    lease_size,
    retry_after_s,
)
from agentmem.settings import Settings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


ANA = Principal(account_id="acct_a", key_id="key_ana", kind="account")
BEN = Principal(account_id="acct_a", key_id="key_ben", kind="user", user_id="ben")
OTHER = Principal(account_id="acct_b", key_id="key_other", kind="account")


Limiter = Callable[[Clock], RateLimiter]


@pytest.fixture(params=["in the process", "shared by workers"])
def limiter(request: pytest.FixtureRequest, tmp_path: Path) -> Limiter:
    """Limits of 3 per key (2 a second back), 5 per account (3), 2 failures per source (1): kept in the process,
    or each call another worker's limiter on the same shared file."""
    shared = ServerState(tmp_path) if request.param == "shared by workers" else None

    def make(clock: Clock) -> RateLimiter:
        return RateLimiter(key=Rate(2, 3), account=Rate(3, 5), failures=Rate(1, 2), clock=clock, shared=shared)

    return make


class Workers:
    """Each request to a different worker's limiter, round robin."""

    def __init__(self, limiters: list[RateLimiter]) -> None:
        self.limiters = limiters
        self.turn = 0

    def __getattr__(self, name: str) -> Any:
        self.turn += 1
        return getattr(self.limiters[self.turn % len(self.limiters)], name)


def test_a_bucket_serves_its_burst_then_one_per_refill() -> None:
    # Given a bucket of 3 that refills 2 a second
    buckets = TokenBuckets(Rate(2, 3))
    for _ in range(3):
        assert buckets.wait_s("k", 0.0) == 0
        buckets.take("k", 0.0)
    # Then the 4th waits half a second, and is served then
    assert buckets.wait_s("k", 0.0) == pytest.approx(0.5)
    assert buckets.wait_s("k", 0.5) == 0
    # And idle time never fills it past its burst
    assert buckets.wait_s("k", 100.0) == 0
    for _ in range(3):
        buckets.take("k", 100.0)
    assert buckets.wait_s("k", 100.0) > 0


def test_buckets_past_the_bound_forget_the_least_recent() -> None:
    buckets = TokenBuckets(Rate(1, 1), max_buckets=2)
    buckets.take("a", 0.0)
    buckets.take("b", 0.0)
    buckets.take("c", 0.0)  # "a" is forgotten: it starts full again
    assert buckets.wait_s("a", 0.0) == 0
    assert buckets.wait_s("c", 0.0) > 0


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert retry_after_s(0.01) == 1
    assert retry_after_s(1.0) == 1
    assert retry_after_s(1.2) == 2


def test_a_key_is_refused_once_its_bucket_is_empty_and_served_after_retry_after(limiter: Limiter) -> None:
    clock = Clock()
    limits = limiter(clock)
    for _ in range(3):
        limits.admit(ANA)
    with pytest.raises(RateLimitedError) as refused:
        limits.admit(ANA)
    assert refused.value.status == 429 and refused.value.code == "rate_limited"
    assert refused.value.details == {"scope": "key", "retry_after": 1}
    clock.now += 1
    limits.admit(ANA)


def test_the_account_bucket_holds_across_its_keys_and_a_refusal_takes_nothing(limiter: Limiter) -> None:
    clock = Clock()
    limits = limiter(clock)  # 3 per key, 5 per account
    for _ in range(3):
        limits.admit(ANA)
    with pytest.raises(RateLimitedError):
        limits.admit(ANA)  # refused by its key: the account's bucket keeps its 2
    limits.admit(BEN)
    limits.admit(BEN)
    with pytest.raises(RateLimitedError) as refused:
        limits.admit(BEN)
    assert refused.value.details["scope"] == "account"
    # Another account is untouched
    for _ in range(3):
        limits.admit(OTHER)


def test_failed_keys_use_up_their_sources_budget_only(limiter: Limiter) -> None:
    clock = Clock()
    limits = limiter(clock)  # 2 failures, 1 a second back
    limits.check_source("10.0.0.1")
    limits.failed("10.0.0.1")
    limits.failed("10.0.0.1")
    with pytest.raises(RateLimitedError) as refused:
        limits.check_source("10.0.0.1")
    assert refused.value.details == {"scope": "source", "retry_after": 1}
    limits.check_source("10.0.0.2")
    clock.now += 1
    limits.check_source("10.0.0.1")


def test_the_settings_turn_the_limits_off_or_size_them() -> None:
    assert RateLimiter.from_settings(Settings(rate_limits=False)) is None
    sized = RateLimiter.from_settings(Settings(rate_limit_key_burst=1, rate_limit_key_per_s=0.5))
    assert sized is not None
    sized.admit(ANA)
    with pytest.raises(RateLimitedError) as refused:
        sized.admit(ANA)
    assert refused.value.details["retry_after"] == 2


def test_workers_sharing_the_file_share_every_budget(tmp_path: Path) -> None:
    # Given three workers' limiters on one shared file (3 per key, 5 per account, 2 failures per source)
    clock = Clock()
    shared = ServerState(tmp_path)
    workers = Workers([RateLimiter(key=Rate(2, 3), account=Rate(3, 5), failures=Rate(1, 2), clock=clock,
                                   shared=ServerState(tmp_path)) for _ in range(3)])
    # When requests go to each in turn, Then the key's burst is 3 in all, not 3 in each
    for _ in range(3):
        workers.admit(ANA)
    with pytest.raises(RateLimitedError):
        workers.admit(ANA)
    # And the account's 5 and the source's 2 are the server's too
    workers.admit(BEN)
    workers.admit(BEN)
    with pytest.raises(RateLimitedError) as refused:
        workers.admit(BEN)
    assert refused.value.details["scope"] == "account"
    workers.failed("10.0.0.1")
    workers.failed("10.0.0.1")
    for _ in range(3):
        with pytest.raises(RateLimitedError):
            workers.check_source("10.0.0.1")
    # And the file holds one bucket per name, whichever worker took from it
    rows = shared.connection().execute("SELECT kind, name FROM buckets ORDER BY kind, name").fetchall()
    assert rows == [("account", "acct_a"), ("key", "key_ana"), ("key", "key_ben"), ("source", "10.0.0.1")]


def test_shared_buckets_full_again_are_forgotten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmem.local import rate_limit

    monkeypatch.setattr(rate_limit, "PRUNE_EVERY", 2)
    clock = Clock()
    shared = ServerState(tmp_path)
    limits = RateLimiter(key=Rate(2, 3), account=Rate(3, 5), failures=Rate(1, 2), clock=clock, shared=shared)
    limits.admit(ANA)  # full again after 1.5 s (key) and 5/3 s (account)
    clock.now += 2
    limits.admit(OTHER)
    names = {row[0] for row in shared.connection().execute("SELECT name FROM buckets")}
    assert names == {"key_other", "acct_b"}


# -- leases: a worker takes a few tokens of a shared bucket at once (lease_size), and never serves more than the file
# gave it ----------------------------------------------------------------------------------------------------


def test_a_lease_is_a_small_share_of_the_burst_and_one_for_small_buckets() -> None:
    assert lease_size(Rate(2, 3)) == 1
    assert lease_size(Rate(10, 127)) == 1
    assert lease_size(Rate(10, 256)) == 4
    assert lease_size(Rate(2_000, 4_000)) == LEASE_MOST


def test_a_burst_is_served_once_in_all_whichever_worker_holds_its_tokens(tmp_path: Path) -> None:
    # Given two workers' limiters on one file, a key's bucket of 2,048 (leases of 32) that hardly refills
    clock = Clock()
    first, second = (RateLimiter(key=Rate(0.001, 2048), account=Rate(0.001, 100_000), failures=Rate(1, 2),
                                 clock=clock, shared=ServerState(tmp_path)) for _ in range(2))
    # When the first serves one request (taking a lease) and the second then serves until refused
    first.admit(ANA)
    served_second = _served(second, ANA)
    # Then the second is refused while the first still holds the rest of its lease
    assert served_second == 2048 - LEASE_MOST
    # And the first serves exactly that rest: the burst, no more, in all
    assert 1 + _served(first, ANA) + served_second == 2048
    # And once a lease is older than LEASE_S what is left of it is dropped, not served
    clock.now += LEASE_S + 1  # (the bucket gains 0.003 tokens meanwhile)
    second_again = RateLimiter(key=Rate(0.001, 2048), account=Rate(0.001, 100_000), failures=Rate(1, 2),
                               clock=clock, shared=ServerState(tmp_path))
    with pytest.raises(RateLimitedError):
        second_again.admit(ANA)


def test_leases_never_serve_a_key_past_its_limit_across_worker_processes(tmp_path: Path) -> None:
    # Given three worker processes of four threads each, sharing one file, a key's bucket of 1,000 a burst
    # (leases of 15) that refills 50 a second, and its account's of 1,500 (leases of 23) that refills 75
    rates = {"key": Rate(50, 1000), "account": Rate(75, 1500)}
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    started = time.time()
    processes = [context.Process(target=_hammer, args=(tmp_path, rates, results, 1.5)) for _ in range(3)]
    for process in processes:
        process.start()
    # When each thread asks for admission as fast as it can, for 1.5 s, with the key and a sibling key
    counts = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    elapsed = time.time() - started
    served_ana = sum(count["ana"] for count in counts)
    served_ben = sum(count["ben"] for count in counts)
    # Then no more than the key's limit was served over the whole run (its burst and what refilled), and the
    # account's limit held over both its keys
    assert served_ana <= 1000 + 50 * elapsed
    assert served_ana + served_ben <= 1500 + 75 * elapsed
    # And the account's limit was reached: what the workers held back of it is at most a lease each
    assert served_ana + served_ben >= 1500 - 3 * lease_size(rates["account"])
    assert all(count["refused"] > 0 for count in counts)


def _hammer(data_dir: Path, rates: dict[str, Rate], results: Any, seconds: float) -> None:
    """One worker process: four threads asking for ANA and BEN in turns until ``seconds`` have passed."""
    limiter = RateLimiter(key=rates["key"], account=rates["account"], failures=Rate(1, 2),
                          shared=ServerState(data_dir))
    counts = {"ana": 0, "ben": 0, "refused": 0}
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def ask() -> None:
        turn = 0
        while time.monotonic() < deadline:
            turn += 1
            who = ANA if turn % 3 else BEN
            try:
                limiter.admit(who)
            except RateLimitedError:
                with lock:
                    counts["refused"] += 1
                continue
            with lock:
                counts["ana" if who is ANA else "ben"] += 1

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put(counts)


def _served(limiter: RateLimiter, principal: Principal, most: int = 100_000) -> int:
    for served in range(most):
        try:
            limiter.admit(principal)
        except RateLimitedError:
            return served
    raise AssertionError("never refused")


def test_a_worker_sees_failures_another_wrote_though_it_read_the_source_before(tmp_path: Path) -> None:
    # Given two workers on one file, the first having read a source's bucket (full) already
    clock = Clock()
    first, second = (RateLimiter(key=Rate(2, 3), account=Rate(3, 5), failures=Rate(1, 2), clock=clock,
                                 shared=ServerState(tmp_path)) for _ in range(2))
    first.check_source("10.0.0.1")
    first.check_source("10.0.0.1")
    # When the second writes the source's two failures
    second.failed("10.0.0.1")
    second.failed("10.0.0.1")
    # Then the first refuses the source at once, and serves it again once a token is back
    with pytest.raises(RateLimitedError) as refused:
        first.check_source("10.0.0.1")
    assert refused.value.details == {"scope": "source", "retry_after": 1}
    clock.now += 1
    first.check_source("10.0.0.1")
    # And a failure the first writes is seen by the second, which has read the bucket holding that token
    second.check_source("10.0.0.1")
    first.failed("10.0.0.1")
    with pytest.raises(RateLimitedError):
        second.check_source("10.0.0.1")
