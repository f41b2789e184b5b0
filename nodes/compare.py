"""Node: compare the majority answer with the gold answer (III-C2 step 2), and route."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END
from langgraph.runtime import Runtime

from cq2a.candidates import context_is_settled
from cq2a.comparison import compare_round
from cq2a.graph.state import ContextState, merge_by_id
from cq2a.nodes._events import emit_context_finished, emit_outcomes, stage
from cq2a.nodes._runtime import services
from cq2a.settings import Settings


def compare(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    passage = state["context"]
    run = services(runtime)
    settings = run.settings
    with stage("compare", passage.id) as report:
        compared = compare_round(
            state.get("candidates", []),
            run.embedder.similarity_pairs,
            run.consistency_threshold,
            settings.max_attempts,
        )
        emit_outcomes(passage.id, "compare", compared)
        accepted = sum(c.status == "accepted" for c in compared)
        report.counts = {"compared": len(compared), "accepted": accepted}
    candidates = merge_by_id(state.get("candidates", []), compared)
    max_rounds = settings.max_attempts + settings.error_rounds
    if not context_is_settled(candidates, state["rounds"], max_rounds):
        return {"candidates": compared}
    emit_context_finished(passage.id, state.get("answers", []), candidates)
    return {"candidates": compared, "finished": [passage.id]}


def route_after_compare(state: ContextState) -> str:
    """Loop back to generate until the compare node has settled the context."""
    return END if state["context"].id in state.get("finished", []) else "generate"
