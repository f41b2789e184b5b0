"""Node: extract answers from one context (III-A)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from cq2a.answers.plan import extract_answers
from cq2a.graph.state import ContextState
from cq2a.models.records import AnswerKind
from cq2a.nodes._events import emit_context_finished, emit_left_out, stage
from cq2a.nodes._runtime import services
from cq2a.runtime.steps import extraction_limits
from cq2a.runtime.trace import emit
from cq2a.settings import Settings


def extract(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    passage = state["context"]
    run = services(runtime)
    speech = run.speaking(passage.language)
    emit("stage_started", context_id=passage.id, stage="extract")
    with stage("extract", passage.id) as report:
        extraction = extract_answers(
            passage,
            speech.parser.parse,
            speech.lemmatize,
            lambda: run.llm.generator,
            extraction_limits(run.settings),
        )
        emit_left_out(extraction, run.settings.max_sentence_tokens)
        answers = extraction.answers
        report.counts = {kind.value: sum(a.kind is kind for a in answers) for kind in AnswerKind}
    update = {
        "answers": answers,
        "plans": [extraction.plan] if extraction.plan else [],
        "usage": report.usage,
        "rounds": 0,
        "skipped": extraction.skips,
    }
    if answers:
        return update
    emit_context_finished(passage.id, answers, [])
    return update | {"finished": [passage.id]}
