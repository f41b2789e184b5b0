"""A scripted OpenAI-compatible chat server for tests and benchmarks.

Serves ``GET /v1/models`` and ``POST /v1/chat/completions`` on 127.0.0.1 (a free port), answers
with replies chosen by a responder, records every chat request, and can add latency and faults.

Token counts are a deterministic estimate, ``ceil(chars / 4)``: prompt tokens over
``ChatRequest.prompt_text``, completion tokens over each choice's content (or tool-call arguments).
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import BaseModel, Field


class CutOff(BaseModel):
    """A reply the server cut at its token limit (``finish_reason`` "length"): ``text`` is what
    it wrote before the cut."""

    text: str


Reply = str | dict[str, Any] | list[Any] | CutOff
Responder = Callable[["ChatRequest", int], Reply]
FAULT_KINDS = ("500", "429", "timeout", "malformed", "empty_choices", "malformed_content")


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def within_schema(reply: dict[str, Any], response_format: dict[str, Any] | None) -> dict[str, Any]:
    """A scripted JSON reply cut to the ``maxItems`` and ``maxLength`` of the requested schema's
    top-level properties: a llama.cpp server turns the schema into a grammar, and its model can
    write nothing longer."""
    schema = ((response_format or {}).get("json_schema") or {}).get("schema") or {}
    bounded = dict(reply)
    for name, prop in (schema.get("properties") or {}).items():
        value = bounded.get(name)
        if isinstance(value, list) and "maxItems" in prop:
            bounded[name] = value[: prop["maxItems"]]
        if isinstance(value, str) and "maxLength" in prop:
            bounded[name] = value[: prop["maxLength"]]
    return bounded


class ChatRequest(BaseModel):
    """One chat-completions request body, as the responder sees it."""

    messages: list[dict[str, Any]] = Field(default_factory=list)
    model: str = ""
    n: int = 1
    temperature: float | None = None
    seed: int | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    response_format: dict[str, Any] | None = None
    max_tokens: int | None = None
    stream: bool = False
    raw: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> ChatRequest:
        fields = {k: v for k, v in body.items() if k in cls.model_fields and v is not None}
        fields.setdefault("max_tokens", body.get("max_completion_tokens"))
        return cls(**fields, raw=body)

    @property
    def prompt_text(self) -> str:
        """All message contents, in order, joined by newlines: what rules match against."""
        return "\n".join(_text_of(m.get("content")) for m in self.messages)

    def tool_name(self) -> str | None:
        """The function a dict reply should call: the forced tool_choice, else the only tool."""
        if isinstance(self.tool_choice, dict):
            return self.tool_choice.get("function", {}).get("name")
        if self.tools and len(self.tools) == 1 and self.tool_choice != "none":
            return self.tools[0].get("function", {}).get("name")
        return None


class RecordedRequest(BaseModel):
    """What the server saw and answered for one chat request (``status`` 0: closed unanswered)."""

    body: dict[str, Any]
    n: int
    choices: int = 0
    status: int = 0
    fault: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started: float
    ended: float = 0.0
    #: Events sent of a streamed reply.
    streamed: int = 0


class UnmatchedPrompt(LookupError):
    """No rule matched the prompt; the server answers HTTP 500 so the test fails loudly."""


class _Rule:
    def __init__(self, pattern: str | re.Pattern[str] | None, reply: Any, times: int | None):
        self.pattern, self.reply, self.left = pattern, reply, times

    def matches(self, text: str) -> bool:
        if self.left is not None and self.left <= 0:
            return False
        if isinstance(self.pattern, re.Pattern):
            return self.pattern.search(text) is not None
        return self.pattern is None or self.pattern in text


class Rules:
    """Ordered rules: the first rule whose pattern occurs in ``prompt_text`` gives the reply.

    A pattern is a substring or a compiled regex (``search``). A reply is a str, a dict/list, or
    a callable ``(request, choice_index) -> str | dict``. A rule with ``times`` matches that many
    choices (each of ``n`` choices uses one), then stops matching.
    """

    def __init__(self) -> None:
        self._rules: list[_Rule] = []
        self._default: _Rule | None = None
        self._lock = threading.Lock()

    def on(self, pattern: str | re.Pattern[str], reply: Any, times: int | None = None) -> Rules:
        self._rules.append(_Rule(pattern, reply, times))
        return self

    def default(self, reply: Any) -> Rules:
        self._default = _Rule(None, reply, None)
        return self

    def __call__(self, request: ChatRequest, index: int) -> Reply:
        text = request.prompt_text
        with self._lock:
            rule = next((r for r in self._rules if r.matches(text)), self._default)
            if rule is None:
                raise UnmatchedPrompt(f"no rule matched the prompt starting {text[:120]!r}")
            if rule.left is not None:
                rule.left -= 1
        return rule.reply(request, index) if callable(rule.reply) else rule.reply


class FaultPlan:
    """Fails a seeded-random share ``rate`` of requests with a kind drawn from ``kinds``.

    The sequence of decisions is deterministic for a seed; concurrent requests take them in
    arrival order.
    """

    def __init__(self, rate: float, kinds: list[str], seed: int = 0) -> None:
        unknown = set(kinds) - set(FAULT_KINDS)
        if unknown or not kinds:
            raise ValueError(f"fault kinds must be among {FAULT_KINDS}, got {kinds}")
        self.rate, self.kinds = rate, list(kinds)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def draw(self) -> str | None:
        with self._lock:
            return self._rng.choice(self.kinds) if self._rng.random() < self.rate else None


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, keep-alive clients stall ~40 ms each.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_GET(self) -> None:
        slots = self.server.owner.slots
        if self.path.rstrip("/") == "/props" and slots is not None:
            return self.send_raw(200, {"total_slots": slots})
        if self.path.rstrip("/") != "/v1/models":
            return self.send_raw(404, _error(f"no route {self.path}", "not_found"))
        model = {"id": self.server.owner.model, "object": "model", "owned_by": "scripted"}
        self.send_raw(200, {"object": "list", "data": [model]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self.send_raw(404, _error(f"no route {self.path}", "not_found"))
        self.server.owner._answer(self, raw)

    def send_raw(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        """Send ``payload`` as JSON, or as is when it is already bytes."""
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedLLMServer


class ScriptedLLMServer:
    """An OpenAI-compatible chat server answering from ``responder``; use as a context manager.

    ``honour_n=False`` returns one choice whatever ``n`` asks, like llama-cpp-python's server.
    ``slots=N`` behaves like llama.cpp's native server with ``--parallel N``: ``GET /props``
    reports ``total_slots``, and a request for more than N choices is refused (HTTP 400).
    Faults come from ``fail_next`` first, then from ``faults``. Only chat requests are recorded;
    ``keep_requests=False`` only counts them (``served``), so a long benchmark's server stays small.
    A request with ``stream`` gets its reply as server-sent events, ``stream_delay_s`` apart.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        honour_n: bool = True,
        slots: int | None = None,
        latency_s: float = 0.0,
        stream_delay_s: float = 0.0,
        faults: FaultPlan | None = None,
        retry_after_s: float = 0.05,
        timeout_hold_s: float = 2.0,
        model: str = "scripted-model",
        keep_requests: bool = True,
    ) -> None:
        self.responder: Responder = responder if responder is not None else Rules()
        self.honour_n, self.latency_s, self.faults = honour_n, latency_s, faults
        self.slots, self.stream_delay_s = slots, stream_delay_s
        self.retry_after_s, self.timeout_hold_s, self.model = retry_after_s, timeout_hold_s, model
        self.keep_requests = keep_requests
        self.served = 0
        self._records: list[RecordedRequest] = []
        self._queued: deque[str] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def rules(self) -> Rules:
        if not isinstance(self.responder, Rules):
            raise TypeError("this server's responder is not a Rules instance")
        return self.responder

    @property
    def base_url(self) -> str:
        if self._http is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._records)

    def start(self) -> ScriptedLLMServer:
        self._stopping.clear()
        self._http = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._http.owner = self
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self, responder: Responder | None = None) -> None:
        """Forget recorded requests and queued faults; optionally swap the responder."""
        with self._lock:
            self._records.clear()
            self._queued.clear()
        if responder is not None:
            self.responder = responder

    def fail_next(self, kind: str, times: int = 1) -> None:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; expected one of {FAULT_KINDS}")
        with self._lock:
            self._queued.extend([kind] * times)

    def _next_fault(self) -> str | None:
        with self._lock:
            if self._queued:
                return self._queued.popleft()
        return self.faults.draw() if self.faults else None

    def _answer(self, handler: _Handler, raw: bytes) -> None:
        record = RecordedRequest(body={}, n=1, started=time.time())
        with self._lock:
            self.served += 1
            if self.keep_requests:
                self._records.append(record)
        try:
            record.body = json.loads(raw or b"{}")
            request = ChatRequest.from_body(record.body)
        except (ValueError, TypeError, AttributeError) as exc:
            return self._send(handler, record, 400, _error(f"bad request body: {exc}", "invalid"))
        record.n = request.n
        record.prompt_tokens = estimate_tokens(request.prompt_text)
        if request.stream and request.n > 1:
            message = "stream=true takes one choice (n=1)"
            return self._send(handler, record, 400, _error(message, "invalid_request_error"))
        if self.slots is not None and request.n > self.slots:
            message = f"n_cmpl must be between 1 and {self.slots} (the server's slots)"
            return self._send(handler, record, 400, _error(message, "invalid_request_error"))
        record.fault = self._next_fault()
        self._stopping.wait(self.latency_s)
        if record.fault is not None:
            return self._send_fault(handler, record, request)
        try:
            count = request.n if self.honour_n else 1
            choices = [self._choice(request, i, self.responder(request, i)) for i in range(count)]
        except Exception as exc:  # the responder is test code: report any failure loudly
            no_retry = {"x-should-retry": "false"}
            return self._send(handler, record, 500, _error(str(exc), "responder_error"), no_retry)
        self._reply(handler, record, request, choices)

    def _reply(
        self,
        handler: _Handler,
        record: RecordedRequest,
        request: ChatRequest,
        choices: list[dict[str, Any]],
    ) -> None:
        """A 200 reply with ``choices``: streamed when the request streams."""
        envelope = self._envelope(record, choices)
        if request.stream:
            return self._stream(handler, record, envelope, request)
        self._send(handler, record, 200, envelope)

    def _stream(
        self,
        handler: _Handler,
        record: RecordedRequest,
        envelope: dict[str, Any],
        request: ChatRequest,
    ) -> None:
        """The reply as server-sent events, a token (4 characters, as ``estimate_tokens``
        counts them) per chunk, ``stream_delay_s`` apart. A client that closes the stream
        stops it: ``record.streamed`` counts the events that went, and its completion tokens
        are the chunks sent, as a server that stops decoding counts them."""
        choices = envelope["choices"]
        content = choices[0]["message"]["content"] or "" if choices else ""
        pieces = [content[i : i + 4] for i in range(0, len(content), 4)]
        head = {k: envelope[k] for k in ("id", "created", "model")}
        head["object"] = "chat.completion.chunk"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        events = [chunk({"role": "assistant", "content": ""})] if choices else []
        events += [chunk({"content": piece}) for piece in pieces]
        if choices:
            events.append(chunk({}, choices[0]["finish_reason"]))
        if (request.raw.get("stream_options") or {}).get("include_usage"):
            events.append(head | {"choices": [], "usage": envelope["usage"]})
        record.status, record.choices = 200, len(choices[:1])
        record.completion_tokens = 0
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.close_connection = True
            for event in events:
                handler.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                handler.wfile.flush()
                record.streamed += 1
                record.completion_tokens += any(c["delta"].get("content") for c in event["choices"])
                self._stopping.wait(self.stream_delay_s)
            handler.wfile.write(b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client had what it needed
        finally:
            record.ended = time.time()

    def _choice(self, request: ChatRequest, index: int, reply: Reply) -> dict[str, Any]:
        tool = request.tool_name() if request.tools else None
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if tool and isinstance(reply, dict):
            arguments = json.dumps(reply)
            call = {"name": tool, "arguments": arguments}
            message["tool_calls"] = [{"id": f"call_{index}", "type": "function", "function": call}]
            return {"index": index, "message": message, "finish_reason": "tool_calls"}
        if isinstance(reply, CutOff):
            message["content"] = reply.text
            return {"index": index, "message": message, "finish_reason": "length"}
        if isinstance(reply, dict):
            reply = within_schema(reply, request.response_format)
        message["content"] = reply if isinstance(reply, str) else json.dumps(reply)
        return {"index": index, "message": message, "finish_reason": "stop"}

    def _envelope(self, record: RecordedRequest, choices: list[dict[str, Any]]) -> dict[str, Any]:
        messages = [c["message"] for c in choices]
        texts = [m["content"] or m["tool_calls"][0]["function"]["arguments"] for m in messages]
        record.completion_tokens = sum(estimate_tokens(t) for t in texts)
        usage = {
            "prompt_tokens": record.prompt_tokens,
            "completion_tokens": record.completion_tokens,
            "total_tokens": record.prompt_tokens + record.completion_tokens,
        }
        return {
            "id": f"chatcmpl-scripted-{id(record):x}",
            "object": "chat.completion",
            "created": int(record.started),
            "model": record.body.get("model") or self.model,
            "choices": choices,
            "usage": usage,
        }

    def _send_fault(self, handler: _Handler, record: RecordedRequest, request: ChatRequest) -> None:
        kind = record.fault
        if kind == "timeout":
            self._stopping.wait(self.timeout_hold_s)
            handler.close_connection = True
            record.ended = time.time()
            return
        if kind == "malformed":
            handler.close_connection = True
            return self._send(handler, record, 200, b"<html>upstream exploded</html>")
        if kind == "429":
            headers = {"Retry-After": str(self.retry_after_s)}
            return self._send(handler, record, 429, _error("rate limited", "rate_limit"), headers)
        if kind == "500":
            return self._send(handler, record, 500, _error("injected fault", "server_error"))
        count = request.n if self.honour_n else 1
        content = '{"truncated": ' if kind == "malformed_content" else None
        choices = [self._choice(request, i, content) for i in range(count)] if content else []
        self._reply(handler, record, request, choices)

    def _send(
        self,
        handler: _Handler,
        record: RecordedRequest,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        record.status = status
        record.choices = len(payload.get("choices", [])) if isinstance(payload, dict) else 0
        record.ended = time.time()  # before the reply goes: a client that has it sees the record
        handler.send_raw(status, payload, headers)
