"""Node: constraint checks (III-C1) and near-duplicate removal."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from cq2a.candidates import at_step, settle
from cq2a.checks import apply_constraints
from cq2a.dedup import mark_duplicates
from cq2a.graph.state import ContextState
from cq2a.nodes._runtime import services
from cq2a.settings import Settings
from cq2a.trace import emit

#: Where a question that passed its checks in an earlier round waits, until accepted.
PAST_CHECKS = ("reask", "compare")


def check(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    context = state["context"]
    run = services(runtime)
    settings = run.settings
    candidates = state.get("candidates", [])
    checked = [
        apply_constraints(
            candidate,
            run.lemmatize,
            min_chars=settings.min_question_chars,
            max_chars=settings.max_question_chars,
            leak_rule=settings.leak_rule,
        )
        for candidate in at_step(candidates, "check")
    ]
    passed = at_step(checked, "reask")
    # Questions kept from earlier rounds win over this round's: accepted ones, and those still
    # on their way to acceptance.
    earlier = [c for c in candidates if c.status == "accepted" or c.next_step in PAST_CHECKS]
    deduped = (
        mark_duplicates(passed, earlier, run.embedder.similarity_matrix, settings.dedup_threshold)
        if passed
        else []
    )
    by_id = {c.id: c for c in [*checked, *deduped]}
    # Every slot leaves settled, including one of an older checkpoint whose generation failed
    # on its last attempt (see Candidate's implied step).
    settled = [settle(by_id.get(c.id, c), settings.max_attempts) for c in candidates]
    tried = [c for c in settled if c.attempts]  # a slot whose generation call failed has none
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
    return {"candidates": settled}
