"""Nodes: check every component once and probe the judge (III-D), before anything is spent;
then stop the run if the judge failed its probe.

The two are separate steps so that a failed probe is saved in the run's state (and run.json)
before the run stops: a node that raises saves none of its writes.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from cq2a.adapters.llm.usage import tally_usage
from cq2a.graph.state import RunState
from cq2a.models.records import Context
from cq2a.nodes._runtime import services
from cq2a.oracle.judge import probe_judge
from cq2a.runtime.preflight import JudgeProbeFailed, run_preflight
from cq2a.runtime.trace import emit
from cq2a.settings import Settings


def probe(state: RunState, runtime: Runtime[Settings]) -> dict[str, Any]:
    run = services(runtime)
    if run.settings.sut.question_alone:  # the corpus the re-ask searches (corpus_search)
        run.index_corpus([Context.model_validate(c) for c in state.get("contexts", [])])
    if run.settings.preflight:
        run_preflight(run)
    if not run.settings.probe_judge:
        return {"judge_probe": None}
    with tally_usage() as tally:
        result = probe_judge(run.llm.judge, run.settings.judge_threshold, run.settings.judge_votes)
    emit("judge_probe", passed=result.passed, detail=result.detail)
    return {"judge_probe": result, "usage": tally.total}


def trust_judge(state: RunState, runtime: Runtime[Settings]) -> dict[str, Any]:
    """Stop when the judge failed its probe and the probe is asked for; a run resumed with
    ``--no-judge-probe`` goes on (its run.json still says the judge failed)."""
    result = state.get("judge_probe")
    if result is not None and not result.passed and services(runtime).settings.probe_judge:
        raise JudgeProbeFailed(
            f"judge probe failed: {result.detail}. Bugs this judge reports cannot be trusted: "
            "use a stronger judge model, or pass --no-judge-probe to run anyway"
        )
    return {}
