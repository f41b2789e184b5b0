"""A chat model behind any OpenAI-compatible endpoint as the software under test."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import HumanMessage

from cq2a.prompts_loader import render_prompt
from cq2a.sut.base import SUTError, SUTQuery, check_answers


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
