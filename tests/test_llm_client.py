"""The chat client against a server with slots, as llama.cpp's native server has them."""

from __future__ import annotations

import threading

import pytest
from pydantic import BaseModel, model_validator

from cq2a.adapters.fanout import parallel_map
from cq2a.adapters.llm.cache import LLMCache
from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.endpoint import Endpoint, resolve_endpoint
from cq2a.adapters.llm.errors import LLMCallFailed
from cq2a.adapters.llm.limits import Slots
from cq2a.adapters.llm.local_server import LocalLLMServer
from cq2a.adapters.llm.structured import Malformed, Until, parse_structured
from cq2a.adapters.llm.usage import SpendingMeter, Usage, tally_usage
from cq2a.runtime.services import release_services
from cq2a.settings import LLMSpec, Settings
from cq2a.testing.scripted_server import (
    ChatRequest,
    CutOff,
    FaultPlan,
    RecordedRequest,
    ScriptedLLMServer,
)


def _seeded(request: ChatRequest, index: int) -> str:
    return f"seed {request.seed + index if request.seed is not None else None}"


def _client(server: ScriptedLLMServer, slots: int | None, **settings: object) -> ChatClient:
    spec = LLMSpec(backend="compatible", base_url=server.base_url, model="m")
    return ChatClient(
        spec,
        Settings(cache_path="off", seed=7, **settings),  # type: ignore[arg-type]
        endpoint=Endpoint(server.base_url, slots),
    )


def test_votes_beyond_the_slots_go_as_several_n_requests_with_consecutive_seeds():
    with ScriptedLLMServer(_seeded, slots=2) as server:
        texts = _client(server, slots=2).text("system", "user", n=5)
    assert texts == [f"seed {7 + i}" for i in range(5)]
    assert [(r.n, r.body["seed"], r.status) for r in server.requests] == [
        (2, 7, 200),
        (2, 9, 200),
        (1, 11, 200),
    ]


def test_a_server_with_as_many_slots_as_votes_answers_them_in_one_request():
    with ScriptedLLMServer(_seeded, slots=5) as server:
        texts = _client(server, slots=5).text("system", "user", n=5)
    assert len(texts) == 5 and len(set(texts)) == 5
    assert [r.n for r in server.requests] == [5]


