"""Node: once a context's slots have settled, give slots to answers in sentences no accepted
test covers and of kinds the accepted tests lack (coverage-steered generation), or end it."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END
from langgraph.runtime import Runtime

from cq2a.coverage.steering import coverage, coverage_round, cut_back
from cq2a.graph.state import ContextState
from cq2a.models.candidates import left_pending
from cq2a.nodes._events import emit_context_finished
from cq2a.runtime.steps import coverage_limits
from cq2a.runtime.trace import emit
from cq2a.settings import Settings


def cover(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    passage = state["context"]
    plan = next(p for p in state.get("plans", []) if p.id == passage.id)
    answers, candidates = state.get("answers", []), state.get("candidates", [])
    reached = coverage(candidates, plan.sentence_spans)
    limits = coverage_limits(runtime.context)
    more = coverage_round(plan, answers, candidates, limits)
    if not more:
        emit_context_finished(passage.id, answers, candidates, coverage=reached)
        return {"finished": [passage.id], "candidates": left_pending(candidates)}
    # the kinds this round gave no places to, however far below their share (kept in the plan)
    stopped = {str(kind): why for kind, why in cut_back(limits.mix, candidates).items()}
    emit(
        "coverage_round",
        context_id=passage.id,
        coverage=reached,
        answers=[a.id for a in more],
        cut_back=stopped,
    )
    next_plan = plan.model_copy(
        update={"coverage_rounds": plan.coverage_rounds + 1, "cut_back": plan.cut_back | stopped}
    )
    return {"answers": more, "plans": [next_plan], "rounds": 0, "settled": False}


def route_after_cover(state: ContextState) -> str:
    return END if state["context"].id in state.get("finished", []) else "generate"
