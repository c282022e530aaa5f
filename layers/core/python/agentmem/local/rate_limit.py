"""The local server's rate limits: a token bucket per API key, per account, and for failed authentications
per source address.

A bucket holds up to ``burst`` tokens and gains ``per_s`` a second; a request takes one. A request finding
its key's or its account's bucket empty is refused with 429 ``rate_limited`` and the seconds until a token
is back (``Retry-After``), and takes nothing from either. A request that presents a key the server does not
know takes a token from its source's bucket; while that bucket is empty every request from the source
(keyed or not) is refused, so a guess that happens to be right gains nothing.

With one server process the buckets live in it (one lock, constant work per request). With several
(``agentmem serve --workers N``) they live in the file the workers share (``ServerState``, ``SharedTokenBuckets``),
so a limit holds for the server as a whole: dividing each budget by N would not, since a client's connections
are not spread evenly (one kept-alive connection stays with one worker, which would give it 1/N of its budget).
A worker takes a key's and an account's tokens from the file a few at a time (``lease_size``: 1/64 of the
burst, at most 32; 1 for a burst under 128) and serves the next requests of that key and account from what it
holds, so most requests do not touch the file; tokens it has not used within ``LEASE_S`` are dropped, never
given to another request. Every request served took a token out of the shared bucket, so a key or an account
is never served more than its limit (burst, plus ``per_s`` a second); what the leases cost is the other way:
a request may be refused while other workers hold up to ``lease_size - 1`` tokens each of its bucket, for at
most ``LEASE_S``. A source's failed authentications are written to the file one by one (no lease: a guesser
spread over the workers meets the whole budget), and counted in a small file every worker maps
(``FailureCount``): a worker reads a source's bucket from ``serve.db`` again only once that count has moved,
since a failure is the only thing that changes a source's bucket. The deployed stack limits per account in
API Gateway instead (infra/constructs/api.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..adapters.embedded.private_files import make_private_dirs, map_private_file
from ..domain.errors import RateLimitedError
from ..domain.models import Principal
from ..settings import Settings

if TYPE_CHECKING:
    from ..adapters.embedded.server_state import ServerState

# Buckets remembered per kind; past this the least recently used is forgotten (it starts full again). It bounds
# memory when a flood comes from many addresses.
MAX_BUCKETS = 50_000
PRUNE_EVERY = 1024  # shared buckets: takes between two sweeps of the buckets that are full again
LEASE_SHARE = 1 / 64  # of a shared bucket's burst, a worker takes at once ...
LEASE_MOST = 32  # ... up to this many tokens
LEASE_S = 1.0  # tokens a worker took and has not used within this long are dropped
FAILURES_FILE = "serve.failures"  # beside serve.db: the count of failed authentications written to it


@dataclass(frozen=True)
class Rate:
    per_s: float
    burst: float

    def describe(self) -> str:
        return f"{self.per_s:,g} a second, bursts of {self.burst:,g}"


class TokenBuckets:
    """One bucket per name, all at the same rate. Not thread-safe: ``RateLimiter`` holds the lock."""

    def __init__(self, rate: Rate, max_buckets: int = MAX_BUCKETS) -> None:
        self.rate = rate
        self._max = max_buckets
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # name → (tokens, at)

    def _held(self, name: str) -> tuple[float, float] | None:
        """The bucket's (tokens, at) as last taken from; None for one never used (or forgotten): full."""
        return self._buckets.get(name)

    def _keep(self, name: str, tokens: float, at: float) -> None:
        self._buckets[name] = (tokens, at)
        self._buckets.move_to_end(name)
        while len(self._buckets) > self._max:
            self._buckets.popitem(last=False)

    def _tokens(self, name: str, now: float) -> float:
        tokens, at = self._held(name) or (self.rate.burst, now)
        return min(self.rate.burst, tokens + max(0.0, now - at) * self.rate.per_s)

    def wait_s(self, name: str, now: float) -> float:
        """Seconds until the bucket holds a token (0: it holds one now)."""
        return self.wait_for(self._tokens(name, now))

    def wait_for(self, tokens: float) -> float:
        """Seconds until a bucket holding ``tokens`` holds a whole one."""
        missing = 1.0 - tokens
        return 0.0 if missing <= 0 else missing / self.rate.per_s

    def take_if_held(self, name: str, now: float) -> float:
        """Take a token if the bucket holds one: the tokens it held (under 1: none was taken)."""
        tokens = self._tokens(name, now)
        if tokens >= 1.0:
            self._keep(name, tokens - 1.0, now)
        return tokens

    def take(self, name: str, now: float) -> None:
        self._keep(name, self._tokens(name, now) - 1.0, now)

    def take_up_to(self, name: str, now: float, most: int) -> int:
        """Take as many whole tokens as the bucket holds, at most ``most`` (at least one: ``wait_s`` was 0)."""
        tokens = self._tokens(name, now)
        taken = max(1, min(most, int(tokens)))
        self._keep(name, tokens - taken, now)
        return taken


