"""Token and request accounting, and the spending cap.

A call's usage is counted in one place, ``count_usage`` (the chat client calls it for every
reply and every choice served from the cache), into every ``tally_usage`` block open around the
call, in the manner of LangChain's ``get_usage_metadata_callback``: a node or a command opens
one around a step and reads the step's total, instead of every function returning its usage.
LangChain's own handler is not used because it sees only the requests that reach the model: a
choice replayed from our cache (``cached``) never does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pydantic import BaseModel


class BudgetExceeded(RuntimeError):
    """The run reached ``--max-tokens`` or ``--max-cost``; everything so far is saved."""


class Usage(BaseModel):
    """LLM traffic of one call, one context or one run."""

    requests: int = 0
    #: Choices served from the replay cache (an ``n=5`` vote replayed counts 5).
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            requests=self.requests + other.requests,
            cached=self.cached + other.cached,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class UsageTally:
    """The usage of the LLM calls made while a ``tally_usage`` block is open."""

    def __init__(self) -> None:
        self.total = Usage()
        self._lock = threading.Lock()

    def add(self, usage: Usage) -> None:
        with self._lock:
            self.total = self.total + usage


_OPEN_TALLIES: ContextVar[tuple[UsageTally, ...]] = ContextVar("cq2a_usage", default=())


@contextmanager
def tally_usage() -> Iterator[UsageTally]:
    """Sum the usage of every LLM call made inside the block: in this thread, and in the
    threads ``cq2a.adapters.fanout.parallel_map`` runs from it (they run in a copy of this
    context)."""
    tally = UsageTally()
    token = _OPEN_TALLIES.set((*_OPEN_TALLIES.get(), tally))
    try:
        yield tally
    finally:
        _OPEN_TALLIES.reset(token)


def count_usage(usage: Usage) -> None:
    """Count one call's usage in every open tally."""
    for tally in _OPEN_TALLIES.get():
        tally.add(usage)


def add_usage(left: Usage | None, right: Usage | None) -> Usage:
    """LangGraph reducer: usage reported by parallel branches adds up."""
    return (left or Usage()) + (right or Usage())


class SpendingMeter:
    """Process-wide running total; a request is sent only if its worst case fits the caps.

    Before a request the caller reserves its estimate (prompt tokens from its length, and the
    completion cap for every choice); requests already in flight hold their reservations, so
    concurrent requests cannot together overshoot the cap. After the request the reservation is
    replaced by what it really used. ``cq2a.app.store_meter`` keeps the same accounts in a
    database, for a run whose requests come from several processes."""

    def __init__(
        self,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        price_per_1k_prompt: float = 0.0,
        price_per_1k_completion: float = 0.0,
    ) -> None:
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self.prices = (price_per_1k_prompt, price_per_1k_completion)
        self._total = Usage()
        self._reserved = Usage()
        self._lock = threading.Lock()

    @property
    def total(self) -> Usage:
        """What the run spent so far."""
        return self._total

    @property
    def reserved(self) -> Usage:
        """The worst case of the requests in flight."""
        return self._reserved

    def cost(self, usage: Usage | None = None) -> float:
        usage = usage or self.total
        prompt_price, completion_price = self.prices
        return (
            usage.prompt_tokens * prompt_price + usage.completion_tokens * completion_price
        ) / 1000

    def check(self) -> None:
        """Raise BudgetExceeded when a cap is already reached."""
        self.reserve(Usage())
        self.release(Usage())

    def refusal(self, total: Usage, reserved: Usage, estimate: Usage) -> BudgetExceeded | None:
        """Why a request of up to ``estimate`` may not be sent, given the spend so far and the
        requests in flight (None: it fits both caps)."""
        worst = total + reserved + estimate
        if self.max_tokens is not None and (
            total.total_tokens >= self.max_tokens or worst.total_tokens > self.max_tokens
        ):
            return BudgetExceeded(
                f"token cap reached: {total.total_tokens} spent, "
                f"{reserved.total_tokens} in flight, a request of up to "
                f"{estimate.total_tokens} would pass {self.max_tokens} tokens"
            )
        if self.max_cost is not None and (
            self.cost(total) >= self.max_cost or self.cost(worst) > self.max_cost
        ):
            return BudgetExceeded(
                f"cost cap reached: {self.cost(total):.4f} spent, a request of up to "
                f"{self.cost(estimate):.4f} would pass {self.max_cost}"
            )
        return None

    def reserve(self, estimate: Usage) -> None:
        """Hold ``estimate`` for a request about to be sent, or raise BudgetExceeded if the
        spend so far, the requests in flight and this one could pass a cap."""
        with self._lock:
            refused = self.refusal(self._total, self._reserved, estimate)
            if refused is not None:
                raise refused
            self._reserved = self._reserved + estimate

    def release(self, estimate: Usage) -> None:
        """Drop a reservation (its request finished or failed)."""
        with self._lock:
            self._reserved = Usage(
                prompt_tokens=self._reserved.prompt_tokens - estimate.prompt_tokens,
                completion_tokens=self._reserved.completion_tokens - estimate.completion_tokens,
            )

    def record(self, usage: Usage) -> None:
        with self._lock:
            self._total = self._total + usage

    def resume_from(self, spent_before: Usage) -> None:
        """Count what a resumed run spent before this meter was made."""
        self.record(spent_before)

    def close(self) -> None:
        """Let go of what the meter holds (nothing, in this process)."""
