"""Node: extract answers from one context (III-A)."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from cq2a.graph.state import ContextState
from cq2a.models import AnswerKind
from cq2a.nodes._runtime import services
from cq2a.settings import Settings
from cq2a.stages import extract_answers
from cq2a.trace import emit


def extract(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    context = state["context"]
    started = time.perf_counter()
    emit("stage_started", context_id=context.id, stage="extract")
    answers, usage = extract_answers(services(runtime), context)
    counts = {kind.value: sum(a.kind is kind for a in answers) for kind in AnswerKind}
    emit(
        "stage_finished",
        context_id=context.id,
        stage="extract",
        counts=counts,
        usage=usage.model_dump(),
        seconds=round(time.perf_counter() - started, 3),
    )
    return {"answers": answers, "usage": usage, "rounds": 0}
