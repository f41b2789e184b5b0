"""A chat model behind any OpenAI-compatible endpoint as the software under test."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import HumanMessage

from cq2a.adapters.llm.prompts import render_prompt
from cq2a.adapters.sut.base import SUTError, SUTQuery, check_answers
from cq2a.settings import LLMSpec, SUTSpec


class ChatSUT:
    """Asks a chat model each question with the ``sut_answer`` prompt, requests in parallel."""

    def __init__(self, chat_model: BaseChatModel, *, name: str, max_concurrency: int = 4) -> None:
        self.name = f"chat:{name}"
        self._chat = chat_model
        self.max_concurrency = max_concurrency

    def answer(self, items: list[SUTQuery]) -> list[str]:
        if not items:
            return []
        prompts: list[LanguageModelInput] = [
            [HumanMessage(render_prompt("sut_answer", context=i.context, question=i.question))]
            for i in items
        ]
        try:
            replies = self._chat.batch(prompts, config={"max_concurrency": self.max_concurrency})
        except Exception as error:  # the client's own retries are spent: report what failed
            raise SUTError(f"{self.name} failed: {type(error).__name__}: {error}") from error
        return check_answers(self.name, [_text(reply) for reply in replies], len(items))


def _text(reply: Any) -> str:
    return str(getattr(reply, "text", reply))


def sut_chat_model(spec: SUTSpec, local_slots: int = 1) -> Any:
    """A chat model for an LLM-backed software under test (greedy, short answers); starts the
    local server for ``backend=local``, with ``local_slots`` slots."""
    from cq2a.adapters.llm.endpoint import resolve_endpoint
    from cq2a.adapters.llm.factory import chat_model

    llm_spec = LLMSpec(
        backend=spec.backend,
        model=spec.model,
        base_url=spec.base_url,
        api_key=spec.api_key,
        temperature=0.0,
        max_tokens=spec.max_new_tokens,
    )
    return chat_model(
        llm_spec, base_url=resolve_endpoint(llm_spec, local_slots=local_slots).base_url
    )
