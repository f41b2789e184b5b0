"""``cq2a run`` evaluates its accepted tests a chunk of contexts at a time: the verdicts, counts
and figures are those of one evaluate over every test, and a run stopped part way through
evaluate resumes with the chunks it did not keep. Every LLM role is played by the scripted
server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cq2a.app import engine
from cq2a.app import outputs as out
from cq2a.app.run import run_pipeline
from cq2a.app.store import open_store
from cq2a.runtime.services import release_services
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker

LOGGING_SUT = {"kind": "callable", "model": "evals.reliability_worker:logging_sut"}


@pytest.fixture(autouse=True)
def fresh_runtimes():
    release_services()
    worker.SUT_LOG.reset()
    yield
    worker.SUT_LOG.reset()
    release_services()


def scripted_run(
    server: ScriptedLLMServer, input_path: Path, run_dir: Path, **overrides: Any
) -> dict[str, Any]:
    worker.script().install(server.rules)
    run_pipeline(input_path, run_dir, worker.settings_for(server.base_url, **overrides))
    return out.read_json(run_dir / out.RUN)


def evaluate_events(run_dir: Path, event: str) -> list[dict[str, Any]]:
    """The run's trace events of this kind for the evaluate stage."""
    events = out.read_jsonl(run_dir / out.TRACE)
    return [e for e in events if e["event"] == event and e.get("stage") == "evaluate"]


def kept_chunks(run_dir: Path) -> list[list[str]]:
    """The contexts of each evaluated chunk the run's store keeps."""
    with open_store(run_dir / out.STORE) as store:
        return [chunk.contexts for chunk in store.evaluated()]


def results(run_dir: Path, record: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on how evaluate was chunked: the verdicts and tests in run order,
    the counts, the figures and evaluate's usage."""
    with open_store(run_dir / out.STORE) as store:
        evaluate_usage = store.text("evaluate_usage")
    return {
        "verdicts": (run_dir / out.VERDICTS).read_text(encoding="utf-8"),
        "tests": (run_dir / out.TEST_CASES).read_text(encoding="utf-8"),
        "bugs": (run_dir / out.BUGS).read_text(encoding="utf-8"),
        "counts": record["counts"],
        "figures": record["figures"],
        "evaluate_usage": evaluate_usage,
    }


def test_an_evaluate_in_chunks_gives_the_verdicts_and_figures_of_one_chunk(tmp_path, monkeypatch):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(10))
    with ScriptedLLMServer() as server:
        monkeypatch.setattr(engine, "EVALUATE_CHUNK_CONTEXTS", 1000)
        whole = scripted_run(server, input_path, tmp_path / "whole")
        monkeypatch.setattr(engine, "EVALUATE_CHUNK_CONTEXTS", 3)
        chunked = scripted_run(server, input_path, tmp_path / "chunked")
    assert whole["status"] == chunked["status"] == "finished"
    assert whole["counts"]["accepted"] > 0 and whole["counts"]["bugs"] > 0
    assert whole["figures"]["diversity"]["contexts_with_tests"] > 3
    assert results(tmp_path / "chunked", chunked) == results(tmp_path / "whole", whole)
    ids = [c.id for c in worker.contexts(10)]
    assert kept_chunks(tmp_path / "whole") == [ids]
    assert kept_chunks(tmp_path / "chunked") == [ids[0:3], ids[3:6], ids[6:9], ids[9:]]
    # one started event with the run's tests, then one finished event per chunk
    for run, chunks in (("whole", 1), ("chunked", 4)):
        started = evaluate_events(tmp_path / run, "stage_started")
        finished = evaluate_events(tmp_path / run, "stage_finished")
        assert [e["counts"] for e in started] == [
            {"test_cases": whole["counts"]["accepted"], "evaluated": 0, "chunks": chunks}
        ]
        assert [e["counts"]["chunk"] for e in finished] == list(range(1, chunks + 1))
        assert sum(e["counts"]["test_cases"] for e in finished) == whole["counts"]["accepted"]


def test_a_run_stopped_in_evaluate_resumes_with_the_chunks_it_did_not_keep(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "EVALUATE_CHUNK_CONTEXTS", 3)
    contexts = worker.contexts(9)
    input_path = worker.write_input(tmp_path / "in.jsonl", contexts)
    first_two = {c.id for c in contexts[:6]}
    with ScriptedLLMServer() as server:
        reference = scripted_run(server, input_path, tmp_path / "reference", sut=LOGGING_SUT)
        tests = out.read_jsonl(tmp_path / "reference" / out.TEST_CASES)
        before = [t["question"] for t in tests if t["context_id"] in first_two]
        after = [t["question"] for t in tests if t["context_id"] not in first_two]
        assert before and after
        # the SUT crashes once it has answered the first two chunks' tests
        worker.SUT_LOG.reset(crash_after=len(before))
        stopped = scripted_run(server, input_path, tmp_path / "run", sut=LOGGING_SUT)
        assert sorted(worker.SUT_LOG.asked) == sorted(before)
        assert kept_chunks(tmp_path / "run") == [
            [c.id for c in contexts[i : i + 3]] for i in (0, 3)
        ]
        with open_store(tmp_path / "run" / out.STORE) as store:
            assert len(store.verdicts()) == len(before)
        worker.SUT_LOG.reset()
        server.reset()
        release_services()
        settings = worker.settings_for(server.base_url, sut=LOGGING_SUT)
        summary = run_pipeline(input_path, tmp_path / "run", settings, resume=True)
        bodies = [json.dumps(r.body) for r in server.requests]
    assert stopped["status"] == "failed" and "SUT crashed" in stopped["message"]
    assert summary.status == "finished", summary.message
    # the resumed run evaluated the last chunk alone: its SUT calls and judge requests
    assert sorted(worker.SUT_LOG.asked) == sorted(after)
    assert bodies and all("gold_answer" in body for body in bodies)
    record = out.read_json(tmp_path / "run" / out.RUN)
    resumed, expected = (
        results(tmp_path / "run", record),
        results(tmp_path / "reference", reference),
    )
    assert resumed == expected
    started = evaluate_events(tmp_path / "run", "stage_started")[-1]
    assert started["counts"] == {
        "test_cases": len(tests),
        "evaluated": len(before),
        "chunks": 1,
    }


def test_a_question_alone_sut_is_handed_the_corpus_once_however_many_chunks(tmp_path, monkeypatch):
    """A SUT that retrieves its own passages (``index``) is indexed once per run, over every
    passage, not once per chunk."""
    contexts = worker.contexts(9)
    input_path = worker.write_input(tmp_path / "in.jsonl", contexts)
    monkeypatch.setattr(engine, "EVALUATE_CHUNK_CONTEXTS", 3)
    sut = {**LOGGING_SUT, "input": "question"}
    with ScriptedLLMServer() as server:
        record = scripted_run(server, input_path, tmp_path / "run", sut=sut)
    assert record["status"] == "finished"
    assert len(kept_chunks(tmp_path / "run")) == 3
    assert len(worker.SUT_LOG.asked) == record["counts"]["test_cases"] > 0
    assert [sorted(ids) for ids in worker.SUT_LOG.indexed] == [sorted(c.id for c in contexts)]
