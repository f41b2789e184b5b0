"""Node: generate questions for every slot that needs one (III-B), with feedback on retries."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from cq2a.graph.state import ContextState
from cq2a.nodes._runtime import services
from cq2a.settings import Settings
from cq2a.stages import generate_round
from cq2a.trace import emit


def generate(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    context = state["context"]
    started = time.perf_counter()
    round_number = state.get("rounds", 0) + 1
    emit("stage_started", context_id=context.id, stage="generate", round=round_number)
    updated, usage = generate_round(
        services(runtime), context, state.get("answers", []), state.get("candidates", [])
    )
    emit(
        "stage_finished",
        context_id=context.id,
        stage="generate",
        round=round_number,
        counts={"questions": sum(bool(c.attempts and c.current.question) for c in updated)},
        usage=usage.model_dump(),
        seconds=round(time.perf_counter() - started, 3),
    )
    return {"candidates": updated, "usage": usage, "rounds": round_number}
