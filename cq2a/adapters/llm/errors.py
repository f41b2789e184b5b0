"""What can go wrong with an LLM call, and which of it the client catches.

``LLMCallFailed`` is one failed call (its slot keeps the error and the run goes on); an
``UnusableReply`` is a reply the SDK let through without a usable choice, which is sent again.
The ``openai`` error classes are looked up on first use, not with this module: ``openai`` alone
takes about half a second to import, and importing cq2a or building the graph needs no client.
"""

from __future__ import annotations

from functools import cache


class LLMCallFailed(RuntimeError):
    """A request failed after every retry; the message says why and what to try."""


class UnusableReply(Exception):
    """A reply the SDK accepted that holds no usable choice: a body that is not a completion,
    or no choices at all."""


@cache
def fatal_errors() -> tuple[type[Exception], ...]:
    """Errors that fail every call alike (a wrong key, an unknown model): the run must stop."""
    import openai

    return (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)


@cache
def sdk_retried_errors() -> tuple[type[Exception], ...]:
    """Errors the OpenAI SDK retries itself: 429 (honouring Retry-After), 5xx, timeouts, lost
    connections."""
    import openai

    return (openai.APIStatusError, openai.APITimeoutError, openai.APIConnectionError)
