"""Node: run the software under test in batches and apply the two-stage oracle (III-D)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from cq2a.coverage.diversity import suite_figures
from cq2a.graph.state import RunState
from cq2a.models.candidates import test_cases_of
from cq2a.models.records import Context
from cq2a.nodes._events import stage
from cq2a.nodes._runtime import services
from cq2a.runtime.services import release_services
from cq2a.runtime.steps import evaluate_with
from cq2a.runtime.trace import emit
from cq2a.settings import Settings


def evaluate(state: RunState, runtime: Runtime[Settings]) -> dict[str, Any]:
    run = services(runtime)
    passages = {c.id: c for c in map(Context.model_validate, state.get("contexts", []))}
    cases = test_cases_of(state.get("candidates", []), passages)
    emit("stage_started", stage="evaluate", counts={"test_cases": len(cases)})
    with stage("evaluate") as report:
        corpus = [(passage.id, passage.context) for passage in passages.values()]
        verdicts = evaluate_with(run, cases, corpus)
        report.counts = {
            "test_cases": len(cases),
            "judged": sum(v.stage == "judge" for v in verdicts),
            "unjudged": sum(v.stage == "unjudged" for v in verdicts),
            "bugs": sum(v.bug for v in verdicts),
        }
    figures = suite_figures(
        cases, state.get("plans", []), run.settings.mix(), run.embedder.similarity_matrix
    )
    release_services(run.run_key)  # the run is over: its cache closes, its meter goes
    return {"verdicts": verdicts, "usage": report.usage, "figures": figures}
