"""A circuit breaker per run and LLM endpoint: an outage stops the run instead of rejecting every
slot, and the endpoint is tried again once it may be back.

A single failed call (after the SDK's own retries) is the failure of one question: the slot
keeps the error, waits for the next round, and the run goes on. ``threshold`` failed calls in a
row to one endpoint, with no success in between, mean the endpoint is down: the breaker opens,
and every call to it raises ``LLMUnavailable``, which no pipeline step catches, so the run stops
with everything finished so far saved and ``--resume`` continues it once the endpoint is back.

Open is not for ever: ``cool_down_s`` after it opened, the next call goes through as a trial
(half-open) while the calls behind it wait for its verdict; a success closes the breaker, a
failure opens it for another cool-down. Breakers are kept per run, so a new run (another thread
of a ``langgraph dev`` server) never starts behind the open breaker of an earlier one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

State = Literal["closed", "open", "half-open"]


class LLMUnavailable(RuntimeError):
    """An LLM endpoint failed too often in a row: the run must stop, not carry on."""


class CircuitBreaker:
    """Consecutive failures of one endpoint; opens at ``threshold``, half-opens after
    ``cool_down_s``.

    A failure older than ``window_s`` seconds no longer counts towards the run of failures, so
    rare faults spread over a long run never add up to an outage.
    """

    def __init__(
        self, endpoint: str, threshold: int, window_s: float, cool_down_s: float = 30.0
    ) -> None:
        self.endpoint = endpoint
        self.threshold = threshold
        self.window_s = window_s
        self.cool_down_s = cool_down_s
        self._failures: list[float] = []
        self._cause = ""
        self._opened_at: float | None = None  # None: closed
        self._trial = False  # a trial call is in flight
        self._verdict = threading.Condition()

    @property
    def state(self) -> State:
        with self._verdict:
            if self._opened_at is None:
                return "closed"
            return "half-open" if self._trial else "open"

    def check(self) -> bool:
        """Let a call through (True if it is the trial), or raise ``LLMUnavailable`` while the
        breaker is open; a call that comes while a trial is in flight waits for its verdict."""
        with self._verdict:
            self._verdict.wait_for(lambda: not self._trial)
            if self._opened_at is None:
                return False
            if time.monotonic() - self._opened_at < self.cool_down_s:
                raise LLMUnavailable(self.message())
            self._trial = True
            return True

    @contextmanager
    def call(self) -> Iterator[None]:
        """One call through the breaker, which records its outcome itself; a trial that ends
        with no verdict on the endpoint (a programming error, the spending cap) leaves the
        next call to try."""
        trial = self.check()
        try:
            yield
        finally:
            if trial:
                self._end_trial()

    def record_success(self) -> None:
        with self._verdict:
            self._failures.clear()
            self._opened_at = None
            self._end_trial()

    def record_failure(self, cause: str) -> None:
        """Count one failed call; open the breaker (and raise) when the threshold is reached or
        a trial failed."""
        now = time.monotonic()
        with self._verdict:
            self._failures = [t for t in self._failures if now - t <= self.window_s] + [now]
            self._cause = cause
            if self._trial or len(self._failures) >= self.threshold:
                self._opened_at = now
                self._end_trial()
                raise LLMUnavailable(self.message())

    def message(self) -> str:
        return (
            f"LLM at {self.endpoint} unavailable: {len(self._failures)} calls in a row failed; "
            f"last error: {self._cause}"
        )

    def _end_trial(self) -> None:
        with self._verdict:
            self._trial = False
            self._verdict.notify_all()


_BREAKERS: dict[tuple[str, str], CircuitBreaker] = {}
_BREAKERS_LOCK = threading.Lock()


def breaker_for(
    run_key: str, endpoint: str, threshold: int, window_s: float, cool_down_s: float
) -> CircuitBreaker:
    """The breaker of one run's calls to one endpoint (every role of the run shares it)."""
    with _BREAKERS_LOCK:
        if (run_key, endpoint) not in _BREAKERS:
            _BREAKERS[run_key, endpoint] = CircuitBreaker(
                endpoint, threshold, window_s, cool_down_s
            )
        return _BREAKERS[run_key, endpoint]


def reset_breakers(run_key: str | None = None) -> None:
    """Forget one run's breakers (or every run's, with no key): the run is over."""
    with _BREAKERS_LOCK:
        for key in [k for k in _BREAKERS if run_key is None or k[0] == run_key]:
            del _BREAKERS[key]