def lease_size(rate: Rate) -> int:
    """Tokens a worker takes from a shared bucket at once."""
    return max(1, min(LEASE_MOST, int(rate.burst * LEASE_SHARE)))


class HeldTokens:
    """The tokens one worker took from the shared buckets of one kind and has not used yet, per name, each
    batch until ``LEASE_S`` after it was taken. Not thread-safe: ``RateLimiter`` holds the lock."""

    def __init__(self, lease: int, max_buckets: int = MAX_BUCKETS) -> None:
        self.lease = lease
        self._max = max_buckets
        self._held: OrderedDict[str, tuple[int, float]] = OrderedDict()  # name -> (tokens, until)

    def holds(self, name: str, now: float) -> bool:
        held = self._held.get(name)
        return held is not None and now < held[1]

    def use(self, name: str) -> None:
        tokens, until = self._held[name]
        if tokens > 1:
            self._held[name] = (tokens - 1, until)
        else:
            del self._held[name]

    def keep(self, name: str, tokens: int, now: float) -> None:
        """``tokens`` just taken (beyond the one the request uses)."""
        if tokens <= 0:
            self._held.pop(name, None)
            return
        self._held[name] = (tokens, now + LEASE_S)
        self._held.move_to_end(name)
        while len(self._held) > self._max:
            self._held.popitem(last=False)


class SharedTokenBuckets(TokenBuckets):
    """The same buckets, in the file every worker of the server shares: read and written on this thread's
    connection, inside the transaction ``RateLimiter`` holds. A bucket left alone until it is full again is
    forgotten (every ``PRUNE_EVERY`` takes): forgetting it changes nothing, and bounds the file."""

    def __init__(self, rate: Rate, state: ServerState, kind: str) -> None:
        super().__init__(rate)
        self._state = state
        self._kind = kind
        self._takes = 0
        self._read = threading.local()  # this thread's transaction: the buckets it has read (a take follows a wait)

    def begin(self, *, writing: bool = False) -> None:
        """A transaction (``writing``) or a read starts: nothing read before it is known any more."""
        self._read.rows = {}
        self._read.writing = writing

    def _held(self, name: str) -> tuple[float, float] | None:
        rows: dict[str, tuple[float, float] | None] | None = getattr(self._read, "rows", None)
        if rows is not None and name in rows:
            return rows[name]
        row = self._state.connection().execute(
            "SELECT tokens, at FROM buckets WHERE kind=? AND name=?", (self._kind, name)).fetchone()
        held = None if row is None else (float(row[0]), float(row[1]))
        if rows is not None:
            rows[name] = held
        return held

    def _keep(self, name: str, tokens: float, at: float) -> None:
        conn = self._state.connection()
        conn.execute("INSERT INTO buckets (kind, name, tokens, at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, name) "
                     "DO UPDATE SET tokens = excluded.tokens, at = excluded.at", (self._kind, name, tokens, at))
        rows = getattr(self._read, "rows", None)
        if rows is not None:
            rows[name] = (tokens, at)
        self._takes += 1
        if self._takes % PRUNE_EVERY == 0:
            full_after = self.rate.burst / self.rate.per_s
            conn.execute("DELETE FROM buckets WHERE kind=? AND at < ?", (self._kind, at - full_after))


