"""Node: run the software under test in batches and apply the two-stage oracle (III-D).

``evaluate`` evaluates a whole run's accepted tests at once (the run graph); ``cq2a run``
evaluates them a chunk of contexts at a time (``evaluate_chunk``), so that it holds one chunk's
tests and verdicts, not the run's."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from cq2a.adapters.llm.usage import Usage
from cq2a.coverage.diversity import DiversityPart, figures_of, suite_part
from cq2a.graph.state import EvaluateState, RunState
from cq2a.models.candidates import test_cases_of
from cq2a.models.records import Context, Verdict
from cq2a.nodes._events import stage
from cq2a.nodes._runtime import services
from cq2a.runtime.services import Services, release_services
from cq2a.runtime.steps import evaluate_with
from cq2a.runtime.trace import emit, trace_event
from cq2a.settings import Settings


def evaluate(state: RunState, runtime: Runtime[Settings]) -> dict[str, Any]:
    """Every accepted test of the run at once, then the suite's figures; the run is over, so
    its services are released."""
    run = services(runtime)
    emit("stage_started", stage="evaluate", counts={"test_cases": _accepted(state)})
    verdicts, usage, part = _evaluate_tests(run, state, {})
    figures = figures_of(part, run.settings.mix())
    release_services(run.run_key)  # the run is over: its cache closes, its meter goes
    return {"verdicts": verdicts, "usage": usage, "figures": figures}


def evaluate_chunk(state: EvaluateState, runtime: Runtime[Settings]) -> dict[str, Any]:
    """One chunk of ``cq2a run``'s evaluate: its verdicts, usage and part of the suite's
    figures. The run's services stay: its cache and spending meter serve the chunks after it,
    and the engine releases them once the last one ends."""
    place = {key: state[key] for key in ("chunk", "chunks") if key in state}
    verdicts, usage, part = _evaluate_tests(services(runtime), state, place)
    return {"verdicts": verdicts, "usage": usage, "part": part}


def evaluate_started(test_cases: int, evaluated: int, chunks: int) -> dict[str, Any]:
    """The one ``stage_started`` event of a chunked evaluate: the run's tests, those a stopped
    run already evaluated, and the chunks left (each ends with its ``stage_finished``)."""
    counts = {"test_cases": test_cases, "evaluated": evaluated, "chunks": chunks}
    return trace_event("stage_started", stage="evaluate", counts=counts)


def _accepted(state: RunState | EvaluateState) -> int:
    return sum(c.status == "accepted" for c in state.get("candidates", []))


def _evaluate_tests(
    run: Services, state: RunState | EvaluateState, place: dict[str, int]
) -> tuple[list[Verdict], Usage, DiversityPart]:
    """The state's accepted tests against the SUT and the oracle, against the corpus of all
    the state's contexts; ``stage_finished`` says their counts (and ``place``, a chunk's)."""
    passages = {c.id: c for c in map(Context.model_validate, state.get("contexts", []))}
    cases = test_cases_of(state.get("candidates", []), passages)
    with stage("evaluate") as report:
        corpus = [(passage.id, passage.context) for passage in passages.values()]
        verdicts = evaluate_with(run, cases, corpus)
        report.counts = {
            "test_cases": len(cases),
            "judged": sum(v.stage == "judge" for v in verdicts),
            "unjudged": sum(v.stage == "unjudged" for v in verdicts),
            "bugs": sum(v.bug for v in verdicts),
            **place,
        }
    part = suite_part(cases, state.get("plans", []), run.embedder.similarity_matrix)
    return verdicts, report.usage, part
