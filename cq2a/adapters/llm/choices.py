"""``n`` choices of one prompt: split into the requests a server takes, and cached choice by
choice.

``n`` choices go in one request where the server honours ``n`` (learnt on first use, per server
and model), else in separate requests with consecutive seeds; at most ``max_choices`` per request
to a local llama.cpp server, which refuses more. Each choice is cached under its own key (prompt,
parameters, its seed), whichever request it came from, so a replay finds the same entries however
the first run learnt that the server honours ``n``, and in whatever order its threads ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cq2a.adapters.llm.cache import LLMCache, cache_key
from cq2a.adapters.llm.usage import Usage, count_usage
from cq2a.settings import LLMSpec


@dataclass
class Completion:
    """What one request returned: its choices, and what it used."""

    texts: list[str]
    usage: Usage = field(default_factory=Usage)


Send = Callable[[list[Any], dict[str, Any]], Completion]
"""Sends one request (messages, parameters) and returns its choices."""

_N_SUPPORT: dict[tuple[str | None, str], bool] = {}


def forget_n_support() -> None:
    """Forget which servers honour ``n`` (tests, or a server restarted with other options)."""
    _N_SUPPORT.clear()


def request_params(n: int, seed: int, response_format: dict[str, Any] | None) -> dict[str, Any]:
    params: dict[str, Any] = {"n": n, "seed": seed}
    if response_format is not None:
        params["response_format"] = response_format
    return params


class ChoiceRequests:
    """The ``n``-choice requests of one role's model at one server, and its cache."""

    def __init__(
        self,
        spec: LLMSpec,
        base_url: str | None,
        *,
        max_choices: int | None,
        cache: LLMCache | None,
    ) -> None:
        self.spec = spec
        self.base_url = base_url
        self.max_choices = max_choices
        self.cache = cache

    def complete(
        self,
        send: Send,
        messages: list[Any],
        *,
        n: int,
        seed: int,
        response_format: dict[str, Any] | None,
        cacheable: Callable[[str], bool] | None,
        until: str | None = None,
    ) -> list[str]:
        """``n`` choices, choice ``i`` sampled with seed ``seed + i``: cached ones from the cache,
        the others through ``send``; ``cacheable`` says which new ones the cache keeps.
        ``until``: the rule that stops each choice early (``structured.Until``), one choice
        per request, its name in the cache key."""
        requests = [
            self._choice_request(messages, seed + i, response_format, until) for i in range(n)
        ]
        keys = [cache_key(request) for request in requests]
        texts = self._cached(keys)
        missing = [i for i in range(n) if i not in texts]
        while missing:
            # One request answers a run of consecutive missing choices (the server seeds its
            # choices seed, seed + 1...), at most as many as a local server has slots; a
            # server that returns fewer than asked does not honour n, and gets one at a time.
            run = [missing[0]]
            # a streamed choice (``until``) goes alone
            one_at_a_time = until is not None or self.supports_n() is False
            most = 1 if one_at_a_time else (self.max_choices or n)
            while run[-1] + 1 in missing and len(run) < most:
                run.append(run[-1] + 1)
            reply = send(messages, request_params(len(run), seed + run[0], response_format))
            if len(run) > 1:
                _N_SUPPORT[(self.base_url, self.spec.model)] = len(reply.texts) >= len(run)
            for index, text in zip(run, reply.texts, strict=False):
                texts[index] = text
                if self.cache is not None and (cacheable is None or cacheable(text)):
                    self.cache.put(keys[index], requests[index], [text])
            missing = [i for i in range(n) if i not in texts]
        return [texts[i] for i in range(n)]

    def _cached(self, keys: list[str]) -> dict[int, str]:
        texts: dict[int, str] = {}
        if self.cache is not None:
            for index, key in enumerate(keys):
                if (hit := self.cache.get(key)) is not None and hit:
                    texts[index] = hit[0]
                    count_usage(Usage(cached=1))
        return texts

    def _choice_request(
        self,
        messages: list[Any],
        seed: int,
        response_format: dict[str, Any] | None,
        until: str | None,
    ) -> dict[str, Any]:
        """What identifies one choice in the cache: no ``n``, no server address."""
        request = {
            "model": self.spec.cache_identity(),
            "messages": [(m.type, m.content) for m in messages],
            "params": request_params(1, seed, response_format),
        }
        return request if until is None else {**request, "until": until}

    def supports_n(self) -> bool | None:
        """Whether the server honours ``n``: as the spec says, else as learnt (None: not yet
        known)."""
        if self.spec.supports_n is not None:
            return self.spec.supports_n
        return _N_SUPPORT.get((self.base_url, self.spec.model))
