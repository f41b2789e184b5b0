"""The limits every request of a role passes: the slots of its server, the request rate, the
run's circuit breaker for its endpoint, and the spending cap.

A local llama.cpp server decodes ``slots`` sequences at once, and all roles (and runs) on it
share them, each choice taking one; a remote API gets the run's ``concurrency`` requests in
flight. The rate limiter is langchain's, one per rate, shared by every client of the process
that asks for it; a run spread over processes gives each its share of the rate
(``cq2a.app.ray_engine``), and its meter may be one they share (``cq2a.app.store_meter``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from langchain_core.rate_limiters import InMemoryRateLimiter

from cq2a.adapters.llm.breaker import CircuitBreaker, breaker_for
from cq2a.adapters.llm.endpoint import Endpoint
from cq2a.adapters.llm.usage import SpendingMeter, Usage
from cq2a.settings import LLMSpec, Settings


class Slots:
    """A counting semaphore whose holders take several units at once: a request for ``n``
    choices to a local server takes ``n`` of its slots, so no request waits in the server's
    queue (where it would time out and be sent again)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._free = size
        self._changed = threading.Condition()

    @contextmanager
    def hold(self, units: int = 1) -> Iterator[None]:
        units = min(max(units, 1), self.size)
        with self._changed:
            self._changed.wait_for(lambda: self._free >= units)
            self._free -= units
        try:
            yield
        finally:
            with self._changed:
                self._free += units
                self._changed.notify_all()


@cache
def shared_slots(key: str, size: int) -> Slots:
    return Slots(size)


@cache
def shared_rate_limiter(requests_per_second: float) -> InMemoryRateLimiter:
    return InMemoryRateLimiter(requests_per_second=requests_per_second, check_every_n_seconds=0.01)


class RequestLimits:
    """What one role's requests to one endpoint are held to."""

    def __init__(
        self,
        spec: LLMSpec,
        settings: Settings,
        endpoint: Endpoint,
        *,
        meter: SpendingMeter | None,
        run_key: str,
    ) -> None:
        self.where = endpoint.base_url or "api.openai.com"
        self.max_choices = endpoint.slots
        self.slots = (
            shared_slots(f"local:{endpoint.base_url}", endpoint.slots)
            if endpoint.slots is not None
            else shared_slots(run_key, settings.concurrency)
        )
        self.rate_limiter = (
            shared_rate_limiter(settings.requests_per_second)
            if settings.requests_per_second
            else None
        )
        self.meter = meter
        self.run_key = run_key
        self._max_tokens = spec.max_tokens
        self._breaker_failures = settings.breaker_failures
        self._breaker_window_s = settings.breaker_window_s
        self._breaker_cool_down_s = settings.breaker_cool_down_s

    def breaker(self) -> CircuitBreaker:
        """This run's breaker for the endpoint, looked up per call: a run that is released
        forgets it."""
        return breaker_for(
            self.run_key,
            self.where,
            self._breaker_failures,
            self._breaker_window_s,
            self._breaker_cool_down_s,
        )

    @contextmanager
    def hold(self, messages: list[Any], n: int) -> Iterator[None]:
        """The slots for one request of ``n`` choices, and its most possible spending."""
        with self.slots.hold(self._units(n)), self._reservation(self._estimate(messages, n)):
            yield

    def record(self, usage: Usage) -> None:
        """Count what a request used (before its reservation goes)."""
        if self.meter is not None:
            self.meter.record(usage)

    def _units(self, n: int) -> int:
        """Slots one request takes: each choice decodes in a slot of a local server; a remote
        request counts once."""
        return n if self.max_choices is not None else 1

    def _estimate(self, messages: list[Any], n: int) -> Usage:
        """The most one request can spend: its prompt (about 3 characters a token, on the high
        side) and the completion cap for each choice."""
        chars = sum(len(str(m.content)) for m in messages)
        return Usage(prompt_tokens=chars // 3 + 16, completion_tokens=self._max_tokens * n)

    @contextmanager
    def _reservation(self, estimate: Usage) -> Iterator[None]:
        if self.meter is None:
            yield
            return
        self.meter.reserve(estimate)
        try:
            yield
        finally:
            self.meter.release(estimate)
