"""The scripted OpenAI-compatible server, over real HTTP: raw requests and ChatOpenAI."""

import json
import math
import re
import threading
import time
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr, ValidationError

from cq2a.testing.scripted_server import (
    ChatRequest,
    FaultPlan,
    Rules,
    ScriptedLLMServer,
    estimate_tokens,
)


class Person(BaseModel):
    name: str
    age: int


ADA_PERSON = Person(name="Ada", age=36)
ADA = ADA_PERSON.model_dump()
HTTP = httpx.Client(timeout=5)  # one client: building one per request costs ~40 ms


def post(server: ScriptedLLMServer, prompt: str, **body: Any) -> httpx.Response:
    payload = {"model": "m", "messages": [{"role": "user", "content": prompt}], **body}
    return HTTP.post(f"{server.base_url}/chat/completions", json=payload)


def content_of(response: httpx.Response, index: int = 0) -> str:
    return response.json()["choices"][index]["message"]["content"]


def chat(server: ScriptedLLMServer, **kwargs: Any) -> ChatOpenAI:
    kwargs.setdefault("max_retries", 0)
    return ChatOpenAI(base_url=server.base_url, api_key=SecretStr("x"), model="m", **kwargs)


def test_models_endpoint_lists_one_model(scripted_llm: ScriptedLLMServer) -> None:
    data = HTTP.get(f"{scripted_llm.base_url}/models").json()["data"]
    assert [m["id"] for m in data] == ["scripted-model"]


def test_rules_match_in_order_with_times_regex_callable_and_default(
    scripted_llm: ScriptedLLMServer,
) -> None:
    scripted_llm.rules.on("capital", "Paris", times=1).on(re.compile(r"\bage\b"), ADA)
    scripted_llm.rules.on("echo", lambda req, i: req.prompt_text.upper()).default("fallback")
    assert content_of(post(scripted_llm, "the capital of France?")) == "Paris"
    assert content_of(post(scripted_llm, "the capital again?")) == "fallback"
    assert json.loads(content_of(post(scripted_llm, "what age is she"))) == ADA
    assert content_of(post(scripted_llm, "echo me")) == "ECHO ME"


def test_unmatched_prompt_fails_loudly_without_client_retries(
    scripted_llm: ScriptedLLMServer,
) -> None:
    scripted_llm.rules.on("known", "yes")
    response = post(scripted_llm, "an unexpected prompt")
    assert response.status_code == 500
    assert "an unexpected prompt" in response.json()["error"]["message"]
    with pytest.raises(openai.InternalServerError):
        chat(scripted_llm, max_retries=2).invoke("another unexpected prompt")
    assert len(scripted_llm.requests) == 2


def test_prompt_text_joins_all_message_contents() -> None:
    request = ChatRequest.from_body(
        {
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "part"}]},
                {"role": "assistant", "content": None},
            ],
            "max_completion_tokens": 7,
        }
    )
    assert request.prompt_text == "sys\npart\n"
    assert request.max_tokens == 7


def test_n_choices_each_ask_the_responder_with_their_index(
    scripted_llm: ScriptedLLMServer,
) -> None:
    scripted_llm.rules.default(lambda req, i: f"answer {i}")
    result = chat(scripted_llm, n=3).generate([[HumanMessage("q")]])
    assert [g.text for g in result.generations[0]] == ["answer 0", "answer 1", "answer 2"]
    assert scripted_llm.requests[0].n == 3
    assert scripted_llm.requests[0].choices == 3


def test_n_not_honoured_returns_one_choice() -> None:
    with ScriptedLLMServer(Rules().default("only"), honour_n=False) as server:
        response = post(server, "q", n=5)
        assert [c["message"]["content"] for c in response.json()["choices"]] == ["only"]
        assert (server.requests[0].n, server.requests[0].choices) == (5, 1)


def test_dict_reply_becomes_a_tool_call_when_tools_are_offered(
    scripted_llm: ScriptedLLMServer,
) -> None:
    scripted_llm.rules.on("who", ADA)
    message = chat(scripted_llm).bind_tools([Person], tool_choice="Person").invoke("who")
    assert message.tool_calls[0]["name"] == "Person"
    assert message.tool_calls[0]["args"] == ADA
    structured = chat(scripted_llm).with_structured_output(Person, method="function_calling")
    assert structured.invoke("who is she") == ADA_PERSON
    raw = scripted_llm.requests[-1]
    assert raw.body["tool_choice"]["function"]["name"] == "Person"