class FailureCount:
    """How many failed authentications the server's workers have written to the shared file, kept in a file of
    8 bytes that each worker maps into its memory: reading it costs no system call. Each failure adds one after
    its transaction committed, under a lock on the file, so the count only grows and every failure moves it."""

    def __init__(self, path: Path) -> None:
        make_private_dirs(path.parent)
        self._fd, self._map = map_private_file(path, 8)  # the descriptor kept: a flock is taken on it
        self._lock = threading.Lock()  # (a lock on the file does not keep this process's threads apart)

    def value(self) -> int:
        return int.from_bytes(self._map[:8], "little")

    def add_one(self) -> None:
        with self._lock:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                self._map[:8] = (self.value() + 1).to_bytes(8, "little")
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)


class SharedSourceBuckets(SharedTokenBuckets):
    """The sources' buckets in the shared file, each read again only when the server's ``FailureCount`` has
    moved since this worker last read it (a transaction writing a failure reads the file itself)."""

    def __init__(self, rate: Rate, state: ServerState, failures: FailureCount) -> None:
        super().__init__(rate, state, "source")
        self.failures = failures
        self._seen: OrderedDict[str, tuple[int, tuple[float, float] | None]] = OrderedDict()
        self._seen_lock = threading.Lock()

    def _held(self, name: str) -> tuple[float, float] | None:
        if getattr(self._read, "writing", False):
            return super()._held(name)
        count = self.failures.value()  # before the file: a failure committed after this moves it again
        seen = self._seen.get(name)
        if seen is not None and seen[0] == count:
            return seen[1]
        held = super()._held(name)
        with self._seen_lock:
            self._seen[name] = (count, held)
            self._seen.move_to_end(name)
            while len(self._seen) > self._max:
                self._seen.popitem(last=False)
        return held


def retry_after_s(wait_s: float) -> int:
    """``Retry-After`` is whole seconds: at least 1."""
    return max(1, math.ceil(wait_s))


