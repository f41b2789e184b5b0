"""Software-under-test adapters: seq2seq batching, chat, callable and HTTP."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

from cq2a.adapters.sut import SUTError, SUTQuery, build_sut  # noqa: E402
from cq2a.adapters.sut.base import QASystem, SUTAnswer, answer_within  # noqa: E402
from cq2a.adapters.sut.callable import CallableSUT, takes_batch  # noqa: E402
from cq2a.adapters.sut.chat import ChatSUT  # noqa: E402
from cq2a.adapters.sut.http import HTTPSUT  # noqa: E402
from cq2a.adapters.sut.seq2seq import Seq2SeqSUT, pick_dtype, unifiedqa_input  # noqa: E402
from cq2a.settings import SUTSpec  # noqa: E402
from evals.sut_speed import random_t5, train_tokenizer  # noqa: E402

CONTEXTS = [
    "The Normans gave their name to Normandy, a region in France.",
    "Rollo was the leader of the Norse raiders and pirates from Denmark.",
    "Harvard is a private research university in Cambridge, Massachusetts.",
]
QUESTIONS = [
    "Where is Normandy?",
    "Who led the Norse raiders and pirates who came from Denmark, Iceland and Norway?",
    "Is Harvard private?",
    "In which city is the university?",
    "Who was Rollo?",
    "What region did the Normans name?",
    "Did the Norse come from Denmark?",
]


def queries(n: int) -> list[SUTQuery]:
    return [
        SUTQuery(question=QUESTIONS[i % len(QUESTIONS)], context=CONTEXTS[i % len(CONTEXTS)])
        for i in range(n)
    ]


# ---- seq2seq ----


def test_unifiedqa_input_uses_literal_backslash_n_and_lower_case() -> None:
    text = unifiedqa_input(" Where is Normandy? ", "Normandy is in FRANCE.")
    assert text == "where is normandy? \\n normandy is in france."
    assert "\n" not in text
    assert len(" \\n ") == 4


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return train_tokenizer(QUESTIONS + CONTEXTS)


@pytest.fixture(scope="module")
def tiny_t5(tokenizer: Any) -> Any:
    shape = {"d_model": 16, "d_ff": 32, "d_kv": 8, "num_layers": 2, "num_heads": 2}
    return random_t5(len(tokenizer), seed=0, **shape)


def counting(model: Any) -> list[int]:
    """Make ``model.generate`` record each call's batch size."""
    calls: list[int] = []
    generate = model.generate

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["input_ids"].shape[0])
        return generate(*args, **kwargs)

    model.generate = spy
    return calls


def test_seq2seq_generates_once_per_batch_in_input_order(tiny_t5: Any, tokenizer: Any) -> None:
    items = queries(10)
    sut = Seq2SeqSUT(
        "tiny", model=tiny_t5, tokenizer=tokenizer, device="cpu", batch_size=4, max_new_tokens=6
    )
    calls = counting(tiny_t5)
    batched = sut.answer(items)
    assert calls == [4, 4, 2]
    assert len(calls) == math.ceil(len(items) / sut.batch_size)
    sut.batch_size = 1
    one_by_one = [sut.answer([item])[0] for item in items]
    assert batched == one_by_one
    del tiny_t5.generate


