"""Node: compare the majority answer with the gold answer (III-C2 step 2), and route."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from cq2a.consistency.compare import compare_round
from cq2a.graph.state import ContextState, merge_by_id
from cq2a.models.candidates import context_is_settled
from cq2a.nodes._events import emit_outcomes, stage
from cq2a.nodes._runtime import services
from cq2a.settings import Settings


def compare(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    passage = state["context"]
    run = services(runtime)
    settings = run.settings
    speech = run.speaking(passage.language)
    with stage("compare", passage.id) as report:
        compared = compare_round(
            state.get("candidates", []),
            speech.embedder.similarity_pairs,
            speech.consistency_threshold,
            settings.max_attempts,
            passage.context,
        )
        emit_outcomes(passage.id, "compare", compared)
        accepted = sum(c.status == "accepted" for c in compared)
        report.counts = {"compared": len(compared), "accepted": accepted}
    candidates = merge_by_id(state.get("candidates", []), compared)
    max_rounds = settings.max_attempts + settings.error_rounds
    settled = context_is_settled(candidates, state["rounds"], max_rounds)
    return {"candidates": compared, "settled": settled}


def route_after_compare(state: ContextState) -> str:
    """Loop back to generate until every slot is settled; then a coverage round decides."""
    return "cover" if state.get("settled") else "generate"
