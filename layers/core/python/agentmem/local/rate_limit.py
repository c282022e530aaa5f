"""The local server's rate limits: a token bucket per API key, per account, and for failed authentications
per source address.

A bucket holds up to ``burst`` tokens and gains ``per_s`` a second; a request takes one. A request finding
its key's or its account's bucket empty is refused with 429 ``rate_limited`` and the seconds until a token
is back (``Retry-After``), and takes nothing from either. A request that presents a key the server does not
know takes a token from its source's bucket; while that bucket is empty every request from the source
(keyed or not) is refused, so a guess that happens to be right gains nothing.

The buckets live in this process (one lock, constant work per request): with several server processes
each keeps its own. The deployed stack limits per account in API Gateway instead (infra/constructs/api.py).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ..domain.errors import RateLimitedError
from ..domain.models import Principal
from ..settings import Settings

# Buckets remembered per kind; past this the least recently used is forgotten (it starts full again). It bounds
# memory when a flood comes from many addresses.
MAX_BUCKETS = 50_000


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

    def _tokens(self, name: str, now: float) -> float:
        tokens, at = self._buckets.get(name, (self.rate.burst, now))
        return min(self.rate.burst, tokens + (now - at) * self.rate.per_s)

    def wait_s(self, name: str, now: float) -> float:
        """Seconds until the bucket holds a token (0: it holds one now)."""
        missing = 1.0 - self._tokens(name, now)
        return 0.0 if missing <= 0 else missing / self.rate.per_s

    def take(self, name: str, now: float) -> None:
        self._buckets[name] = (self._tokens(name, now) - 1.0, now)
        self._buckets.move_to_end(name)
        while len(self._buckets) > self._max:
            self._buckets.popitem(last=False)


def retry_after_s(wait_s: float) -> int:
    """``Retry-After`` is whole seconds: at least 1."""
    return max(1, math.ceil(wait_s))


class RateLimiter:
    def __init__(self, key: Rate, account: Rate, failures: Rate, clock: Callable[[], float] = time.monotonic) -> None:
        self._keys = TokenBuckets(key)
        self._accounts = TokenBuckets(account)
        self._sources = TokenBuckets(failures)
        self._clock = clock
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> RateLimiter | None:
        """The limits the settings ask for; None when they are turned off (``AGENTMEM_RATE_LIMITS=false``)."""
        if not settings.rate_limits:
            return None
        return cls(
            key=Rate(settings.rate_limit_key_per_s, settings.rate_limit_key_burst),
            account=Rate(settings.rate_limit_account_per_s, settings.rate_limit_account_burst),
            failures=Rate(settings.rate_limit_auth_failures_per_s, settings.rate_limit_auth_failures_burst),
        )

    def check_source(self, source: str) -> None:
        """Refuse a source whose failed authentications used up its budget."""
        with self._lock:
            wait = self._sources.wait_s(source, self._clock())
        if wait > 0:
            raise _limited("too many requests with an invalid API key from this address", "source",
                           self._sources.rate, wait)

    def failed(self, source: str) -> None:
        """A request from ``source`` presented a key that is not valid."""
        with self._lock:
            self._sources.take(source, self._clock())

    def admit(self, principal: Principal) -> None:
        """Take a token from the key's bucket and the account's, or refuse (taking none) when either is empty."""
        with self._lock:
            now = self._clock()
            key_wait = self._keys.wait_s(principal.key_id, now)
            account_wait = self._accounts.wait_s(principal.account_id, now)
            if key_wait <= 0 and account_wait <= 0:
                self._keys.take(principal.key_id, now)
                self._accounts.take(principal.account_id, now)
                return
        if key_wait >= account_wait:
            raise _limited("too many requests with this API key", "key", self._keys.rate, key_wait)
        raise _limited("too many requests for this account", "account", self._accounts.rate, account_wait)


def _limited(what: str, scope: str, rate: Rate, wait_s: float) -> RateLimitedError:
    retry = retry_after_s(wait_s)
    return RateLimitedError(f"{what}: at most {rate.describe()}; retry in {retry} s", scope=scope,
                            retry_after=retry)
