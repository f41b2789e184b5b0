"""A chat model behind any OpenAI-compatible endpoint as the software under test."""

from __future__ import annotations

from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import HumanMessage

from cq2a.adapters.llm.endpoint import resolve_endpoint
from cq2a.adapters.llm.factory import chat_model
from cq2a.adapters.llm.prompts import render_prompt
from cq2a.adapters.sut.base import SUTError, SUTQuery
from cq2a.settings import LLMSpec, SUTSpec


def query_prompt(item: SUTQuery) -> LanguageModelInput:
    """The ``sut_answer`` prompt for a question with its context; ``sut_answer_question`` for
    one asked alone (``sut.input = "question"``: the model answers from what it knows)."""
    if item.context is None:
        return [HumanMessage(render_prompt("sut_answer_question", question=item.question))]
    return [HumanMessage(render_prompt("sut_answer", context=item.context, question=item.question))]


class ChatSUT:
    """Asks a chat model each question with ``query_prompt``, requests in parallel.

    A query whose request fails (the client's own retries spent) gets a ``SUTError`` in place of
    its answer; the others are still answered. ``cancel`` drops the queries not sent yet."""

    def __init__(self, chat_model: BaseChatModel, *, name: str, max_concurrency: int = 4) -> None:
        self.name = f"chat:{name}"
        self._chat = chat_model
        self.max_concurrency = max_concurrency
        self._pools: set[ThreadPoolExecutor] = set()

    def answer(self, items: list[SUTQuery]) -> list[str | SUTError]:
        return self.answer_prompts([query_prompt(item) for item in items])

    def answer_prompts(self, prompts: list[LanguageModelInput]) -> list[str | SUTError]:
        """The model's answer to each prompt (a ``SUTError`` where its request failed)."""
        if not prompts:
            return []
        # A pool of our own, not ``batch``: ``cancel`` can then drop the queries not yet sent.
        pool = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="chat-sut")
        self._pools.add(pool)
        try:
            futures = [pool.submit(self._chat.invoke, prompt) for prompt in prompts]
            outcomes = [self._outcome(future) for future in futures]
        finally:
            self._pools.discard(pool)
            pool.shutdown(wait=False, cancel_futures=True)
        return [text if isinstance(text, SUTError) else text.strip() for text in outcomes]

    def cancel(self) -> None:
        """Send no more of the queries in hand; those in flight end by the model's own
        timeout."""
        for pool in list(self._pools):
            pool.shutdown(wait=False, cancel_futures=True)

    def _outcome(self, future: Future[Any]) -> str | SUTError:
        try:
            return _text(future.result())
        except CancelledError:
            return SUTError(f"{self.name}: cancelled before it was sent")
        except Exception as error:  # the client's own retries are spent: report what failed
            return SUTError(f"{self.name} failed: {type(error).__name__}: {error}")


def _text(reply: Any) -> str:
    return str(getattr(reply, "text", reply))


def sut_chat_model(spec: SUTSpec, local_slots: int = 1) -> Any:
    """A chat model for an LLM-backed software under test (greedy, short answers); starts the
    local server for ``backend=local``, with ``local_slots`` slots."""

    llm_spec = LLMSpec(
        backend=spec.backend,
        model=spec.model,
        base_url=spec.base_url,
        api_key=spec.api_key,
        temperature=0.0,
        max_tokens=spec.max_new_tokens,
        # each request ends by itself within the SUT's time, so a cancelled one ends too
        timeout_s=spec.timeout_s,
    )
    return chat_model(
        llm_spec, base_url=resolve_endpoint(llm_spec, local_slots=local_slots).base_url
    )
