"""Node: re-ask each surviving question several times and take the majority (III-C2 step 1)."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from cq2a.candidates import at_step, settle
from cq2a.fanout import parallel_map
from cq2a.graph.state import ContextState
from cq2a.llm.usage import tally_usage
from cq2a.models import Candidate
from cq2a.nodes._runtime import services
from cq2a.reasking import reask as reask_candidate
from cq2a.settings import Settings
from cq2a.trace import emit


def reask(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    context = state["context"]
    run = services(runtime)
    settings = run.settings
    started = time.perf_counter()

    def ask(candidate: Candidate) -> Candidate:
        return reask_candidate(
            run.llm.reasker, context, candidate, settings.votes, len(candidate.attempts)
        )

    with tally_usage() as tally:
        results = parallel_map(
            ask, at_step(state.get("candidates", []), "reask"), settings.concurrency
        )
    updated = [settle(candidate, settings.max_attempts) for candidate in results]
    usage = tally.total
    emit(
        "stage_finished",
        context_id=context.id,
        stage="reask",
        counts={"reasked": len(updated)},
        usage=usage.model_dump(),
        seconds=round(time.perf_counter() - started, 3),
    )
    return {"candidates": updated, "usage": usage}