class RateLimiter:
    def __init__(self, key: Rate, account: Rate, failures: Rate, clock: Callable[[], float] = time.monotonic,
                 *, shared: ServerState | None = None) -> None:
        """``shared``: the buckets live in the file the server's workers share (and the clock, which must then
        read the same in every process, is the wall clock unless one is given)."""
        self._clock = clock
        self._held: tuple[HeldTokens, HeldTokens] | None = None
        self._failure_count: FailureCount | None = None
        if shared is None:
            self._keys, self._accounts, self._sources = TokenBuckets(key), TokenBuckets(account), TokenBuckets(failures)
            lock = threading.Lock()
            self._writing: Callable[[], AbstractContextManager[object]] = lambda: lock
            self._reading: Callable[[], AbstractContextManager[object]] = lambda: lock
        else:
            sources = SharedSourceBuckets(failures, shared, FailureCount(shared.path.with_name(FAILURES_FILE)))
            buckets = [SharedTokenBuckets(key, shared, "key"), SharedTokenBuckets(account, shared, "account"), sources]
            self._keys, self._accounts, self._sources = buckets
            self._failure_count = sources.failures

            @contextlib.contextmanager
            def writing() -> Iterator[None]:
                with shared.write():
                    for bucket in buckets:
                        bucket.begin(writing=True)
                    yield

            @contextlib.contextmanager
            def reading() -> Iterator[None]:  # one SELECT reads one snapshot: no transaction
                for bucket in buckets:
                    bucket.begin()
                yield

            self._writing, self._reading = writing, reading
            self._held = (HeldTokens(lease_size(key)), HeldTokens(lease_size(account)))
            self._holding = threading.Lock()
            if clock is time.monotonic:
                self._clock = time.time

    @classmethod
    def from_settings(cls, settings: Settings, *, shared: ServerState | None = None) -> RateLimiter | None:
        """The limits the settings ask for; None when they are turned off (``AGENTMEM_RATE_LIMITS=false``).
        ``shared``: the file of the server's workers, where the buckets then live."""
        if not settings.rate_limits:
            return None
        return cls(
            key=Rate(settings.rate_limit_key_per_s, settings.rate_limit_key_burst),
            account=Rate(settings.rate_limit_account_per_s, settings.rate_limit_account_burst),
            failures=Rate(settings.rate_limit_auth_failures_per_s, settings.rate_limit_auth_failures_burst),
            shared=shared,
        )

    def check_source(self, source: str) -> None:
        """Refuse a source whose failed authentications used up its budget."""
        with self._reading():
            wait = self._sources.wait_s(source, self._clock())
        if wait > 0:
            raise _limited("too many requests with an invalid API key from this address", "source",
                           self._sources.rate, wait)

    def failed(self, source: str) -> None:
        """A request from ``source`` presented a key that is not valid."""
        with self._writing():
            self._sources.take(source, self._clock())
        if self._failure_count is not None:  # committed: the other workers read the source's bucket again
            self._failure_count.add_one()

    def admit(self, principal: Principal) -> None:
        """Take a token from the key's bucket and the account's, or refuse (taking none) when either is empty."""
        if self._held is not None:
            key_wait, account_wait = self._admit_shared(principal.key_id, principal.account_id, *self._held)
        else:
            with self._writing():  # (in the process: each bucket worked out once)
                now = self._clock()
                key_tokens = self._keys.take_if_held(principal.key_id, now)
                if key_tokens >= 1.0:
                    account_tokens = self._accounts.take_if_held(principal.account_id, now)
                    if account_tokens >= 1.0:
                        return
                    self._keys._keep(principal.key_id, key_tokens, now)  # the account refused: the key's back
                else:
                    account_tokens = self._accounts._tokens(principal.account_id, now)
                key_wait, account_wait = self._keys.wait_for(key_tokens), self._accounts.wait_for(account_tokens)
        if key_wait <= 0 and account_wait <= 0:
            return
        if key_wait >= account_wait:
            raise _limited("too many requests with this API key", "key", self._keys.rate, key_wait)
        raise _limited("too many requests for this account", "account", self._accounts.rate, account_wait)

    def _admit_shared(self, key: str, account: str, keys: HeldTokens, accounts: HeldTokens) -> tuple[float, float]:
        """The waits of the key's and the account's buckets (both 0: a token of each was taken): from what this
        worker holds, and from the shared file for what it does not (taking a lease's worth there)."""
        with self._holding:
            now = self._clock()
            key_held, account_held = keys.holds(key, now), accounts.holds(account, now)
            if not (key_held and account_held):
                with self._writing():
                    now = self._clock()
                    key_wait = 0.0 if key_held else self._keys.wait_s(key, now)
                    account_wait = 0.0 if account_held else self._accounts.wait_s(account, now)
                    if key_wait > 0 or account_wait > 0:
                        return key_wait, account_wait
                    if not key_held:
                        keys.keep(key, self._keys.take_up_to(key, now, keys.lease) - 1, now)
                    if not account_held:
                        accounts.keep(account, self._accounts.take_up_to(account, now, accounts.lease) - 1, now)
                if key_held:
                    keys.use(key)
                if account_held:
                    accounts.use(account)
                return 0.0, 0.0
            keys.use(key)
            accounts.use(account)
            return 0.0, 0.0


def _limited(what: str, scope: str, rate: Rate, wait_s: float) -> RateLimitedError:
    retry = retry_after_s(wait_s)
    return RateLimitedError(f"{what}: at most {rate.describe()}; retry in {retry} s", scope=scope,
                            retry_after=retry)
