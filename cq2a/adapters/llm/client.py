"""Chat calls for one role: structured output, ``n`` choices, caching, limits and retries.

Every request goes through ``ChatOpenAI`` (OpenAI, any OpenAI-compatible server, or the local
llama.cpp server). On top of it this module adds what a long, paid run needs:

* ``n`` choices in one request where the server honours it (detected on first use), else
  separate requests with consecutive seeds; at most ``slots`` choices per request to a local
  llama.cpp server, which refuses more;
* a replayable SQLite cache (``cq2a.adapters.llm.cache``) with hit counting;
* a process-wide cap on requests in flight (a local server's slots, counting each choice as
  one, or ``concurrency`` for remote APIs) and an optional requests-per-second limiter;
* retries, one layer per failure: the OpenAI SDK retries 429 (honouring ``Retry-After``), 5xx
  and timeouts; tenacity retries the replies the SDK lets through without a usable choice
  (malformed bodies, empty choices); structured output that fails to parse is re-asked with new
  seeds, then reported as ``Malformed`` instead of raising;
* a circuit breaker per endpoint (``cq2a.adapters.llm.breaker``): one failed call is
``LLMCallFailed``
  (the slot keeps the error and waits for the next round), a run of them is
  ``LLMUnavailable``, which stops the run;
* token accounting (each reply and cache hit counted once, into the open ``tally_usage``
  blocks) and the spending cap (``cq2a.adapters.llm.usage``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.rate_limiters import InMemoryRateLimiter
from langchain_core.utils.json import parse_json_markdown
from pydantic import BaseModel, ValidationError
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from cq2a.adapters.llm.breaker import CircuitBreaker, LLMUnavailable, breaker_for
from cq2a.adapters.llm.cache import LLMCache, cache_key
from cq2a.adapters.llm.local_server import get_local_server, server_slots
from cq2a.adapters.llm.usage import BudgetExceeded, SpendingMeter, Usage, count_usage
from cq2a.settings import LLMSpec, Settings

T = TypeVar("T", bound=BaseModel)


@cache
def fatal_errors() -> tuple[type[Exception], ...]:
    """Errors that fail every call alike (a wrong key, an unknown model): the run must stop.

    ``openai`` is imported on first use, not with this module: it alone takes about half a
    second, and importing cq2a or building the graph needs no client."""
    import openai

    return (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)


@cache
def sdk_retried_errors() -> tuple[type[Exception], ...]:
    """Errors the OpenAI SDK retries itself: 429 (honouring Retry-After), 5xx, timeouts, lost
    connections."""
    import openai

    return (openai.APIStatusError, openai.APITimeoutError, openai.APIConnectionError)


class LLMCallFailed(RuntimeError):
    """A request failed after every retry; the message says why and what to try."""


class UnusableReply(Exception):
    """A reply the SDK accepted that holds no usable choice: a body that is not a completion,
    or no choices at all."""


class Malformed(BaseModel):
    """A structured completion that did not parse into its schema."""

    raw: str
    error: str


@dataclass
class Completion:
    """What one request returned: its choices, and what it used."""

    texts: list[str]
    usage: Usage = field(default_factory=Usage)


def response_format_for(spec: LLMSpec, schema: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` for a JSON schema (llama.cpp's server turns it into a grammar
    that constrains decoding)."""
    json_schema = schema.model_json_schema()
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": json_schema, "strict": False},
    }


@dataclass(frozen=True)
class Endpoint:
    """Where one role's requests go, and how many sequences that server decodes at once
    (None: not a local server; the run's ``concurrency`` applies)."""

    base_url: str | None
    slots: int | None = None


def resolve_endpoint(spec: LLMSpec, model_dir: str | None = None, local_slots: int = 1) -> Endpoint:
    """Where requests for this spec go; starts the local server on first use."""
    if spec.backend == "openai":
        return Endpoint(spec.base_url)
    if spec.backend == "compatible":
        if not spec.base_url:
            raise ValueError("backend 'compatible' needs base_url (e.g. http://127.0.0.1:8000/v1)")

        # a llama.cpp server started elsewhere says how many slots it has; others say nothing
        return Endpoint(spec.base_url, server_slots(spec.base_url.rstrip("/")))

    server = get_local_server(spec.model, model_dir=model_dir, slots=local_slots)
    return Endpoint(server.base_url, server.slots)