def test_choices_in_flight_never_exceed_the_servers_slots():
    with ScriptedLLMServer(_seeded, slots=3, latency_s=0.15) as server:
        client = _client(server, slots=3)
        threads = [
            threading.Thread(target=client.text, args=("system", f"user {i}"), kwargs={"n": n})
            for i, n in enumerate([2, 1, 3, 1, 2, 1])
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        records = server.requests
    assert all(r.status == 200 for r in records)
    moments = sorted({r.started for r in records} | {r.ended - 1e-6 for r in records})
    in_flight = [sum(r.n for r in records if r.started <= t < r.ended) for t in moments]
    assert max(in_flight) == 3  # slots were shared by several requests, never overbooked


def test_slots_hold_waits_until_enough_units_are_free():
    slots = Slots(3)
    order: list[str] = []

    def take_two() -> None:
        with slots.hold(2):
            order.append("b")

    with slots.hold(2):
        waiter = threading.Thread(target=take_two)
        waiter.start()
        waiter.join(0.2)
        assert waiter.is_alive()  # 1 unit free, 2 needed
        order.append("a")
    waiter.join(2)
    assert order == ["a", "b"]


def test_an_attached_server_reports_its_slots():
    with ScriptedLLMServer(_seeded, slots=6) as server:
        attached = LocalLLMServer.attach(server.base_url, alias="scripted-model")
        assert attached.slots == 6
    with ScriptedLLMServer(_seeded) as plain:  # no /props: one slot is assumed
        assert LocalLLMServer.attach(plain.base_url, alias="scripted-model").slots == 1


def test_a_compatible_llama_cpp_server_is_known_by_its_slots():
    with ScriptedLLMServer(_seeded, slots=3) as server:
        spec = LLMSpec(backend="compatible", base_url=server.base_url, model="m")
        assert resolve_endpoint(spec) == Endpoint(server.base_url, 3)
    with ScriptedLLMServer(_seeded) as plain:
        spec = LLMSpec(backend="compatible", base_url=plain.base_url, model="m")
        assert resolve_endpoint(spec) == Endpoint(plain.base_url, None)


class Colour(BaseModel):
    name: str


def test_structured_output_may_come_fenced_but_not_truncated():
    assert parse_structured('```json\n{"name": "red"}\n```', Colour) == Colour(name="red")
    assert parse_structured(' {"name": "red"} ', Colour) == Colour(name="red")
    truncated = parse_structured('{"name": "re', Colour)
    assert isinstance(truncated, Malformed) and truncated.raw == '{"name": "re'
    assert isinstance(parse_structured('{"colour": "red"}', Colour), Malformed)


@pytest.mark.parametrize("fault", ["empty_choices", "malformed"])
def test_an_unusable_reply_is_sent_again_llm_retries_times_then_fails_the_call(fault):
    release_services()  # a fresh breaker for this server
    with ScriptedLLMServer(_seeded, faults=FaultPlan(rate=1.0, kinds=[fault])) as server:
        client = _client(server, slots=None, llm_retries=2, breaker_failures=5)
        with pytest.raises(LLMCallFailed, match="failed 3 times"):
            client.text("system", "user")
        assert [r.fault for r in server.requests] == [fault] * 3


def test_usage_is_tallied_across_parallel_map_threads_and_cache_hits(tmp_path):
    cache = LLMCache(tmp_path / "cache.sqlite")
    with ScriptedLLMServer(_seeded) as server:
        spec = LLMSpec(backend="compatible", base_url=server.base_url, model="m")
        client = ChatClient(
            spec, Settings(seed=7), endpoint=Endpoint(server.base_url, None), cache=cache
        )
        prompts = [f"user {i}" for i in range(3)]
        with tally_usage() as outer:
            with tally_usage() as first:
                parallel_map(lambda user: client.text("system", user, n=2), prompts, 3)
            with tally_usage() as replay:
                parallel_map(lambda user: client.text("system", user, n=2), prompts, 3)
    cache.close()
    assert (first.total.requests, first.total.cached) == (3, 0)
    assert first.total.prompt_tokens > 0
    assert replay.total == Usage(cached=6)
    assert outer.total == first.total + replay.total


class MeterWithABug(SpendingMeter):
    def record(self, usage: Usage) -> None:
        raise TypeError("a bug in our own accounting")


def test_a_programming_error_propagates_at_once_unretried_and_leaves_the_breaker_closed():
    release_services()
    with ScriptedLLMServer(_seeded) as server:
        spec = LLMSpec(backend="compatible", base_url=server.base_url, model="m")
        settings = Settings(cache_path="off", seed=7, llm_retries=2, breaker_failures=1)
        buggy = ChatClient(
            spec, settings, endpoint=Endpoint(server.base_url, None), meter=MeterWithABug()
        )
        with pytest.raises(TypeError, match="a bug in our own accounting"):
            buggy.text("system", "user")
        assert len(server.requests) == 1  # not sent again as if the reply were unusable
        # a breaker that opens at one failed call did not count the bug as one
        assert _client(server, slots=None, breaker_failures=1).text("system", "user") == ["seed 7"]


class Strict(BaseModel):
    name: str

    @model_validator(mode="after")
    def broken(self) -> Strict:
        raise TypeError("a bug in our own schema")


def test_a_structured_reply_cut_at_its_token_limit_is_malformed_and_asked_again():
    # the SDK refuses to parse a schema reply whose finish_reason is "length"
    # (LengthFinishReasonError): one such reply must not fail the call, let alone the run
    replies = [CutOff(text='{"name": "re'), '{"name": "red"}']
    with ScriptedLLMServer(lambda request, index: replies.pop(0)) as server:
        client = _client(server, slots=None, malformed_retries=1)
        assert client.structured("system", "user", Colour) == [Colour(name="red")]
        assert len(server.requests) == 2
    with ScriptedLLMServer(lambda request, index: CutOff(text='{"name": "re')) as server:
        client = _client(server, slots=None, malformed_retries=0)
        (cut,) = client.structured("system", "user", Colour)
        assert isinstance(cut, Malformed) and cut.raw == '{"name": "re'


class Palette(BaseModel):
    colours: list[str]


def test_max_items_bounds_the_lists_of_the_requested_schema_not_of_the_parse():
    reply = '{"colours": ["red", "blue"]}'  # a server that does not honour the bound
    with ScriptedLLMServer(lambda request, index: reply) as server:
        client = _client(server, slots=None)
        (palette,) = client.structured("system", "user", Palette, max_items=1)
        (unbounded,) = client.structured("system", "user", Palette, seed_offset=1)
        sent = [r.body["response_format"]["json_schema"]["schema"] for r in server.requests]
    assert palette == Palette(colours=["red", "blue"])
    assert sent[0]["properties"]["colours"]["maxItems"] == 1
    assert "maxItems" not in sent[1]["properties"]["colours"] and unbounded == palette


def test_a_schema_that_raises_a_programming_error_is_not_asked_again():
    with ScriptedLLMServer(lambda request, index: '{"name": "red"}') as server:
        client = _client(server, slots=None, llm_retries=2, malformed_retries=2)
        with pytest.raises(TypeError, match="a bug in our own schema"):
            client.structured("system", "user", Strict)
        assert len(server.requests) == 1


def test_a_reply_without_choices_is_unusable_sent_again_then_fails_the_call(monkeypatch):
    # langchain_openai raises TypeError (null 'choices'): a reply error, known by where it is raised
    release_services()

    def no_choices(self: ScriptedLLMServer, record: RecordedRequest, choices: list) -> dict:
        return {"id": "chatcmpl-none", "object": "chat.completion"}

    monkeypatch.setattr(ScriptedLLMServer, "_envelope", no_choices)
    with ScriptedLLMServer(_seeded) as server:
        client = _client(server, slots=None, llm_retries=2, breaker_failures=5)
        with pytest.raises(LLMCallFailed, match="failed 3 times.*null value for 'choices'"):
            client.text("system", "user")
        assert len(server.requests) == 3


class _Explained(BaseModel):
    question: str
    explanation: str


_WHOLE = {
    "question": "Which region did the Normans give their name to?",
    "explanation": "The passage says they gave their name to Normandy, a region in France, "
    "in the 10th and 11th centuries, as its first sentence tells.",
}


def _names_normandy(output: dict) -> bool:
    return "Normandy" in output.get("explanation", "").split(",")[0]


def test_a_streamed_choice_stops_once_it_has_written_enough_and_replays_from_the_cache(tmp_path):
    until = Until(name="names Normandy", enough=_names_normandy)
    with ScriptedLLMServer(lambda request, index: _WHOLE, stream_delay_s=0.02) as server:
        spec = LLMSpec(backend="compatible", base_url=server.base_url, model="m")
        settings = Settings(cache_path=str(tmp_path / "cache.sqlite"), seed=7)
        client = ChatClient(spec, settings, endpoint=Endpoint(server.base_url, 5))
        cache = LLMCache(tmp_path / "cache.sqlite")
        client.choices.cache = cache
        with tally_usage() as usage:
            (first,) = client.structured("system", "user", _Explained, until=until)
        (whole,) = client.structured("system", "user", _Explained)  # not stopped: another key
        never = Until(name="never", enough=lambda output: False)
        (streamed_whole,) = client.structured("system", "user", _Explained, until=never)
        (replayed,) = client.structured("system", "user", _Explained, until=until)
        stopped, sent, streamed = server.requests
    assert isinstance(first, _Explained) and first.question == _WHOLE["question"]
    assert first.explanation.rstrip() == "The passage says they gave their name to Normandy,"
    assert whole == streamed_whole == _Explained(**_WHOLE)
    assert stopped.body["stream"] and not sent.body.get("stream") and streamed.body["stream"]
    # the server stopped a few events after the client went, long before the reply's end
    assert stopped.streamed < streamed.streamed - 10
    assert usage.total.completion_tokens < streamed.streamed - 10  # a chunk counts a token
    assert replayed == first  # the stopped choice is replayed from the cache, not asked again


def test_a_word_still_being_written_is_not_enough_to_stop():
    until = Until(name="names Norman", enough=lambda o: "Norman" in o["explanation"].split())
    start = '{"question": "Q?", "explanation": "gave their name to Norman'
    assert until.reached(start) is None  # "Normandy" may be coming
    assert until.reached(start + "dy") is None
    kept = until.reached(start + " ")
    assert kept is not None and parse_structured(kept, _Explained) == _Explained(
        question="Q?", explanation="gave their name to Norman "
    )
