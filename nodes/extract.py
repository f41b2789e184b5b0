"""Node: extract answers from one context (III-A)."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from cq2a.graph.state import ContextState
from cq2a.inputs import too_long_for_window
from cq2a.models import AnswerKind
from cq2a.nodes._runtime import services
from cq2a.settings import Settings
from cq2a.stages import extract_answers
from cq2a.trace import emit


def extract(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    context = state["context"]
    run = services(runtime)
    started = time.perf_counter()
    emit("stage_started", context_id=context.id, stage="extract")
    roles = {"generator": run.settings.generator, "reasker": run.settings.reasker}
    too_long = too_long_for_window(context, {r: spec.window() for r, spec in roles.items()})
    answers, usage, skips = ([], None, [too_long]) if too_long else extract_answers(run, context)
    counts = {kind.value: sum(a.kind is kind for a in answers) for kind in AnswerKind}
    emit(
        "stage_finished",
        context_id=context.id,
        stage="extract",
        counts=counts,
        usage=usage.model_dump() if usage else None,
        seconds=round(time.perf_counter() - started, 3),
    )
    update = {"answers": answers, "usage": usage, "rounds": 0, "skipped": skips}
    if answers:
        return update
    emit("context_finished", context_id=context.id, counts={"answers": 0, "accepted": 0})
    return update | {"finished": [context.id]}
