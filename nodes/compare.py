"""Node: compare the majority answer with the gold answer (III-C2 step 2), and route."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END
from langgraph.runtime import Runtime

from cq2a.generation import needs_question
from cq2a.graph.state import ContextState
from cq2a.nodes._runtime import services
from cq2a.settings import Settings
from cq2a.stages import compare_round
from cq2a.trace import emit


def compare(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    context = state["context"]
    compared = compare_round(services(runtime), state.get("candidates", []))
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
    return {"candidates": compared}


def route_after_compare(state: ContextState, runtime: Runtime[Settings]) -> str:
    """Loop back to generate while some slot was rejected and still has attempts left."""
    settings = runtime.context or Settings()
    pending = [c for c in state.get("candidates", []) if needs_question(c, settings.max_attempts)]
    if pending and state.get("rounds", 0) < settings.max_attempts:
        return "generate"
    emit(
        "context_finished",
        context_id=state["context"].id,
        counts={
            "answers": len(state.get("answers", [])),
            "accepted": sum(c.status == "accepted" for c in state.get("candidates", [])),
            "rejected": sum(c.status != "accepted" for c in state.get("candidates", [])),
        },
    )
    return END
