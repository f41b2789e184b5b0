"""``ChatClient``: one role's chat calls, composed from the modules beside this one.

Every request goes through ``ChatOpenAI`` (``factory``), to the endpoint ``endpoint`` resolves.
On top of it the client adds what a long, paid run needs:

* ``n`` choices per prompt, split into requests the server takes and cached choice by choice
  (``choices``, over the replayable SQLite cache of ``cache``);
* the slots of a server, a request rate, the spending cap and the circuit breaker of an
  endpoint (``limits``, ``breaker``, ``usage``);
* retries, one layer per failure: the OpenAI SDK retries 429 (honouring ``Retry-After``), 5xx
  and timeouts; tenacity retries the replies the SDK lets through without a usable choice
  (malformed bodies, empty choices); structured output (``structured``) that fails to parse is
  re-asked with new seeds, then reported as ``Malformed`` instead of raising;
* one failed call is ``LLMCallFailed`` (the slot keeps the error and waits for the next round),
  a run of them opens the breaker: ``LLMUnavailable``, which stops the run;
* token accounting: each reply and cache hit counted once, into the open ``tally_usage`` blocks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any, TypeVar, cast

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from cq2a.adapters.llm.breaker import CircuitBreaker, LLMUnavailable
from cq2a.adapters.llm.cache import LLMCache
from cq2a.adapters.llm.choices import ChoiceRequests, Completion
from cq2a.adapters.llm.endpoint import Endpoint
from cq2a.adapters.llm.errors import (
    LLMCallFailed,
    UnusableReply,
    cut_off_errors,
    fatal_errors,
    reply_errors,
    sdk_retried_errors,
    unusable_reply,
)
from cq2a.adapters.llm.factory import chat_model, max_tokens_body
from cq2a.adapters.llm.limits import RequestLimits
from cq2a.adapters.llm.structured import Malformed, Until, parse_structured, response_format_for
from cq2a.adapters.llm.usage import SpendingMeter, Usage, count_usage
from cq2a.settings import LLMSpec, Settings

T = TypeVar("T", bound=BaseModel)

#: The chat roles of LangChain's message types.
_ROLES = {"system": "system", "human": "user", "ai": "assistant"}
#: A streamed piece that ends the word before it.
_ENDS_A_WORD = re.compile(r"\W")


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
        self.limits = RequestLimits(spec, settings, endpoint, meter=meter, run_key=run_key)
        self.choices = ChoiceRequests(
            spec, endpoint.base_url, max_choices=endpoint.slots, cache=cache
        )
        self.model = chat_model(
            spec,
            base_url=endpoint.base_url,
            max_retries=settings.llm_retries,
            rate_limiter=self.limits.rate_limiter,
        )

    def list_models(self) -> list[str]:
        """The models the endpoint lists: a reachability check that spends no tokens."""
        client = self.model.root_client.with_options(max_retries=1, timeout=15.0)
        return [model.id for model in client.models.list()]

    def text(self, system: str, user: str, *, n: int = 1, seed_offset: int = 0) -> list[str]:
        """``n`` plain-text completions of one prompt."""
        return self.choices.complete(
            self._send_with_retries,
            [SystemMessage(system), HumanMessage(user)],
            n=n,
            seed=self.settings.seed + seed_offset,
            response_format=None,
            cacheable=None,
        )

    def structured(
        self,
        system: str,
        user: str,
        schema: type[T],
        *,
        n: int = 1,
        seed_offset: int = 0,
        max_items: int | None = None,
        max_length: Mapping[str, int] | None = None,
        until: Until | None = None,
    ) -> list[T | Malformed]:
        """``n`` completions parsed into ``schema``; unparseable ones are asked for again, up
        to ``malformed_retries`` times. ``max_items``: the most items the schema's lists may
        hold in the request; ``max_length``: the most characters of some of its strings, by
        name (the parse takes whatever came); ``until``: each choice is streamed, one request
        each, and stopped once what it has written is enough (``Until``).

        Not a retry of a failed request (``_send_with_retries`` does that): each further ask is
        a new sample, for the choices still missing only, under seeds of its own (1000 on), so
        each answer is its own cache entry and a replay finds it."""
        messages = [SystemMessage(system), HumanMessage(user)]
        response_format = response_format_for(self.spec, schema, max_items, max_length)
        results: list[T | Malformed] = []
        for ask in range(self.settings.malformed_retries + 1):
            wanted = n - sum(not isinstance(r, Malformed) for r in results)
            if wanted <= 0:
                break
            texts = self.choices.complete(
                partial(self._send_with_retries, until=until),
                messages,
                n=wanted,
                seed=self.settings.seed + seed_offset + 1000 * ask,
                response_format=response_format,
                # an output that does not parse is not a result: asked again next time
                cacheable=lambda text: not isinstance(parse_structured(text, schema), Malformed),
                until=until.name if until is not None else None,
            )
            parsed = [parse_structured(text, schema) for text in texts]
            results = [r for r in results if not isinstance(r, Malformed)] + parsed
        return results[:n]

    def _send_with_retries(
        self, messages: list[Any], params: dict[str, Any], until: Until | None = None
    ) -> Completion:
        """One call: a request, sent again by tenacity while its reply is unusable.

        One retry layer per failure: the OpenAI SDK retries 429, 5xx, timeouts and lost
        connections (``llm_retries`` times, honouring Retry-After) and then fails this call; a
        reply the SDK accepted but that holds no usable choice is retried here, as often. Any
        other error (a programming error, the spending cap) propagates at once, unretried, and
        the breaker does not count it."""
        attempts = self.settings.llm_retries + 1
        where = self.limits.where
        breaker = self.limits.breaker()
        retrying = Retrying(
            stop=stop_after_attempt(attempts),
            wait=wait_exponential(multiplier=0.2, max=5.0),
            retry=retry_if_exception_type(UnusableReply),
            reraise=True,
        )
        with breaker.call():
            try:
                completion = retrying(self._send_once, messages, params, until)
            except fatal_errors() as error:
                # A wrong key or model name fails every call alike: stop the run at once.
                raise LLMUnavailable(
                    f"{self.spec.model} at {where}: {error}. Check the model name and the API key "
                    "(cq2a doctor)."
                ) from error
            except sdk_retried_errors() as error:
                # The SDK has already retried these (a 400, e.g. a prompt over the model's window,
                # is not retried and fails this call only).
                raise self._failed(breaker, error, f"{where}: {error}") from error
            except UnusableReply as error:
                cause = error.__cause__ or error
                raise self._failed(
                    breaker, cause, f"{where} failed {attempts} times: {cause}"
                ) from cause
            breaker.record_success()
        return completion

    def _failed(self, breaker: CircuitBreaker, cause: BaseException, what: str) -> LLMCallFailed:
        """Count a failed call (``LLMUnavailable`` when the breaker opens), and say what to do."""
        breaker.record_failure(f"{type(cause).__name__}: {cause}")
        return LLMCallFailed(
            f"{self.spec.model} at {what}. "
            "Check that the server is up (cq2a doctor) or lower --concurrency."
        )

    def _send_once(
        self, messages: list[Any], params: dict[str, Any], until: Until | None
    ) -> Completion:
        """One request within the slots and a spending reservation."""
        with self.limits.hold(messages, params["n"]):
            if until is None:
                completion = self._send(messages, params)
            else:
                completion = self._stream(messages, params, until)
            self.limits.record(completion.usage)
        count_usage(completion.usage)
        if not completion.texts:
            raise UnusableReply("the server returned no choices")
        return completion

    def _send(self, messages: list[Any], params: dict[str, Any]) -> Completion:
        """One request and its reply; a reply that is no completion is ``UnusableReply``."""
        suspects: tuple[type[Exception], ...] = (*reply_errors(), TypeError, KeyError)
        try:
            result = self.model.generate([messages], **params)
            token_usage = (result.llm_output or {}).get("token_usage") or {}
            usage = Usage(
                requests=1,
                prompt_tokens=int(token_usage.get("prompt_tokens") or 0),
                completion_tokens=int(token_usage.get("completion_tokens") or 0),
            )
        except cut_off_errors() as error:
            return cut_off_completion(cast(Any, error).completion)
        except suspects as error:
            if not unusable_reply(error):
                raise
            raise UnusableReply(str(error)) from error
        texts = [generation.text for generation in result.generations[0]]
        return Completion(texts=texts, usage=usage)

    def _stream(self, messages: list[Any], params: dict[str, Any], until: Until) -> Completion:
        """One choice, streamed, and closed as soon as ``until`` says it has written enough:
        a server stops decoding when its client goes (llama.cpp does; a hosted API bills what
        it sent). Sent with the OpenAI SDK itself, as ``ChatOpenAI`` would send it (its model,
        sampling, token cap, timeout and retries, and the role's rate limit): LangChain's
        stream of a structured output parses the whole reply at its end, which a choice
        stopped early never has.

        A choice stopped early has no usage from the server: its completion tokens are the
        chunks received (a token each from llama.cpp), its prompt tokens estimated at 4
        characters a token. A reply that streams no choice is unusable, as a reply without
        choices is."""
        if self.limits.rate_limiter is not None:
            self.limits.rate_limiter.acquire(blocking=True)
        stream = self.model.root_client.chat.completions.create(
            model=self.spec.model,
            messages=[{"role": _ROLES[m.type], "content": m.content} for m in messages],
            temperature=self.spec.temperature,
            max_completion_tokens=self.spec.max_tokens,
            extra_body=max_tokens_body(self.spec.backend, self.spec.max_tokens),
            stream=True,
            stream_options={"include_usage": True},
            **{key: value for key, value in params.items() if key != "n"},
        )
        text, chunks, choices, usage = "", 0, 0, None
        with stream:
            for chunk in _chunks(stream):
                if chunk.usage is not None:
                    usage = Usage(
                        requests=1,
                        prompt_tokens=chunk.usage.prompt_tokens,
                        completion_tokens=chunk.usage.completion_tokens,
                    )
                if not chunk.choices:
                    continue
                choices += 1
                piece = chunk.choices[0].delta.content or ""
                text, chunks = text + piece, chunks + bool(piece)
                # a word just ended: the output may now hold enough
                if _ENDS_A_WORD.search(piece) and (kept := until.reached(text)) is not None:
                    prompt = math.ceil(sum(len(str(m.content)) for m in messages) / 4)
                    return Completion(
                        [kept], Usage(requests=1, prompt_tokens=prompt, completion_tokens=chunks)
                    )
        if not choices:
            raise UnusableReply("the server streamed no choice")
        return Completion(texts=[text], usage=usage or Usage(requests=1, completion_tokens=chunks))


def _chunks(stream: Any) -> Iterator[Any]:
    """The chunks of a stream; one the SDK cannot read makes the reply unusable."""
    try:
        yield from stream
    except reply_errors() as error:
        raise UnusableReply(str(error)) from error


def cut_off_completion(completion: Any) -> Completion:
    """The texts of a reply cut at its token limit (an OpenAI ``ChatCompletion``), each as
    far as it got, with the tokens it cost: a structured output cut off parses as malformed."""
    usage = completion.usage
    return Completion(
        texts=[choice.message.content or "" for choice in completion.choices],
        usage=Usage(
            requests=1,
            prompt_tokens=int(usage.prompt_tokens) if usage else 0,
            completion_tokens=int(usage.completion_tokens) if usage else 0,
        ),
    )
