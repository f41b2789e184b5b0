"""Node: one context's subgraph, run once a place among the contexts that run at once is free."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from langgraph.config import get_config
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from cq2a.graph.state import ContextState
from cq2a.settings import Settings


def contexts_at_once(settings: Settings) -> int:
    """How many contexts run their subgraphs at once."""
    return max(settings.concurrency, 2)


def run_context_graph(
    context_graph: CompiledStateGraph[Any, Settings, Any, Any],
) -> Callable[[ContextState, Runtime[Settings]], dict[str, Any]]:
    """The ``PER_CONTEXT`` node: one context's subgraph, once a place among the contexts that
    run at once is free.

    The limit is a semaphore, not the config's ``max_concurrency``: that caps the threads of
    the run's step, and the thread that hands the subgraphs' trace events to the stream waits
    in the same pool, behind every context not yet started, so no event came out until a
    context ended. The subgraph is invoked with the task's config, so its checkpoints keep
    their namespace and ``get_state(subgraphs=True)`` still finds it."""
    places: dict[tuple[str, int], threading.Semaphore] = {}
    lock = threading.Lock()

    def context(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
        config = get_config()
        run_key = str(config.get("configurable", {}).get("thread_id", ""))
        key = (run_key, contexts_at_once(runtime.context))
        with lock:
            place = places.setdefault(key, threading.Semaphore(key[1]))
        with place:
            return context_graph.invoke(state, config)

    return context
