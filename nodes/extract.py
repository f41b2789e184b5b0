"""Node: extract answers from one context (III-A)."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from cq2a.extraction import Extraction, extract_context
from cq2a.graph.state import ContextState
from cq2a.inputs import too_long_for_window
from cq2a.llm.usage import tally_usage
from cq2a.models import AnswerKind
from cq2a.nodes._runtime import services
from cq2a.settings import Settings
from cq2a.trace import emit


def extract(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    context = state["context"]
    run = services(runtime)
    started = time.perf_counter()
    emit("stage_started", context_id=context.id, stage="extract")
    roles = {"generator": run.settings.generator, "reasker": run.settings.reasker}
    too_long = too_long_for_window(context, {r: spec.window() for r, spec in roles.items()})
    if too_long:
        answers, usage, skips = [], None, [too_long]
    else:
        with tally_usage() as tally:
            extraction = extract_context(run, context)
        emit_left_out(extraction, run.settings.max_sentence_tokens)
        answers, usage, skips = extraction.answers, tally.total, extraction.skips
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


def emit_left_out(extraction: Extraction, max_sentence_tokens: int) -> None:
    """One event per sentence, relation call or triple that extraction left out."""
    context_id = extraction.context_id
    for sentence in extraction.long_sentences:
        emit(
            "sentence_skipped",
            context_id=context_id,
            sentence_index=sentence.index,
            tokens=len(sentence.tokens),
            reason=f"longer than max_sentence_tokens={max_sentence_tokens}",
        )
    relations = extraction.relations
    if relations is None:
        return
    if relations.error is not None:
        emit("relations_failed", context_id=context_id, error=relations.error)
    if relations.malformed is not None:
        emit("relations_malformed", context_id=context_id, error=relations.malformed)
    for triple, reason in relations.dropped:
        emit("triple_dropped", context_id=context_id, triple=triple.model_dump(), reason=reason)
