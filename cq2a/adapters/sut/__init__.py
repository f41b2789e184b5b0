"""Adapters for the software under test, built from ``SUTSpec`` by ``build_sut``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from cq2a.adapters.sut.base import QASystem, SUTError, SUTQuery
from cq2a.adapters.sut.callable import CallableSUT
from cq2a.adapters.sut.chat import ChatSUT, sut_chat_model
from cq2a.adapters.sut.http import HTTPSUT
from cq2a.adapters.sut.seq2seq import Seq2SeqSUT
from cq2a.settings import SUTSpec

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["QASystem", "SUTError", "SUTQuery", "build_sut"]

ChatFactory = Callable[[SUTSpec], "BaseChatModel"]


def build_sut(spec: SUTSpec, chat_factory: ChatFactory | None = None) -> QASystem:
    """The adapter ``spec.kind`` names. For ``openai``, ``chat_factory`` builds the chat model
    (by default ``cq2a.adapters.sut.chat.sut_chat_model``, which starts the local server if
    need be)."""
    api_key = spec.api_key.get_secret_value() if spec.api_key else None
    if spec.kind == "seq2seq":
        return Seq2SeqSUT(
            spec.model,
            batch_size=spec.batch_size,
            max_new_tokens=spec.max_new_tokens,
            device=spec.device,
        )
    if spec.kind == "openai":
        chat = (chat_factory or sut_chat_model)(spec)
        return ChatSUT(chat, name=spec.model, max_concurrency=spec.batch_size)
    if spec.kind == "callable":
        return CallableSUT(spec.model)
    if spec.kind == "http":
        return HTTPSUT(spec.model, batch_size=spec.batch_size, api_key=api_key)
    raise SUTError(f"unknown SUT kind {spec.kind!r}")
