"""What can go wrong with an LLM call, and which of it the client catches.

``LLMCallFailed`` is one failed call (its slot keeps the error and the run goes on); an
``UnusableReply`` is a reply the SDK let through without a usable choice, which is sent again.
The ``openai`` error classes are looked up on first use, not with this module: ``openai`` alone
takes about half a second to import, and importing cq2a or building the graph needs no client.
"""

from __future__ import annotations

import traceback
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


@cache
def cut_off_errors() -> tuple[type[Exception], ...]:
    """A reply cut at the request's token limit whose structured output the SDK then refuses
    to parse (``LengthFinishReasonError``): the call itself succeeded, and its text, cut off,
    is an output that does not parse like any other."""
    import openai

    return (openai.LengthFinishReasonError,)


@cache
def reply_errors() -> tuple[type[Exception], ...]:
    """Errors that say a reply the SDK let through is no completion: a body that is not JSON
    (``json.JSONDecodeError``), an error or a body of another type in a 200 reply (langchain's
    ``ValueError``), a field that does not validate (pydantic's ``ValidationError``, a
    ``ValueError`` too), or the SDK's own response validation."""
    import openai

    return (ValueError, openai.APIResponseValidationError)


# Where langchain_openai reads a reply into a result: it raises TypeError for null ``choices`` and
# KeyError for a choice without its fields.
_READING_THE_REPLY = frozenset({"_create_chat_result", "_convert_dict_to_message"})


def unusable_reply(error: Exception) -> bool:
    """Whether ``error`` means an unusable reply rather than a programming error.

    A TypeError or KeyError counts only when langchain_openai raised it reading the reply,
    known by the frame it was raised in: the same types raised by our own code propagate."""
    if isinstance(error, reply_errors()):
        return True
    frames = traceback.extract_tb(error.__traceback__)
    return isinstance(error, TypeError | KeyError) and frames[-1].name in _READING_THE_REPLY
