"""One real run on the small local model (SmolLM2-135M via llama.cpp): real model output flows
through every stage and every candidate is accounted for."""

import json

import pytest

from cq2a.app.run import run_pipeline
from cq2a.runtime.services import release_services
from cq2a.settings import LLMSpec, Settings, SUTSpec

SMALL = "smollm2-135m-instruct"


@pytest.mark.model
def test_real_small_model_runs_the_pipeline_end_to_end(tmp_path):
    release_services()
    source = tmp_path / "contexts.jsonl"
    record = {
        "id": "normans",
        "context": "The Normans gave their name to Normandy, a region in France. "
        "Rollo signed a treaty with King Charles III in 911.",
    }
    source.write_text(json.dumps(record) + "\n", encoding="utf-8")
    settings = Settings(
        generator=LLMSpec(model=SMALL, max_tokens=400),
        reasker=LLMSpec(model=SMALL, max_tokens=24),
        judge=LLMSpec(model=SMALL, temperature=0.0, max_tokens=128),
        sut=SUTSpec(kind="openai", backend="local", model=SMALL),
        answers_per_context=1,
        questions_per_entity=2,
        relations=False,
        question_mix="entity=1",
        coverage_rounds=0,
        max_attempts=1,
        # The 135M model fails the judge probe (it scores 'Iceland' like 'Normandy'), which
        # stops a run; this test is about the stages, not the judge.
        probe_judge=False,
    )
    summary = run_pipeline(source, tmp_path / "run", settings)

    assert summary.status == "finished"
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    counts = run["counts"]
    assert counts["candidates"] == 2
    assert counts["accepted"] + counts["rejected"] == counts["candidates"]
    rejected = [json.loads(line) for line in (tmp_path / "run" / "rejected.jsonl").open()]
    assert all(attempt["reasons"] for c in rejected for attempt in c["attempts"])
    # at least the generation request (the judge probe, 2 more, is off here)
    assert run["usage"]["requests"] >= 1 and run["usage"]["completion_tokens"] > 0
    release_services()
