"""Adapters for the software under test, built from ``SUTSpec`` by ``build_sut``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from cq2a.adapters.sut.base import QASystem, SUTAnswer, SUTError, SUTQuery
from cq2a.adapters.sut.callable import CallableSUT
from cq2a.adapters.sut.chat import ChatSUT, sut_chat_model
from cq2a.adapters.sut.http import HTTPSUT
from cq2a.adapters.sut.rag import RETRIEVERS, RetrievalSUT, read_corpus
from cq2a.adapters.sut.seq2seq import Seq2SeqSUT
from cq2a.settings import DEFAULT_LOCAL_SUT_MODEL, SUTSpec

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["QASystem", "SUTAnswer", "SUTError", "SUTQuery", "build_sut"]

ChatFactory = Callable[[SUTSpec], "BaseChatModel"]


def build_sut(spec: SUTSpec, chat_factory: ChatFactory | None = None) -> QASystem:
    """The adapter ``spec.kind`` names. For ``openai``, ``chat_factory`` builds the chat model
    (by default ``cq2a.adapters.sut.chat.sut_chat_model``, which starts the local server if
    need be). For ``rag``, ``spec.model`` is ``RETRIEVER`` or ``RETRIEVER:READER``: ``bm25``
    with a reader chat model built the same way (by default the offline default SUT's model),
    over ``spec.corpus`` and the run's passages."""
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
    if spec.kind == "rag":
        retriever, _, reader = spec.model.partition(":")
        if retriever not in RETRIEVERS:
            raise SUTError(f"unknown retriever {retriever!r} (rag:{'|'.join(RETRIEVERS)})")
        reader_spec = spec.model_copy(update={"model": reader or DEFAULT_LOCAL_SUT_MODEL})
        chat = (chat_factory or sut_chat_model)(reader_spec)
        reading = ChatSUT(chat, name=reader_spec.model, max_concurrency=spec.batch_size)
        corpus = read_corpus(spec.corpus) if spec.corpus else []
        return RetrievalSUT(reading, top_k=spec.top_k, name=f"rag:{spec.model}", corpus=corpus)
    if spec.kind == "callable":
        return CallableSUT(spec.model)
    if spec.kind == "http":
        return HTTPSUT(spec.model, batch_size=spec.batch_size, api_key=api_key)
    raise SUTError(f"unknown SUT kind {spec.kind!r}")
