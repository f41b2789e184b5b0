"""The three roles' clients of one run (generator, re-asker, judge), sharing its cache and its
spending meter; ``cq2a.runtime.services`` keeps one set per run."""

from __future__ import annotations

from dataclasses import dataclass

from cq2a.adapters.llm.cache import LLMCache
from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.endpoint import resolve_endpoint
from cq2a.adapters.llm.usage import SpendingMeter
from cq2a.settings import LLMSpec, Settings


@dataclass
class LLMRuntime:
    """The three roles' clients of one run, sharing a cache and a spending meter."""

    generator: ChatClient
    reasker: ChatClient
    judge: ChatClient
    meter: SpendingMeter
    cache: LLMCache | None


def build_llm_runtime(
    settings: Settings, run_key: str = "default", meter: SpendingMeter | None = None
) -> LLMRuntime:
    """The three roles' clients of one run, counting against ``meter`` (a meter that several
    processes share) or, with none, against a meter of their own under the settings' caps.

    Our own SQLite cache rather than LangChain's ``SQLiteCache``: a replay must find each
    choice of an ``n``-choice request under its own seed, count its hits, and work whether or
    not the server honours ``n``; LangChain caches whole generations by prompt only."""
    cache_path = settings.cache_path
    llm_cache = LLMCache(cache_path) if cache_path and cache_path != "off" else None
    meter = meter or SpendingMeter(
        max_tokens=settings.max_tokens,
        max_cost=settings.max_cost,
        price_per_1k_prompt=settings.price_per_1k_prompt,
        price_per_1k_completion=settings.price_per_1k_completion,
    )

    def client(spec: LLMSpec) -> ChatClient:
        return ChatClient(
            spec,
            settings,
            endpoint=resolve_endpoint(spec, settings.model_dir, settings.local_slots),
            cache=llm_cache,
            meter=meter,
            run_key=run_key,
        )

    return LLMRuntime(
        generator=client(settings.generator),
        reasker=client(settings.reasker),
        judge=client(settings.judge),
        meter=meter,
        cache=llm_cache,
    )
