"""The circuit breaker that turns an LLM outage into a stopped run."""

from __future__ import annotations

import pytest

from cq2a.adapters.llm.breaker import CircuitBreaker, LLMUnavailable


def test_breaker_opens_at_the_threshold_of_failures_in_a_row():
    breaker = CircuitBreaker("http://127.0.0.1:9/v1", threshold=3, window_s=60)
    breaker.record_failure("connection refused")
    breaker.record_failure("connection refused")
    breaker.check()  # two failures: still closed
    with pytest.raises(LLMUnavailable, match=r"127\.0\.0\.1:9.*3 calls in a row.*refused"):
        breaker.record_failure("connection refused")
    with pytest.raises(LLMUnavailable):
        breaker.check()  # and it stays open


def test_a_success_between_failures_keeps_the_breaker_closed():
    breaker = CircuitBreaker("api", threshold=2, window_s=60)
    for _ in range(5):
        breaker.record_failure("500")
        breaker.record_success()
    breaker.check()


def test_failures_older_than_the_window_do_not_add_up(monkeypatch):
    clock = iter([0.0, 100.0, 120.0])
    monkeypatch.setattr("cq2a.adapters.llm.breaker.time.monotonic", lambda: next(clock))
    breaker = CircuitBreaker("api", threshold=2, window_s=50)
    breaker.record_failure("timeout")
    breaker.record_failure("timeout")  # 100 s after the first: a run of one
    breaker.check()
    with pytest.raises(LLMUnavailable):  # 20 s after the second: a run of two
        breaker.record_failure("timeout")
