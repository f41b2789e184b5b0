"""Node: compare the majority answer with the gold answer (III-C2 step 2), and route."""

from __future__ import annotations

import time
from typing import Any

from langgraph.graph import END
from langgraph.runtime import Runtime

from cq2a.candidates import at_step, settle
from cq2a.comparison import compare_with_gold
from cq2a.graph.state import ContextState
from cq2a.nodes._runtime import services
from cq2a.settings import Settings
from cq2a.trace import emit


def compare(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    context = state["context"]
    started = time.perf_counter()
    run = services(runtime)
    settings = run.settings
    compared = [
        settle(candidate, settings.max_attempts)
        for candidate in compare_with_gold(
            at_step(state.get("candidates", []), "compare"),
            run.embedder.similarity_pairs,
            run.consistency_threshold,
        )
    ]
    for candidate in compared:
        accepted = candidate.status == "accepted"
        emit(
            "candidate_accepted" if accepted else "candidate_rejected",
            context_id=context.id,
            candidate_id=candidate.id,
            stage="compare",
            majority=candidate.current.majority_answer,
            similarity=candidate.current.similarity,
            reasons=[r.value for r in candidate.current.reasons],
            final=candidate.status != "pending",
        )
    emit(
        "stage_finished",
        context_id=context.id,
        stage="compare",
        counts={
            "compared": len(compared),
            "accepted": sum(c.status == "accepted" for c in compared),
        },
        seconds=round(time.perf_counter() - started, 3),
    )
    candidates = {c.id: c for c in state.get("candidates", [])} | {c.id: c for c in compared}
    # Every round settles each slot or spends one of its attempts; a slot whose LLM call
    # failed spent none and gets the extra rounds to catch up.
    rounds = settings.max_attempts + settings.error_rounds
    if any(c.status == "pending" for c in candidates.values()) and state["rounds"] < rounds:
        return {"candidates": compared}
    settled = list(candidates.values())
    emit(
        "context_finished",
        context_id=context.id,
        counts={
            "answers": len(state.get("answers", [])),
            "accepted": sum(c.status == "accepted" for c in settled),
            "rejected": sum(c.status == "rejected" for c in settled),
        },
    )
    return {"candidates": compared, "finished": [context.id]}


def route_after_compare(state: ContextState) -> str:
    """Loop back to generate until the compare node has settled the context."""
    return END if state["context"].id in state.get("finished", []) else "generate"