def test_a_json_reply_is_cut_to_the_bounds_of_the_requested_schema() -> None:
    reply = {"names": ["Ada", "Grace"], "note": "a long note", "age": 36}
    schema = {
        "properties": {
            "names": {"type": "array", "maxItems": 1},
            "note": {"type": "string", "maxLength": 0},
            "age": {"type": "integer"},
        }
    }
    bounded = {"type": "json_schema", "json_schema": {"name": "P", "schema": schema}}
    with ScriptedLLMServer(Rules().default(reply)) as server:
        cut = json.loads(content_of(post(server, "q", response_format=bounded)))
        whole = json.loads(content_of(post(server, "q")))
    # what a grammar built from the schema lets the model write
    assert cut == {"names": ["Ada"], "note": "", "age": 36} and whole == reply


def test_response_format_json_schema_and_json_object(scripted_llm: ScriptedLLMServer) -> None:
    scripted_llm.rules.on("who", ADA)
    structured = chat(scripted_llm).with_structured_output(Person, method="json_schema")
    assert structured.invoke("who") == ADA_PERSON
    assert scripted_llm.requests[-1].body["response_format"]["type"] == "json_schema"
    response = post(scripted_llm, "who", response_format={"type": "json_object"})
    assert json.loads(content_of(response)) == ADA


def test_token_counts_are_recorded_and_reported(scripted_llm: ScriptedLLMServer) -> None:
    scripted_llm.rules.default("twelve chars")
    message = chat(scripted_llm, n=2).invoke([("system", "be brief"), ("user", "hello there")])
    record = scripted_llm.requests[0]
    assert record.prompt_tokens == math.ceil(len("be brief\nhello there") / 4) == 5
    assert record.completion_tokens == 2 * estimate_tokens("twelve chars") == 6
    usage = message.usage_metadata
    assert usage is not None
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (5, 6, 11)


def test_latency_is_applied_before_answering() -> None:
    with ScriptedLLMServer(Rules().default("ok"), latency_s=0.2) as server:
        started = time.perf_counter()
        post(server, "q")
        assert time.perf_counter() - started >= 0.2
        record = server.requests[0]
        assert record.ended - record.started >= 0.2


def test_a_stream_goes_as_server_sent_events_a_token_each_one_choice_only(
    scripted_llm: ScriptedLLMServer,
) -> None:
    scripted_llm.rules.default("Normandy, a region")
    response = post(scripted_llm, "q", stream=True, stream_options={"include_usage": True})
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    events = [json.loads(line) for line in lines[:-1]]
    pieces = [e["choices"][0]["delta"].get("content") for e in events if e["choices"]]
    assert pieces == ["", "Norm", "andy", ", a ", "regi", "on", None]
    assert events[-1]["usage"]["completion_tokens"] == 5
    (record,) = scripted_llm.requests
    assert record.streamed == len(events) and record.completion_tokens == 5
    refused = post(scripted_llm, "q", stream=True, n=2)
    assert refused.status_code == 400 and "one choice" in refused.json()["error"]["message"]


def test_fault_500_and_429_statuses_are_recorded(scripted_llm: ScriptedLLMServer) -> None:
    scripted_llm.rules.default("ok")
    scripted_llm.fail_next("500")
    scripted_llm.fail_next("429")
    assert post(scripted_llm, "q").status_code == 500
    limited = post(scripted_llm, "q")
    assert limited.status_code == 429
    assert float(limited.headers["Retry-After"]) == pytest.approx(0.05)
    assert post(scripted_llm, "q").status_code == 200
    records = scripted_llm.requests
    assert [(r.status, r.fault) for r in records] == [(500, "500"), (429, "429"), (200, None)]


def test_openai_client_retries_a_429_then_succeeds(scripted_llm: ScriptedLLMServer) -> None:
    scripted_llm.rules.on("q", "after retry", times=1)
    scripted_llm.fail_next("429", times=2)
    assert chat(scripted_llm, max_retries=2).invoke("q").content == "after retry"
    assert [r.status for r in scripted_llm.requests] == [429, 429, 200]


