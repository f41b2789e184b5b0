"""Node: constraint checks (III-C1) and near-duplicate removal."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from cq2a.graph.state import ContextState
from cq2a.nodes._runtime import services
from cq2a.settings import Settings
from cq2a.stages import check_round
from cq2a.trace import emit


def check(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    context = state["context"]
    checked = check_round(services(runtime), state.get("candidates", []))
    tried = [c for c in checked if c.attempts]  # a slot whose generation call failed has none
    for candidate in tried:
        if candidate.current.rejected:
            emit(
                "candidate_rejected",
                context_id=context.id,
                candidate_id=candidate.id,
                stage="check",
                reasons=[r.value for r in candidate.current.reasons],
                final=candidate.status == "rejected",
            )
    emit(
        "stage_finished",
        context_id=context.id,
        stage="check",
        counts={"checked": len(tried), "passed": sum(not c.current.rejected for c in tried)},
    )
    return {"candidates": checked}
