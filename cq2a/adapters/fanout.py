"""Fan-out over threads, the one way the domain steps run calls side by side: the pipeline's LLM
and SUT calls wait on the network, not the CPU. (Contexts fan out as LangGraph ``Send``
branches.)"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from typing import TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


def parallel_map(fn: Callable[[In], Out], items: Sequence[In], workers: int) -> list[Out]:
    """``[fn(item) for item in items]`` on up to ``workers`` threads: results in item order, and
    the error of the first item that failed is raised. Each item runs in a copy of the caller's
    context, so what the caller set there (LangGraph's run config and stream writer, an open
    ``tally_usage``) holds in the threads too."""
    if len(items) <= 1 or workers <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        futures = [pool.submit(copy_context().run, fn, item) for item in items]
        return [future.result() for future in futures]
