"""What every node needs: the run's services, built from the settings LangGraph passes as the
runtime context (``graph.invoke(..., context=settings)``), and the limits each step reads from
those settings, so that a step's signature names what it uses."""

from __future__ import annotations

from langgraph.config import get_config
from langgraph.runtime import Runtime

from cq2a.answers.plan import ExtractionLimits
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


def extraction_limits(settings: Settings) -> ExtractionLimits:
    """III-A's limits; the windows are those of the roles whose prompts hold the context."""
    return ExtractionLimits(
        windows={"generator": settings.generator.window(), "reasker": settings.reasker.window()},
        max_sentence_tokens=settings.max_sentence_tokens,
        mix=settings.mix(),
        answers_per_context=settings.answers_per_context,
        answers=settings.answers,
        answer_budget=settings.answer_budget,
    )
