"""What a run leaves in its directory besides the tests: the thresholds it decided with, and the
per-context files written as each context finishes. Every role is played by the scripted
server."""

from __future__ import annotations

import pytest

from cq2a.app import outputs as out
from cq2a.app.run import run_pipeline
from cq2a.language.embeddings import MINILM_THRESHOLD
from cq2a.runtime.services import release_services
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker


@pytest.fixture(autouse=True)
def fresh_runtimes():
    release_services()
    yield
    release_services()


def test_run_json_records_the_thresholds_applied_with_their_defaults_resolved(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(1))
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        settings = worker.settings_for(server.base_url)
        run_pipeline(input_path, tmp_path / "run", settings)
    record = out.read_json(tmp_path / "run" / out.RUN)
    # the defaults: thresholds unset, so the embedding model's calibrated cosine applies
    assert settings.consistency_threshold is None and settings.oracle_threshold is None
    assert settings.embedding_model == "all-MiniLM-L6-v2"
    assert record["thresholds"] == {
        "consistency": MINILM_THRESHOLD,
        "oracle": MINILM_THRESHOLD,
        "judge": 50,
        # and per language of the run's passages: its embedder and the thresholds it decided with
        "by_language": {
            "en": {
                "embedding": "all-MiniLM-L6-v2",
                "consistency": MINILM_THRESHOLD,
                "oracle": MINILM_THRESHOLD,
            }
        },
    }
    assert record["languages"] == {"en": 1}


def test_pending_slots_go_to_the_partial_pending_file_not_the_rejected_one(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(2))
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        server.fail_next("500", times=10_000)  # every call fails: no slot can be settled
        settings = worker.settings_for(server.base_url, llm_retries=0, breaker_failures=10_000)
        summary = run_pipeline(input_path, tmp_path / "run", settings)
    run_dir = tmp_path / "run"
    pending = out.read_jsonl(run_dir / out.PENDING)
    assert summary.status == "incomplete", summary.message
    assert len(pending) == 4 and {c["status"] for c in pending} == {"pending"}
    partial = run_dir / out.PARTIAL
    assert out.read_jsonl(partial / out.REJECTED) == []
    assert sorted(c["id"] for c in out.read_jsonl(partial / out.PENDING)) == sorted(
        c["id"] for c in pending
    )


def test_a_stopped_run_counts_each_finished_contexts_spending_once(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(8))
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        settings = worker.settings_for(server.base_url, max_tokens=6000)
        summary = run_pipeline(input_path, tmp_path / "run", settings)
        sent = len(server.requests)
        tokens = sum(r.prompt_tokens + r.completion_tokens for r in server.requests)
    record = out.read_json(tmp_path / "run" / out.RUN)
    assert summary.status == "stopped" and "token cap reached" in summary.message
    assert 0 < record["counts"]["contexts_finished"] < 8
    # each request is counted once at most (reading the checkpoint once counted finished
    # contexts twice: 26 requests for 17 sent); a request still in flight when the cap stopped
    # the run can reach the server without its reply being metered, never the other way round
    assert sent - settings.concurrency <= record["usage"]["requests"] <= sent
    assert record["usage"]["total_tokens"] <= tokens