def resolve_api_key(spec: LLMSpec) -> str:
    if spec.api_key is not None:
        return spec.api_key.get_secret_value()
    if spec.backend == "openai":
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            raise LLMCallFailed("backend 'openai' needs an API key: set OPENAI_API_KEY")
        return key
    return os.environ.get("OPENAI_API_KEY", "not-needed")


def max_tokens_body(backend: str, max_tokens: int) -> dict[str, Any] | None:
    """``ChatOpenAI`` sends the cap as ``max_completion_tokens``, which some OpenAI-compatible
    servers ignore (they would generate to a full window); they get the classic ``max_tokens``
    field as well."""
    return None if backend == "openai" else {"max_tokens": max_tokens}


def chat_model(
    spec: LLMSpec,
    *,
    base_url: str | None,
    max_retries: int = 2,
    rate_limiter: InMemoryRateLimiter | None = None,
) -> Any:
    """The one place a ``ChatOpenAI`` is built: every role, and a chat SUT, get theirs here."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=spec.model,
        base_url=base_url,
        api_key=resolve_api_key(spec),
        temperature=spec.temperature,
        max_tokens=spec.max_tokens,
        timeout=spec.timeout_s,
        max_retries=max_retries,
        rate_limiter=rate_limiter,
        extra_body=max_tokens_body(spec.backend, spec.max_tokens),
    )


@cache
def _shared_rate_limiter(requests_per_second: float) -> InMemoryRateLimiter:
    return InMemoryRateLimiter(requests_per_second=requests_per_second, check_every_n_seconds=0.01)


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
def _shared_slots(key: str, size: int) -> Slots:
    return Slots(size)


_N_SUPPORT: dict[tuple[str | None, str], bool] = {}


class ChatClient:
    """One role's chat model."""

    def __init__(
        self,
        spec: LLMSpec,
        settings: Settings,
        *,
        endpoint: Endpoint,
        cache: LLMCache | None = None,
        meter: SpendingMeter | None = None,
        run_key: str = "default",
    ) -> None:
        self.spec = spec
        self.settings = settings
        self.base_url = endpoint.base_url
        self.cache = cache
        self.meter = meter
        # A local server decodes `slots` sequences at once, and all roles (and runs) on it share
        # them; a remote API gets the run's `concurrency` requests in flight.
        self.max_choices = endpoint.slots
        self.slots = (
            _shared_slots(f"local:{endpoint.base_url}", endpoint.slots)
            if endpoint.slots is not None
            else _shared_slots(run_key, settings.concurrency)
        )
        limiter = (
            _shared_rate_limiter(settings.requests_per_second)
            if settings.requests_per_second
            else None
        )
        self.model = chat_model(
            spec,
            base_url=endpoint.base_url,
            max_retries=settings.llm_retries,
            rate_limiter=limiter,
        )

    # ---- public calls ----

    def list_models(self) -> list[str]:
        """The models the endpoint lists: a reachability check that spends no tokens."""
        client = self.model.root_client.with_options(max_retries=1, timeout=15.0)
        return [model.id for model in client.models.list()]

    def text(self, system: str, user: str, *, n: int = 1, seed_offset: int = 0) -> list[str]:
        """``n`` plain-text completions of one prompt."""
        return self._complete(
            system, user, n=n, seed_offset=seed_offset, response_format=None, cacheable=None
        )

    def structured(
        self, system: str, user: str, schema: type[T], *, n: int = 1, seed_offset: int = 0
    ) -> list[T | Malformed]:
        """``n`` completions parsed into ``schema``; unparseable ones are asked for again, up
        to ``malformed_retries`` times.

        Not a retry of a failed request (``_send_with_retries`` does that): each further ask is
        a new sample, for the choices still missing only, under seeds of its own (1000 on), so
        each answer is its own cache entry and a replay finds it."""
        response_format = response_format_for(self.spec, schema)
        results: list[T | Malformed] = []
        for ask in range(self.settings.malformed_retries + 1):
            wanted = n - sum(not isinstance(r, Malformed) for r in results)
            if wanted <= 0:
                break
            texts = self._complete(
                system,
                user,
                n=wanted,
                seed_offset=seed_offset + 1000 * ask,
                response_format=response_format,
                # an output that does not parse is not a result: asked again next time
                cacheable=lambda text: not isinstance(parse_structured(text, schema), Malformed),
            )
            parsed = [parse_structured(text, schema) for text in texts]
            results = [r for r in results if not isinstance(r, Malformed)] + parsed
        return results[:n]

    # ---- requests ----

    def _complete(
        self,
        system: str,
        user: str,
        *,
        n: int,
        seed_offset: int,
        response_format: dict[str, Any] | None,
        cacheable: Callable[[str], bool] | None,
    ) -> list[str]:
        """``n`` choices, choice ``i`` sampled with seed ``seed + i``.

        Each choice is cached under its own key (prompt, parameters, its seed), whether it came
        from one ``n``-choice request or from a request of its own: a replay finds the same
        entries however the first run learnt that the server honours ``n``, and in whatever
        order its threads ran.
        """
        messages = [SystemMessage(system), HumanMessage(user)]
        seed = self.settings.seed + seed_offset
        requests = [self._choice_request(messages, seed + i, response_format) for i in range(n)]
        keys = [cache_key(request) for request in requests]
        texts: dict[int, str] = {}
        if self.cache is not None:
            for index, key in enumerate(keys):
                if (hit := self.cache.get(key)) is not None and hit:
                    texts[index] = hit[0]
                    count_usage(Usage(cached=1))
        missing = [i for i in range(n) if i not in texts]
        while missing:
            # One request answers a run of consecutive missing choices (the server seeds its
            # choices seed, seed + 1...), at most as many as a local server has slots; a
            # server that returns fewer than asked does not honour n, and gets one at a time.
            run = [missing[0]]
            most = (self.max_choices or n) if self._supports_n() is not False else 1
            while run[-1] + 1 in missing and len(run) < most:
                run.append(run[-1] + 1)
            reply = self._send_with_retries(
                messages, self._params(len(run), seed + run[0], response_format)
            )
            if len(run) > 1:
                self._learn_n_support(len(run), len(reply.texts))
            for index, text in zip(run, reply.texts, strict=False):
                texts[index] = text
                if cacheable is None or cacheable(text):
                    self._store(keys[index], requests[index], text)
            missing = [i for i in range(n) if i not in texts]
        return [texts[i] for i in range(n)]

    def _choice_request(
        self, messages: list[Any], seed: int, response_format: dict[str, Any] | None
    ) -> dict[str, Any]:
        """What identifies one choice in the cache: no ``n``, no server address."""
        return {
            "model": self.spec.cache_identity(),
            "messages": [(m.type, m.content) for m in messages],
            "params": self._params(1, seed, response_format),
        }

    @staticmethod
    def _params(n: int, seed: int, response_format: dict[str, Any] | None) -> dict[str, Any]:
        params: dict[str, Any] = {"n": n, "seed": seed}
        if response_format is not None:
            params["response_format"] = response_format
        return params

    def _store(self, key: str, request: dict[str, Any], text: str) -> None:
        if self.cache is not None:
            self.cache.put(key, request, [text])

    def _supports_n(self) -> bool | None:
        if self.spec.supports_n is not None:
            return self.spec.supports_n
        return _N_SUPPORT.get((self.base_url, self.spec.model))

    def _learn_n_support(self, asked: int, got: int) -> None:
        _N_SUPPORT[(self.base_url, self.spec.model)] = got >= asked

    def _send_with_retries(self, messages: list[Any], params: dict[str, Any]) -> Completion:
        """One request, sent again by tenacity while its reply is unusable.

        One retry layer per failure: the OpenAI SDK retries 429, 5xx, timeouts and lost
        connections (``llm_retries`` times, honouring Retry-After) and then fails this call; a
        reply the SDK accepted but that holds no usable choice is retried here, as often."""
        attempts = self.settings.llm_retries + 1
        where = self.base_url or "api.openai.com"
        breaker = breaker_for(where, self.settings.breaker_failures, self.settings.breaker_window_s)
        retrying = Retrying(
            stop=stop_after_attempt(attempts),
            wait=wait_exponential(multiplier=0.2, max=5.0),
            retry=retry_if_exception_type(UnusableReply),
            reraise=True,
        )
        try:
            completion = retrying(self._send_once, messages, params, breaker, where)
        except UnusableReply as error:
            cause = error.__cause__ or error
            breaker.record_failure(f"{type(cause).__name__}: {cause}")
            raise LLMCallFailed(
                f"{self.spec.model} at {where} failed {attempts} times: {cause}. "
                "Check that the server is up (cq2a doctor) or lower --concurrency."
            ) from cause
        breaker.record_success()
        return completion

    def _send_once(
        self, messages: list[Any], params: dict[str, Any], breaker: CircuitBreaker, where: str
    ) -> Completion:
        """One request within the breaker, the slots and a spending reservation."""
        breaker.check()
        try:
            with (
                self.slots.hold(self._units(params["n"])),
                self._reservation(self._estimate(messages, params["n"])),
            ):
                completion = self._send(messages, params)
                if self.meter is not None:  # before the reservation goes
                    self.meter.record(completion.usage)
            count_usage(completion.usage)
        except fatal_errors() as error:
            # A wrong key or model name fails every call alike: stop the run at once.
            raise LLMUnavailable(
                f"{self.spec.model} at {where}: {error}. Check the model name and the API key "
                "(cq2a doctor)."
            ) from error
        except sdk_retried_errors() as error:
            # The SDK has already retried these (a 400, e.g. a prompt over the model's window,
            # is not retried and fails this call only).
            breaker.record_failure(f"{type(error).__name__}: {error}")
            raise LLMCallFailed(
                f"{self.spec.model} at {where}: {error}. "
                "Check that the server is up (cq2a doctor) or lower --concurrency."
            ) from error
        except BudgetExceeded:
            raise
        except Exception as error:  # a body that is not a completion: the SDK passes it
            raise UnusableReply(str(error)) from error
        if not completion.texts:
            raise UnusableReply("the server returned no choices")
        return completion

    def _units(self, n: int) -> int:
        """Slots one request takes: each choice decodes in a slot of a local server; a remote
        request counts once."""
        return n if self.max_choices is not None else 1

    def _estimate(self, messages: list[Any], n: int) -> Usage:
        """The most one request can spend: its prompt (about 3 characters a token, on the high
        side) and the completion cap for each choice."""
        chars = sum(len(str(m.content)) for m in messages)
        return Usage(prompt_tokens=chars // 3 + 16, completion_tokens=self.spec.max_tokens * n)

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

    def _send(self, messages: list[Any], params: dict[str, Any]) -> Completion:
        result = self.model.generate([messages], **params)
        texts = [generation.text for generation in result.generations[0]]
        token_usage = (result.llm_output or {}).get("token_usage") or {}
        usage = Usage(
            requests=1,
            prompt_tokens=int(token_usage.get("prompt_tokens") or 0),
            completion_tokens=int(token_usage.get("completion_tokens") or 0),
        )
        return Completion(texts=texts, usage=usage)


def parse_structured(text: str, schema: type[T]) -> T | Malformed:
    """Parse a completion into ``schema``; a fenced code block around the JSON is tolerated
    (LangChain's markdown JSON parser, with a strict JSON parser: a truncated output is
    malformed, not completed)."""
    try:
        return schema.model_validate(parse_json_markdown(text, parser=json.loads))
    except (ValidationError, ValueError) as error:
        return Malformed(raw=text[:2000], error=str(error).splitlines()[0][:300])


@dataclass
class LLMRuntime:
    """The three roles' clients of one run, sharing a cache and a spending meter."""

    generator: ChatClient
    reasker: ChatClient
    judge: ChatClient
    meter: SpendingMeter
    cache: LLMCache | None


def build_llm_runtime(settings: Settings, run_key: str = "default") -> LLMRuntime:
    """The three roles' clients of one run (``cq2a.runtime.services`` keeps one per run).

    Our own SQLite cache rather than LangChain's ``SQLiteCache``: a replay must find each
    choice of an ``n``-choice request under its own seed, count its hits, and work whether or
    not the server honours ``n``; LangChain caches whole generations by prompt only."""
    cache_path = settings.cache_path
    llm_cache = LLMCache(cache_path) if cache_path and cache_path != "off" else None
    meter = SpendingMeter(
        max_tokens=settings.max_tokens,
        max_cost=settings.max_cost,
        price_per_1k_prompt=settings.price_per_1k_prompt,
        price_per_1k_completion=settings.price_per_1k_completion,
    )

    def client(spec: LLMSpec) -> ChatClient:
        return ChatClient(
            spec,
            settings,
            endpoint=resolve_endpoint(spec, settings.model_dir, settings.local_slots),
            cache=llm_cache,
            meter=meter,
            run_key=run_key,
        )

    return LLMRuntime(
        generator=client(settings.generator),
        reasker=client(settings.reasker),
        judge=client(settings.judge),
        meter=meter,
        cache=llm_cache,
    )


def forget_n_support() -> None:
    """Forget which servers honour ``n`` (tests, or a server restarted with other options)."""
    _N_SUPPORT.clear()
