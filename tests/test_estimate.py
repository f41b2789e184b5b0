"""``cq2a estimate``: rates measured on a run, and the estimate against what a scripted run
really sent."""

from __future__ import annotations

import pytest

from cq2a.app import outputs as out
from cq2a.app.estimate import Rates, estimate_run, rejection_per_round, vote_requests_per_question
from cq2a.app.run import run_pipeline
from cq2a.cli import main
from cq2a.runtime.services import release_services
from cq2a.settings import LLMSpec, Settings
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker


@pytest.fixture(autouse=True)
def fresh_runtimes():
    release_services()
    yield
    release_services()


@pytest.mark.parametrize(("attempts", "max_attempts"), [(1.0, 2), (1.5, 2), (1.75, 3), (2.0, 2)])
def test_the_rejection_rate_reproduces_the_mean_attempts(attempts, max_attempts):
    p = rejection_per_round(attempts, max_attempts)
    assert sum(p**k for k in range(max_attempts)) == pytest.approx(attempts, abs=1e-6)


def test_an_estimate_from_a_run_s_rates_is_within_30_percent_of_what_another_run_sent(tmp_path):
    measured = worker.write_input(tmp_path / "a.jsonl", worker.contexts(2))
    other = worker.write_input(tmp_path / "b.jsonl", worker.contexts(4, prefix="other")[2:])
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        settings = worker.settings_for(server.base_url, answers_per_context=2)
        run_pipeline(measured, tmp_path / "a", settings)
        release_services()
        run_pipeline(other, tmp_path / "b", settings)
    rates = Rates.from_run(tmp_path / "a")
    candidates = out.read_jsonl(tmp_path / "a" / out.CANDIDATES)
    attempts = sum(len(c["attempts"]) for c in candidates)
    assert rates.attempts_per_slot == attempts / len(candidates) > 1.0
    assert 0 < rates.accepted_per_slot <= 1 and 0 < rates.judged_per_test <= 1

    figures = estimate_run(other, settings, rates)
    actual = out.read_json(tmp_path / "b" / out.RUN)["usage"]
    assert figures["total"]["requests"] == pytest.approx(actual["requests"], rel=0.3)
    assert figures["total"]["total_tokens"] == pytest.approx(actual["total_tokens"], rel=0.3)
    expected_tests = len(out.read_jsonl(tmp_path / "b" / out.TEST_CASES))
    assert figures["expected_tests"] == pytest.approx(expected_tests, rel=0.3)

    # Every run records the estimate made before it started (default rates) beside its usage.
    recorded = out.read_json(tmp_path / "b" / out.RUN)["estimate"]
    assert recorded["actual_total_tokens"] == actual["total_tokens"]
    assert recorded["rates"] == "defaults" and recorded["total_tokens"] > 0
    error = (recorded["total_tokens"] - actual["total_tokens"]) / actual["total_tokens"]
    assert recorded["error"] == pytest.approx(error, abs=1e-3)


def test_a_large_input_is_estimated_on_a_sample_scaled_to_all_of_it():
    from cq2a.app.estimate import estimate_contexts

    settings = worker.settings_for("http://127.0.0.1:9/v1")
    contexts = worker.contexts(8)  # the 4 texts twice
    whole = estimate_contexts(contexts, settings, Rates())
    sampled = estimate_contexts(contexts, settings, Rates(), sample=4)
    assert sampled["contexts"] == 8 and sampled["sampled_contexts"] == 4
    assert sampled["total"]["total_tokens"] == pytest.approx(whole["total"]["total_tokens"], 0.01)


def test_estimate_prints_a_table_per_stage_and_refuses_a_run_dir_without_candidates(
    tmp_path, capsys
):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(1))
    assert main(["estimate", str(input_path), "--no-relations"]) == 0
    printed = capsys.readouterr().out
    for stage in ("generate", "reask", "evaluate", "total"):
        assert f"\n{stage}" in printed
    (tmp_path / "empty").mkdir()
    assert main(["estimate", str(input_path), "--from", str(tmp_path / "empty")]) == 2
    assert "no candidates.jsonl" in capsys.readouterr().err


def test_vote_requests_follow_the_local_servers_slots():
    assert vote_requests_per_question(Settings(local_slots=4)) == 2.0  # 4 choices, then 1
    assert vote_requests_per_question(Settings(local_slots=5)) == 1.0
    no_n = Settings(reasker=LLMSpec(supports_n=False), local_slots=8)
    assert vote_requests_per_question(no_n) == 5.0
    assert vote_requests_per_question(Settings(reasker=LLMSpec(backend="openai"))) == 1.0