class EchoModel(torch.nn.Module):
    """Generates its input back, so each answer shows which query it came from."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[int]] = []

    def generate(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **_: Any) -> Any:
        self.batches.append(attention_mask.sum(dim=1).tolist())
        return input_ids


def test_seq2seq_sorts_by_length_and_restores_order(tokenizer: Any) -> None:
    items = queries(7)
    model = EchoModel()
    sut = Seq2SeqSUT("echo", model=model, tokenizer=tokenizer, device="cpu", batch_size=3)
    answers = sut.answer(items)
    expected = [
        tokenizer.decode(
            tokenizer(unifiedqa_input(i.question, i.context))["input_ids"],
            skip_special_tokens=True,
        ).strip()
        for i in items
    ]
    assert answers == expected
    assert [len(batch) for batch in model.batches] == [3, 3, 1]
    lengths = [length for batch in model.batches for length in batch]
    assert lengths == sorted(lengths)


def test_seq2seq_flags_inputs_cut_to_its_window(tiny_t5: Any, tokenizer: Any) -> None:
    short = SUTQuery(question=QUESTIONS[0], context=CONTEXTS[0])
    long = SUTQuery(question=QUESTIONS[0], context=" ".join([CONTEXTS[0]] * 40))
    sut = Seq2SeqSUT("tiny", model=tiny_t5, tokenizer=tokenizer, device="cpu", max_input_tokens=64)
    assert sut.truncated([short, long]) == [False, True]


def test_seq2seq_dtype_choice() -> None:
    assert pick_dtype("cpu", "t5") is torch.float32


# ---- chat ----


class ScriptedChat(BaseChatModel):
    """Answers with the question it finds in the prompt; records every prompt."""

    prompts: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], *_: Any, **__: Any) -> ChatResult:
        prompt = str(messages[-1].content)
        self.prompts.append(prompt)
        question = prompt.split("Question:")[1].splitlines()[0].strip()
        reply = "Yes, it is." if question.startswith("Is ") else f"Answer: {question}"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(reply))])


def test_chat_sut_prompts_with_context_and_keeps_raw_answers() -> None:
    chat = ScriptedChat(prompts=[])
    items = queries(3)
    answers = ChatSUT(chat, name="scripted", max_concurrency=2).answer(items)
    # the oracle, not the adapter, decides how an answer compares ("Yes, it is." stays as said)
    assert answers == [f"Answer: {QUESTIONS[0]}", f"Answer: {QUESTIONS[1]}", "Yes, it is."]
    assert len(chat.prompts) == 3
    first = next(p for p in chat.prompts if QUESTIONS[0] in p)
    assert first.index(CONTEXTS[0]) < first.index(QUESTIONS[0])


# ---- callable ----


def per_query(question: str, context: str) -> str:
    return f'"{context.split()[1]}."'


def batch_answers(items: list[SUTQuery]) -> list[str]:
    return ["True" if item.question.startswith(("Is", "Did")) else "span" for item in items]


def test_callable_sut_per_query_and_batch() -> None:
    items = queries(7)
    assert not takes_batch(per_query) and takes_batch(batch_answers)
    assert CallableSUT(per_query).answer(items[:2]) == ['"Normans."', '"was."']
    answers = CallableSUT(batch_answers).answer(items)
    assert answers == ["span", "span", "True", "span", "span", "span", "True"]
    imported = CallableSUT("operator:concat")
    assert imported.answer(items[:1]) == [items[0].question + items[0].context]


def test_callable_sut_errors() -> None:
    with pytest.raises(SUTError, match="module:function"):
        CallableSUT("operator")
    with pytest.raises(SUTError, match="cannot import"):
        CallableSUT("operator:no_such_function")
    with pytest.raises(SUTError, match="1 answers for 2"):
        CallableSUT(lambda items: ["one"]).answer(queries(2))
    with pytest.raises(SUTError, match="ZeroDivisionError"):
        CallableSUT(lambda q, c: str(1 / 0)).answer(queries(1))


# ---- http ----


class Recorder:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []


def serve(behaviour: str) -> tuple[ThreadingHTTPServer, Recorder]:
    recorder = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            recorder.bodies.append(body)
            if behaviour == "slow":
                time.sleep(1.0)
                return None  # the client has given up; replying would hit a closed socket
            if behaviour == "broken":
                return self.reply(500, {"error": "model crashed"})
            if "items" in body:
                if behaviour == "single":
                    return self.reply(404, {"error": "not found"})
                answers = [f"{item['question'].split()[0]}." for item in body["items"]]
                return self.reply(200, {"answers": answers})
            answer = "No" if body["question"].startswith("Is") else body["question"].split()[0]
            self.reply(200, {"answer": answer})

        def reply(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, recorder


@pytest.fixture
def http_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, Recorder]]:
    server, recorder = serve(request.param)
    yield f"http://127.0.0.1:{server.server_address[1]}/answer", recorder
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("http_server", ["batch"], indirect=True)
def test_http_sut_batches(http_server: tuple[str, Recorder]) -> None:
    url, recorder = http_server
    sut = HTTPSUT(url, batch_size=3)
    words = ["Where", "Who", "Is", "In", "Who", "What", "Did"]
    assert sut.answer(queries(7)) == [f"{word}." for word in words]  # raw, as the SUT said
    assert [len(body["items"]) for body in recorder.bodies] == [3, 3, 1]
    assert sut.mode == "batch"


@pytest.mark.parametrize("http_server", ["single"], indirect=True)
def test_http_sut_falls_back_to_single_requests(http_server: tuple[str, Recorder]) -> None:
    url, recorder = http_server
    sut = HTTPSUT(url, batch_size=2)
    assert sut.answer(queries(3)) == ["Where", "Who", "No"]
    assert sut.mode == "single"
    assert len(recorder.bodies) == 4
    assert set(recorder.bodies[1]) == {"question", "context"}


@pytest.mark.parametrize("http_server", ["broken"], indirect=True)
def test_http_sut_reports_server_errors(http_server: tuple[str, Recorder]) -> None:
    with pytest.raises(SUTError, match="HTTP 500.*model crashed"):
        HTTPSUT(http_server[0]).answer(queries(1))


@pytest.mark.parametrize("http_server", ["slow"], indirect=True)
def test_http_sut_times_out(http_server: tuple[str, Recorder]) -> None:
    with pytest.raises(SUTError, match="cannot reach"):
        HTTPSUT(http_server[0], timeout_s=0.2).answer(queries(1))


def test_http_sut_unreachable_and_bad_url() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = server.server_address[1]
    server.server_close()
    with pytest.raises(SUTError, match="cannot reach"):
        HTTPSUT(f"http://127.0.0.1:{port}/", timeout_s=2).answer(queries(1))
    with pytest.raises(SUTError, match="http"):
        HTTPSUT("ftp://example")


# ---- build_sut ----


def test_build_sut_kinds() -> None:
    seq2seq = build_sut(SUTSpec(kind="seq2seq", model="some/model", batch_size=8, device="cpu"))
    assert isinstance(seq2seq, Seq2SeqSUT) and seq2seq.batch_size == 8
    assert isinstance(build_sut(SUTSpec(kind="callable", model="operator:concat")), CallableSUT)
    http = build_sut(SUTSpec(kind="http", model="http://127.0.0.1:9/answer"))
    assert isinstance(http, HTTPSUT)
    chat = build_sut(SUTSpec(kind="openai"), chat_factory=lambda spec: ScriptedChat(prompts=[]))
    assert isinstance(chat, ChatSUT) and isinstance(chat, QASystem)
    # without a factory, the one chat-model factory builds it (no request is sent here)
    remote = build_sut(
        SUTSpec(kind="openai", backend="compatible", base_url="http://127.0.0.1:9/v1", model="m")
    )
    assert isinstance(remote, ChatSUT) and str(remote._chat.openai_api_base).endswith(":9/v1")


# ---- a chat SUT against a server that fails or hangs ----


def _scripted_chat_sut(server: Any, max_concurrency: int, timeout_s: float = 30.0) -> ChatSUT:
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(
        model="m", base_url=server.base_url, api_key="k", max_retries=0, timeout=timeout_s
    )
    return ChatSUT(chat, name="scripted", max_concurrency=max_concurrency)


def test_one_failed_chat_request_fails_only_its_own_query() -> None:
    from cq2a.testing.scripted_server import ScriptedLLMServer

    with ScriptedLLMServer(lambda request, index: "Normandy") as server:
        server.fail_next("500")
        sut = _scripted_chat_sut(server, max_concurrency=1)  # one at a time: the first fails
        answers = answer_within(sut, queries(3), SUTSpec(kind="openai", timeout_s=30))
    assert isinstance(answers[0], SUTError) and "500" in str(answers[0])
    assert answers[1:] == ["Normandy", "Normandy"]


def test_a_chat_sut_that_fails_every_query_is_an_error() -> None:
    from cq2a.testing.scripted_server import ScriptedLLMServer

    with ScriptedLLMServer(lambda request, index: "Normandy") as server:
        server.fail_next("500", times=2)
        with pytest.raises(SUTError, match="500"):
            answer_within(
                _scripted_chat_sut(server, 1), queries(2), SUTSpec(kind="openai", timeout_s=30)
            )


def test_a_timed_out_chat_sut_sends_no_more_requests_and_leaves_no_thread() -> None:
    from cq2a.testing.scripted_server import ScriptedLLMServer

    with ScriptedLLMServer(lambda request, index: "Normandy", latency_s=1.0) as server:
        sut = _scripted_chat_sut(server, max_concurrency=2)
        with pytest.raises(SUTError, match="did not answer 6 questions"):
            answer_within(sut, queries(6), SUTSpec(kind="openai", timeout_s=0.3))
        time.sleep(1.6)  # the two requests in flight are answered after 1 s
        sent = len(server.requests)
    assert sent == 2  # the four queries still queued were never sent
    assert not [t for t in threading.enumerate() if t.name == "sut-call" and t.is_alive()]


# ---- the question alone (sut.input = "question"), and replies naming retrieved passages ----


def question_only(n: int) -> list[SUTQuery]:
    return [SUTQuery(question=q.question) for q in queries(n)]


def test_seq2seq_reads_the_question_alone(tokenizer: Any) -> None:
    assert unifiedqa_input(" Where is Normandy? ", None) == "where is normandy?"
    sut = Seq2SeqSUT("echo", model=EchoModel(), tokenizer=tokenizer, device="cpu", batch_size=2)
    answers = sut.answer(question_only(3))
    assert answers == [
        tokenizer.decode(tokenizer(q.lower())["input_ids"], skip_special_tokens=True).strip()
        for q in QUESTIONS[:3]
    ]
    assert not any("\\n" in str(answer) for answer in answers)


def test_chat_sut_asks_the_question_alone_with_its_own_prompt() -> None:
    from cq2a.testing.scripted_server import ScriptedLLMServer

    with ScriptedLLMServer(lambda request, index: "Normandy") as server:
        sut = _scripted_chat_sut(server, max_concurrency=2)
        assert sut.answer(question_only(2)) == ["Normandy", "Normandy"]
        prompts = [str(r.body["messages"][-1]["content"]) for r in server.requests]
    assert len(prompts) == 2 and all("Context:" not in p for p in prompts)
    assert any(QUESTIONS[1] in p for p in prompts)
    assert all(p.startswith("Answer the question from what you know.") for p in prompts)


def test_callable_sut_in_question_mode_and_with_retrieved_passages() -> None:
    seen: list[tuple[str, str | None]] = []

    def per_query_seen(question: str, context: str | None) -> dict[str, Any]:
        seen.append((question, context))
        return {"answer": " Rollo ", "contexts": ["Rollo led them."]}

    answers = CallableSUT(per_query_seen).answer(question_only(2))
    assert seen == [(QUESTIONS[0], None), (QUESTIONS[1], None)]
    assert answers == [SUTAnswer(answer="Rollo", contexts=["Rollo led them."])] * 2

    def batch(items: list[SUTQuery]) -> list[Any]:
        assert all(item.context is None for item in items)
        return ["plain", {"answer": None, "contexts": []}, {"answer": "no passages"}]

    assert CallableSUT(batch).answer(question_only(3)) == [
        "plain",
        SUTAnswer(answer="unanswerable", contexts=[]),
        "no passages",
    ]
    with pytest.raises(SUTError, match="non-string contexts"):
        CallableSUT(lambda items: [{"answer": "a", "contexts": [1]}]).answer(question_only(1))


def rag_server(mode: str) -> tuple[ThreadingHTTPServer, Recorder]:
    """A retrieval system over HTTP: it names the passage it read with every second answer."""
    recorder = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            recorder.bodies.append(body)
            if "items" in body:
                if mode == "single":
                    return self.reply(404, {})
                answers: list[Any] = [
                    {"answer": "Rollo", "contexts": [CONTEXTS[1]]} if n % 2 else "Normandy"
                    for n in range(len(body["items"]))
                ]
                return self.reply(200, {"answers": answers})
            self.reply(200, {"answer": "Rollo", "contexts": [CONTEXTS[1]], "score": 0.9})

        def reply(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, recorder


@pytest.mark.parametrize("mode", ["batch", "single"])
def test_http_sut_sends_the_question_alone_and_reads_retrieved_passages(mode: str) -> None:
    server, recorder = rag_server(mode)
    try:
        sut = HTTPSUT(f"http://127.0.0.1:{server.server_address[1]}/", batch_size=2)
        answers = sut.answer(question_only(3))
    finally:
        server.shutdown()
        server.server_close()
    retrieved = SUTAnswer(answer="Rollo", contexts=[CONTEXTS[1]])
    if mode == "batch":
        assert answers == ["Normandy", retrieved, "Normandy"]
        assert [item for body in recorder.bodies for item in body["items"]] == [
            {"question": q} for q in QUESTIONS[:3]
        ]
    else:
        assert answers == [retrieved] * 3
        assert sorted(recorder.bodies[1:], key=str) == sorted(
            ({"question": q} for q in QUESTIONS[:3]), key=str
        )


def test_the_bm25_rag_sut_reads_the_passages_it_retrieved_and_names_them() -> None:
    from cq2a.adapters.sut.rag import RetrievalSUT
    from cq2a.testing.scripted_server import ScriptedLLMServer

    with ScriptedLLMServer(lambda request, index: " Rollo ") as server:
        spec = SUTSpec(
            kind="rag", model="bm25:m", backend="compatible", base_url=server.base_url, top_k=1
        )
        sut = build_sut(spec)
        assert isinstance(sut, RetrievalSUT) and sut.name == "rag:bm25:m"
        sut.index([(f"c{n}", text) for n, text in enumerate(CONTEXTS)])
        answers = sut.answer([SUTQuery(question=QUESTIONS[1]), SUTQuery(question="zebra?")])
        prompts = [str(r.body["messages"][-1]["content"]) for r in server.requests]
        models = {r.body["model"] for r in server.requests}
    assert answers == [
        SUTAnswer(answer="Rollo", contexts=[CONTEXTS[1]]),
        SUTAnswer(answer="Rollo", contexts=[]),  # nothing shares a term with it
    ]
    assert models == {"m"}
    assert any(f"[1] {CONTEXTS[1]}" in p and QUESTIONS[1] in p for p in prompts)
    assert any("(none)" in p for p in prompts)
    with pytest.raises(SUTError, match="unknown retriever"):
        build_sut(SUTSpec(kind="rag", model="dense"))
