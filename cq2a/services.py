"""The heavy objects a run uses (LLM clients, embedder, parser), built once per process."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from cq2a.llm.client import LLMRuntime, get_llm_runtime
from cq2a.settings import LLMSpec, Settings, SUTSpec


@dataclass
class Services:
    settings: Settings
    run_key: str = "default"

    @property
    def llm(self) -> LLMRuntime:
        # Not cached here: forget_runtimes() closes a run's cache and drops its meter; the next run
        # with the same settings must get new ones, not this object's closed cache and spent meter.
        return get_llm_runtime(self.settings, self.run_key)

    @cached_property
    def embedder(self) -> Any:
        from cq2a.embeddings import load_embedder

        return load_embedder(self.settings.embedding_model)

    @cached_property
    def parser(self) -> Any:
        from cq2a.parsing import get_parser

        return get_parser(self.settings.parser)

    @cached_property
    def sut(self) -> Any:
        from cq2a.sut import build_sut

        return build_sut(self.settings.sut, chat_factory=sut_chat_model)

    @property
    def consistency_threshold(self) -> float:
        from cq2a.embeddings import default_threshold

        chosen = self.settings.consistency_threshold
        return default_threshold(self.settings.embedding_model) if chosen is None else chosen

    @property
    def oracle_threshold(self) -> float:
        from cq2a.embeddings import default_threshold

        chosen = self.settings.oracle_threshold
        return default_threshold(self.settings.embedding_model) if chosen is None else chosen


def sut_chat_model(spec: SUTSpec) -> Any:
    """A chat model for an LLM-backed software under test (greedy, short answers)."""
    from langchain_openai import ChatOpenAI

    from cq2a.llm.client import max_tokens_body, resolve_api_key, resolve_base_url

    llm_spec = LLMSpec(
        backend=spec.backend,
        model=spec.model,
        base_url=spec.base_url,
        api_key=spec.api_key,
        temperature=0.0,
        max_tokens=spec.max_new_tokens,
    )
    return ChatOpenAI(
        model=spec.model,
        base_url=resolve_base_url(llm_spec),
        api_key=resolve_api_key(llm_spec),
        temperature=0.0,
        max_tokens=spec.max_new_tokens,
        extra_body=max_tokens_body(spec.backend, spec.max_new_tokens),
    )


_SERVICES: dict[tuple[str, str], Services] = {}


def services_for(settings: Settings | None, run_key: str = "default") -> Services:
    settings = settings or Settings()
    key = (settings.model_dump_json(), run_key)
    if key not in _SERVICES:
        _SERVICES[key] = Services(settings, run_key)
    return _SERVICES[key]
