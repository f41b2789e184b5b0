"""A circuit breaker per LLM endpoint: an outage stops the run instead of rejecting every slot.

A single failed call (after the SDK's own retries) is the failure of one question: the slot
keeps the error, waits for the next round, and the run goes on. ``threshold`` failed calls in a
row to one endpoint, with no success in between, mean the endpoint is down: every call to it
from then on raises ``LLMUnavailable``, which no pipeline step catches, so the run stops with
everything finished so far saved and ``--resume`` continues it once the endpoint is back.
"""

from __future__ import annotations

import threading
import time


class LLMUnavailable(RuntimeError):
    """An LLM endpoint failed too often in a row: the run must stop, not carry on."""


class CircuitBreaker:
    """Consecutive failures of one endpoint; opens at ``threshold``.

    A failure older than ``window_s`` seconds no longer counts towards the run of failures, so
    rare faults spread over a long run never add up to an outage.
    """

    def __init__(self, endpoint: str, threshold: int, window_s: float) -> None:
        self.endpoint = endpoint
        self.threshold = threshold
        self.window_s = window_s
        self._failures: list[float] = []
        self._cause = ""
        self._open = False
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise ``LLMUnavailable`` when the breaker is open."""
        with self._lock:
            if self._open:
                raise LLMUnavailable(self.message())

    def record_success(self) -> None:
        with self._lock:
            self._failures.clear()

    def record_failure(self, cause: str) -> None:
        """Count one failed call; open the breaker (and raise) when the threshold is reached."""
        now = time.monotonic()
        with self._lock:
            self._failures = [t for t in self._failures if now - t <= self.window_s] + [now]
            self._cause = cause
            if len(self._failures) >= self.threshold:
                self._open = True
                raise LLMUnavailable(self.message())

    def message(self) -> str:
        return (
            f"LLM at {self.endpoint} unavailable: {len(self._failures)} calls in a row failed; "
            f"last error: {self._cause}"
        )


_BREAKERS: dict[str, CircuitBreaker] = {}
_BREAKERS_LOCK = threading.Lock()


def breaker_for(endpoint: str, threshold: int, window_s: float) -> CircuitBreaker:
    """The process-wide breaker of one endpoint (every role and run that calls it shares it)."""
    with _BREAKERS_LOCK:
        if endpoint not in _BREAKERS:
            _BREAKERS[endpoint] = CircuitBreaker(endpoint, threshold, window_s)
        return _BREAKERS[endpoint]


def reset_breakers() -> None:
    """Close every breaker (a new run, or a resume once the endpoint is back)."""
    with _BREAKERS_LOCK:
        _BREAKERS.clear()
