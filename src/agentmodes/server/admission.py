"""Bounded work per client: a pool for agent runs with a queue limit, and rate limits per key.

An agent run holds a slot of the `RunPool` from before its question is stored until its
generator is closed. At most `workers` runs go at once and at most `queue` wait; a request
beyond that is refused at once with 429 and a Retry-After, instead of piling threads up
until every route (health included) stalls. A waiting request whose client leaves gives
its place up.

`RateLimiter` is a token bucket per API key (per principal: a user, an environment key,
or the one local operator of a keyless server) and kind of route (`chat`, `upload`).
Written by hand rather than with slowapi: the key is the principal our own auth resolves,
and it must also meter questions sent over an already open WebSocket, which a
per-HTTP-route decorator does not see.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Iterator, Optional

from ..errors import ConfigError


class Busy(Exception):
    """Refused for now; `retry_after` is the whole number of seconds to wait."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = max(1, int(retry_after))


class RunPool:
    """At most `workers` runs at once, at most `queue` waiting. Lives on one event loop;
    `release` may be called from any thread (a run's generator closes in its own thread)."""

    def __init__(self, workers: int, queue: int):
        self.workers, self.queue = workers, queue
        self.running = 0
        self._waiting: deque[asyncio.Future] = deque()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._mean_run_s = 5.0           # a guess until runs have been timed

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def acquire(self) -> float:
        """Wait for a slot (Busy if the queue is full); returns the start time for release."""
        loop = self._loop = asyncio.get_running_loop()
        if self.running < self.workers and not self._waiting:
            self.running += 1
            return time.monotonic()
        if len(self._waiting) >= self.queue:
            ahead = len(self._waiting) + self.running
            raise Busy(f"the server is busy: {self.running} answers running and "
                       f"{len(self._waiting)} waiting; try again shortly",
                       math.ceil(self._mean_run_s * ahead / self.workers))
        slot = loop.create_future()
        self._waiting.append(slot)
        try:
            await slot
        except asyncio.CancelledError:
            if slot.done() and not slot.cancelled():
                self._hand_on()              # the slot came just as the client left
            else:
                self._waiting.remove(slot)
            raise
        return time.monotonic()

    def release(self, started: float) -> None:
        elapsed = time.monotonic() - started
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running_here = asyncio.get_running_loop() is loop
        except RuntimeError:
            running_here = False
        if running_here:
            self._finished(elapsed)
        else:
            loop.call_soon_threadsafe(self._finished, elapsed)

    def _finished(self, elapsed: float) -> None:
        self._mean_run_s = 0.8 * self._mean_run_s + 0.2 * elapsed
        self._hand_on()

    def _hand_on(self) -> None:
        while self._waiting:
            slot = self._waiting.popleft()
            if not slot.done():
                slot.set_result(None)        # the slot passes on; `running` stays the same
                return
        self.running -= 1


class SlotHolder:
    """A run's event iterator that gives its pool slot back exactly once: when it finishes,
    is closed, or is garbage-collected without ever being started (a client that left
    before its response began; a plain generator's `finally` would never run then)."""

    def __init__(self, gen: Iterator, pool: RunPool, started: float):
        self._gen, self._pool, self._started = gen, pool, started
        self._held = True

    def __iter__(self) -> "SlotHolder":
        return self

    def __next__(self):
        try:
            return next(self._gen)
        except StopIteration:
            self._release()
            raise

    def close(self) -> None:
        try:
            close = getattr(self._gen, "close", None)
            if close:
                close()
        finally:
            self._release()

    def _release(self) -> None:
        if self._held:
            self._held = False
            self._pool.release(self._started)

    def __del__(self) -> None:
        self._release()


@dataclass(frozen=True, slots=True)
class Rate:
    """`count` requests per `period_s`, with bursts of up to `count`. count 0: no limit."""

    count: int
    period_s: float

    @classmethod
    def parse(cls, text: str, name: str) -> "Rate":
        """"60/minute", "10/s", "1000/hour", "0" or "off" (no limit)."""
        raw = (text or "").strip().lower()
        if raw in ("0", "off", "none", ""):
            return cls(0, 1.0)
        count, _, unit = raw.partition("/")
        periods = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60,
                   "h": 3600, "hour": 3600, "d": 86400, "day": 86400}
        if not count.strip().isdigit() or unit.strip() not in periods:
            raise ConfigError(f"{name} must look like 60/minute, 10/second, 1000/hour or "
                              f"off, not {text!r}")
        return cls(int(count), float(periods[unit.strip()]))

    def __str__(self) -> str:
        return f"{self.count}/{int(self.period_s)}s" if self.count else "off"


class RateLimiter:
    """Token buckets keyed by (kind, principal owner); thread-safe."""

    def __init__(self, rates: dict[str, Rate]):
        self.rates = rates
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}
        self._lock = threading.Lock()

    def check(self, kind: str, who: str) -> None:
        """Take one token for `who`, or raise Busy with the wait until the next one."""
        rate = self.rates.get(kind)
        if rate is None or rate.count == 0:
            return
        per_token = rate.period_s / rate.count
        now = time.monotonic()
        with self._lock:
            tokens, stamp = self._buckets.get((kind, who), (float(rate.count), now))
            tokens = min(float(rate.count), tokens + (now - stamp) / per_token)
            if tokens < 1.0:
                self._buckets[(kind, who)] = (tokens, now)
                raise Busy(f"rate limit reached: {rate.count} {kind} requests per "
                           f"{_period(rate.period_s)} for this API key",
                           math.ceil((1.0 - tokens) * per_token))
            self._buckets[(kind, who)] = (tokens - 1.0, now)
            if len(self._buckets) > 10_000:
                self._forget_full(now)

    def _forget_full(self, now: float) -> None:
        """Drop buckets that have refilled (an idle key costs no memory)."""
        for key, (tokens, stamp) in list(self._buckets.items()):
            rate = self.rates[key[0]]
            if tokens + (now - stamp) * rate.count / rate.period_s >= rate.count:
                del self._buckets[key]


def _period(seconds: float) -> str:
    return {1: "second", 60: "minute", 3600: "hour", 86400: "day"}.get(int(seconds),
                                                                       f"{seconds:g} s")