def test_timeout_fault_holds_the_request_until_the_client_gives_up() -> None:
    with ScriptedLLMServer(Rules().default("late"), timeout_hold_s=3.0) as server:
        server.fail_next("timeout")
        started = time.perf_counter()
        with pytest.raises(openai.APITimeoutError):
            chat(server, timeout=0.3).invoke("q")
        assert 0.3 <= time.perf_counter() - started < 2.0
        assert server.requests[0].fault == "timeout"


def test_timeout_fault_closes_without_answer_after_the_hold() -> None:
    with ScriptedLLMServer(Rules().default("late"), timeout_hold_s=0.1) as server:
        server.fail_next("timeout")
        with pytest.raises(httpx.RemoteProtocolError):
            post(server, "q")
        assert server.requests[0].status == 0


def test_malformed_body_raises_in_the_client(scripted_llm: ScriptedLLMServer) -> None:
    scripted_llm.rules.default("ok")
    scripted_llm.fail_next("malformed")
    response = post(scripted_llm, "q")
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        response.json()
    scripted_llm.fail_next("malformed")
    with pytest.raises(ValueError):
        chat(scripted_llm).invoke("q")


def test_empty_choices_fault(scripted_llm: ScriptedLLMServer) -> None:
    scripted_llm.rules.default("ok")
    scripted_llm.fail_next("empty_choices")
    assert post(scripted_llm, "q").json()["choices"] == []
    scripted_llm.fail_next("empty_choices")
    with pytest.raises(IndexError):
        chat(scripted_llm).invoke("q")
    assert [r.choices for r in scripted_llm.requests] == [0, 0]


def test_malformed_content_fails_structured_output(scripted_llm: ScriptedLLMServer) -> None:
    scripted_llm.rules.default(ADA)
    scripted_llm.fail_next("malformed_content")
    structured = chat(scripted_llm).with_structured_output(Person, method="json_schema")
    with pytest.raises(ValidationError):
        structured.invoke("who")
    assert structured.invoke("who") == ADA_PERSON
    assert [r.fault for r in scripted_llm.requests] == ["malformed_content", None]


def fault_sequence(seed: int) -> list[str | None]:
    plan = FaultPlan(rate=0.5, kinds=["500", "429", "empty_choices"], seed=seed)
    with ScriptedLLMServer(Rules().default("ok"), faults=plan, retry_after_s=0.01) as server:
        for _ in range(30):
            post(server, "q")
        return [r.fault for r in server.requests]


def test_fault_plan_is_deterministic_for_a_seed() -> None:
    first, again, other = fault_sequence(7), fault_sequence(7), fault_sequence(8)
    assert first == again
    assert first != other
    assert 5 < sum(f is not None for f in first) < 25
    assert {f for f in first if f} <= {"500", "429", "empty_choices"}


def test_unknown_fault_kind_is_rejected(scripted_llm: ScriptedLLMServer) -> None:
    with pytest.raises(ValueError):
        scripted_llm.fail_next("explode")
    with pytest.raises(ValueError):
        FaultPlan(rate=0.1, kinds=["explode"], seed=0)


def test_concurrent_requests_are_all_recorded_and_reset_clears(
    scripted_llm: ScriptedLLMServer,
) -> None:
    # served one at a time, 8 requests would take 8 latencies; the margin below that is wide
    # enough for a loaded 2-core machine (0.1 s latencies once took 1.16 s here)
    scripted_llm.latency_s = 0.5
    scripted_llm.rules.default(lambda req, i: req.prompt_text)
    results: list[str] = []
    threads = [
        threading.Thread(target=lambda k=k: results.append(content_of(post(scripted_llm, str(k)))))
        for k in range(8)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert time.perf_counter() - started < 0.5 * 8
    assert sorted(results) == [str(k) for k in range(8)]
    assert len(scripted_llm.requests) == 8
    scripted_llm.fail_next("500")
    scripted_llm.reset()
    assert scripted_llm.requests == []
    assert post(scripted_llm, "after reset").status_code == 200
