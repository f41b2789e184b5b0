"""Node: re-ask each surviving question several times and take the majority (III-C2 step 1);
for a SUT that gets the question alone, over its own passage and over the corpus."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from cq2a.consistency.reask import reask_round
from cq2a.graph.state import ContextState
from cq2a.nodes._events import stage
from cq2a.nodes._runtime import corpus_search, services
from cq2a.settings import Settings


def reask(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    passage = state["context"]
    run = services(runtime)
    with stage("reask", passage.id) as report:
        asked = reask_round(
            run.llm.reasker,
            passage,
            state.get("candidates", []),
            run.settings.votes,
            run.settings.concurrency,
            run.speaking(passage.language).lemmatize,
            corpus_search(runtime),
        )
        report.counts = {"reasked": len(asked)}
    return {"candidates": asked, "usage": report.usage}
