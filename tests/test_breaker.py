"""The circuit breaker that turns an LLM outage into a stopped run, and closes again once the
endpoint is back."""

from __future__ import annotations

import threading
import time

import pytest

from cq2a.adapters.llm.breaker import CircuitBreaker, LLMUnavailable
from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.endpoint import Endpoint
from cq2a.adapters.llm.errors import LLMCallFailed
from cq2a.runtime.services import release_services
from cq2a.settings import LLMSpec, Settings
from cq2a.testing.scripted_server import ChatRequest, ScriptedLLMServer


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


# ---- half-open: an open breaker tries the endpoint again after its cool-down ----


def test_after_the_cool_down_one_trial_goes_through_and_its_failure_reopens(monkeypatch):
    now = [0.0]
    monkeypatch.setattr("cq2a.adapters.llm.breaker.time.monotonic", lambda: now[0])
    breaker = CircuitBreaker("api", threshold=2, window_s=600, cool_down_s=30)
    breaker.record_failure("500")
    with pytest.raises(LLMUnavailable):
        breaker.record_failure("500")
    now[0] = 29.0
    with pytest.raises(LLMUnavailable):
        breaker.check()  # still cooling down
    now[0] = 31.0
    assert breaker.check() is True and breaker.state == "half-open"
    with pytest.raises(LLMUnavailable):
        breaker.record_failure("500")  # a failed trial opens it again at once
    assert breaker.state == "open"
    now[0] = 60.0
    with pytest.raises(LLMUnavailable):
        breaker.check()  # a new cool-down, counted from the failed trial
    now[0] = 62.0
    assert breaker.check() is True
    breaker.record_success()
    assert breaker.state == "closed" and breaker.check() is False


def test_calls_during_a_trial_wait_for_its_verdict():
    breaker = CircuitBreaker("api", threshold=1, window_s=60, cool_down_s=0.0)
    with pytest.raises(LLMUnavailable):
        breaker.record_failure("500")
    assert breaker.check() is True  # the trial
    passed = threading.Event()
    waiter = threading.Thread(target=lambda: (breaker.check(), passed.set()))
    waiter.start()
    assert not passed.wait(0.2)  # neither refused nor let through while the trial runs
    breaker.record_success()
    assert passed.wait(2)
    waiter.join(2)


def test_a_trial_that_ends_without_a_verdict_leaves_the_next_call_to_try():
    breaker = CircuitBreaker("api", threshold=1, window_s=60, cool_down_s=0.0)
    with pytest.raises(LLMUnavailable):
        breaker.record_failure("500")
    with pytest.raises(TypeError), breaker.call():
        raise TypeError("a bug, not the endpoint's failure")
    assert breaker.state == "open"
    assert breaker.check() is True  # the next call is the trial, not stuck behind the first


# ---- through the client, against the scripted server ----


def _echo(request: ChatRequest, index: int) -> str:
    return f"echo {request.prompt_text[-2:]}"


def _client(server: ScriptedLLMServer, run_key: str, cool_down_s: float = 30.0) -> ChatClient:
    spec = LLMSpec(backend="compatible", base_url=server.base_url, model="m")
    settings = Settings(
        cache_path="off", llm_retries=0, breaker_failures=2, breaker_cool_down_s=cool_down_s
    )
    return ChatClient(spec, settings, endpoint=Endpoint(server.base_url, None), run_key=run_key)


@pytest.fixture
def fresh_breakers():
    release_services()
    yield
    release_services()


def test_after_an_outage_and_the_cool_down_a_call_succeeds_and_closes_the_breaker(
    fresh_breakers,
):
    with ScriptedLLMServer(_echo) as server:
        client = _client(server, run_key="run-1", cool_down_s=0.3)
        server.fail_next("500", times=2)  # the server is down
        with pytest.raises(LLMCallFailed):
            client.text("system", "u1")
        with pytest.raises(LLMUnavailable):
            client.text("system", "u2")  # the second failure in a row opens the breaker
        with pytest.raises(LLMUnavailable):
            client.text("system", "u3")  # refused without a request
        assert len(server.requests) == 2
        time.sleep(0.4)  # the server is back, and the cool-down is over
        assert client.text("system", "u4") == ["echo u4"]
        assert client.limits.breaker().state == "closed"
        assert client.text("system", "u5") == ["echo u5"]


def test_a_new_run_after_an_outage_is_not_stopped_by_the_earlier_runs_breaker(fresh_breakers):
    with ScriptedLLMServer(_echo) as server:
        first = _client(server, run_key="run-1")
        server.fail_next("500", times=2)
        with pytest.raises(LLMCallFailed):
            first.text("system", "u1")
        with pytest.raises(LLMUnavailable):
            first.text("system", "u2")
        second = _client(server, run_key="run-2")  # no keyless release_services() in between
        assert second.text("system", "u3") == ["echo u3"]
        with pytest.raises(LLMUnavailable):
            first.text("system", "u4")  # the first run's breaker is still cooling down
        release_services("run-1")  # the first run is over: its breaker goes with it
        assert _client(server, run_key="run-1").text("system", "u5") == ["echo u5"]
