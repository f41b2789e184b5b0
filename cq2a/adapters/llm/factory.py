"""The one place a ``ChatOpenAI`` is built: every role, and a chat SUT, get theirs here."""

from __future__ import annotations

from typing import Any

from langchain_core.rate_limiters import InMemoryRateLimiter

from cq2a.adapters.llm.endpoint import resolve_api_key
from cq2a.settings import LLMSpec


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
    """A ``ChatOpenAI`` for ``spec`` at ``base_url``; ``langchain_openai`` is imported on first
    use, not with this module."""
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
