"""What every node needs: the run's services, built from the settings LangGraph passes as the
runtime context (``graph.invoke(..., context=settings)``); each step's limits come from
``cq2a.runtime.steps``."""

from __future__ import annotations

from langgraph.config import get_config
from langgraph.runtime import Runtime

from cq2a.runtime.services import Services, services_for
from cq2a.settings import Settings


def services(runtime: Runtime[Settings]) -> Services:
    """The services of this run, keyed by the thread id so runs do not share a spending meter."""
    settings = runtime.context
    try:
        run_key = str(get_config().get("configurable", {}).get("thread_id", "default"))
    except RuntimeError:
        run_key = "default"
    return services_for(settings, run_key)
