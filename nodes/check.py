"""Node: constraint checks (III-C1) and near-duplicate removal."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from cq2a.checks.rules import Grounding, check_round
from cq2a.generation.questions import example_names
from cq2a.graph.state import ContextState
from cq2a.language.deixis import deixis_for
from cq2a.models.candidates import at_step
from cq2a.nodes._events import emit_outcomes, stage
from cq2a.nodes._runtime import services
from cq2a.runtime.steps import check_limits
from cq2a.settings import Settings


def check(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    passage = state["context"]
    run = services(runtime)
    speech = run.speaking(passage.language)
    candidates = state.get("candidates", [])
    waiting = {c.id for c in at_step(candidates, "check")}
    with stage("check", passage.id) as report:
        settled = check_round(
            candidates,
            speech.lemmatize,
            speech.embedder.similarity_matrix,
            check_limits(run.settings),
            speech.parse_question if run.settings.sut.question_alone else None,
            deixis_for(passage.language),
            Grounding(
                passage.context,
                example_names(passage.language, speech.lemmatize),
                passage.title,
                passage.language,
            ),
        )
        checked = [c for c in settled if c.id in waiting]
        emit_outcomes(passage.id, "check", checked)
        passed = sum(not c.current.rejected for c in checked)
        report.counts = {"checked": len(checked), "passed": passed}
    return {"candidates": settled}
