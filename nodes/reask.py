"""Node: re-ask each surviving question several times and take the majority (III-C2 step 1)."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from cq2a.graph.state import ContextState
from cq2a.nodes._runtime import services
from cq2a.settings import Settings
from cq2a.stages import reask_round
from cq2a.trace import emit


def reask(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    context = state["context"]
    started = time.perf_counter()
    updated, usage = reask_round(services(runtime), context, state.get("candidates", []))
    emit(
        "stage_finished",
        context_id=context.id,
        stage="reask",
        counts={"reasked": len(updated)},
        usage=usage.model_dump(),
        seconds=round(time.perf_counter() - started, 3),
    )
    return {"candidates": updated, "usage": usage}
