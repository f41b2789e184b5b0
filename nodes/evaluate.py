"""Node: run the software under test in batches and apply the two-stage oracle (III-D)."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from cq2a.candidates import test_cases_of
from cq2a.graph.state import RunState
from cq2a.llm.usage import tally_usage
from cq2a.models import Context
from cq2a.nodes._runtime import services
from cq2a.services import release_services
from cq2a.settings import Settings
from cq2a.suite import evaluate_cases
from cq2a.trace import emit


def evaluate(state: RunState, runtime: Runtime[Settings]) -> dict[str, Any]:
    run = services(runtime)
    started = time.perf_counter()
    contexts = {c.id: c for c in map(Context.model_validate, state.get("contexts", []))}
    cases = test_cases_of(state.get("candidates", []), contexts)
    emit("stage_started", stage="evaluate", counts={"test_cases": len(cases)})
    with tally_usage() as tally:
        verdicts = evaluate_cases(run, cases)
    usage = tally.total
    emit(
        "stage_finished",
        stage="evaluate",
        counts={
            "test_cases": len(cases),
            "judged": sum(v.stage == "judge" for v in verdicts),
            "unjudged": sum(v.stage == "unjudged" for v in verdicts),
            "bugs": sum(v.bug for v in verdicts),
        },
        usage=usage.model_dump(),
        seconds=round(time.perf_counter() - started, 3),
    )
    release_services(run.run_key)  # the run is over: its cache closes, its meter goes
    return {"verdicts": verdicts, "usage": usage}
