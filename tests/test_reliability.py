"""Reliability of whole runs: injected faults, crashes and resume, the LLM cache, malformed output,
the spending cap, secrets, and bad input. Every role is played by the scripted server."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cq2a.app import outputs as out
from cq2a.app.run import run_pipeline
from cq2a.app.rundir import RunDirError
from cq2a.app.store import JUDGE_PROBE, RUN_ID, open_store
from cq2a.oracle.judge import ProbeResult
from cq2a.runtime.services import release_services
from cq2a.testing.script import marker
from cq2a.testing.scripted_server import FAULT_KINDS, FaultPlan, ScriptedLLMServer
from evals import reliability_worker as worker

ROOT = Path(__file__).resolve().parents[1]
RESULT_FILES = (out.TEST_CASES, out.REJECTED, out.BUGS)


@pytest.fixture(autouse=True)
def fresh_runtimes():
    release_services()
    yield
    release_services()


def scripted_run(
    server: ScriptedLLMServer, input_path: Path, run_dir: Path, **overrides: Any
) -> dict[str, Any]:
    worker.script().install(server.rules)
    summary = run_pipeline(input_path, run_dir, worker.settings_for(server.base_url, **overrides))
    record = out.read_json(run_dir / out.RUN)
    assert record["status"] == summary.status
    return record


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def result_sets(run_dir: Path) -> dict[str, list[str]]:
    return {name: sorted(lines(run_dir / name)) for name in RESULT_FILES}


def assert_counts_match_files(run_dir: Path, record: dict[str, Any]) -> None:
    counts = record["counts"]
    rejected = out.read_jsonl(run_dir / out.REJECTED)
    assert counts["accepted"] == len(lines(run_dir / out.TEST_CASES))
    assert counts["rejected"] == len(rejected)
    assert counts["bugs"] == len(lines(run_dir / out.BUGS))
    reasons = Counter(r for c in rejected for a in c["attempts"] for r in a["reasons"])
    assert counts["rejection_reasons"] == dict(reasons)
    assert sum(counts["rejection_reasons"].values()) == reasons.total()


# ---- faults ----


def test_fault_injection_run_finishes_and_accounts_for_everything(tmp_path):
    contexts = worker.contexts(20)
    input_path = worker.write_input(tmp_path / "in.jsonl", contexts)
    plan = FaultPlan(rate=0.2, kinds=list(FAULT_KINDS), seed=3)
    with ScriptedLLMServer(faults=plan, timeout_hold_s=1.5, retry_after_s=0.01) as server:
        record = scripted_run(
            server,
            input_path,
            tmp_path / "run",
            spec={"timeout_s": 1.0},
            llm_retries=3,
            concurrency=4,
        )
        faults = Counter(r.fault for r in server.requests if r.fault)
    run_dir = tmp_path / "run"
    assert record["status"] == "finished", record["message"]
    assert faults.total() >= 5 and len(faults) >= 3, faults
    done = {a["context_id"] for a in out.read_jsonl(run_dir / out.ANSWERS)}
    done |= {c["context_id"] for c in out.read_jsonl(run_dir / out.REJECTED)}
    done |= {c["context_id"] for c in out.read_jsonl(run_dir / out.TEST_CASES)}
    skipped = {s["id"]: s["reason"] for s in out.read_jsonl(run_dir / out.SKIPPED)}
    for context in contexts:
        assert context.id in done or skipped.get(context.id), context.id
    for candidate in out.read_jsonl(run_dir / out.REJECTED):
        assert candidate["status"] == "rejected"
        assert any(a["reasons"] for a in candidate["attempts"]), candidate["id"]
    verdicts = out.read_jsonl(run_dir / out.VERDICTS)
    assert len(verdicts) == len(lines(run_dir / out.TEST_CASES))
    # "finished" means every fault was retried away: no verdict is left unjudged
    assert {v["stage"] for v in verdicts} <= {"similarity", "judge"}
    assert record["counts"]["candidates"] == 2 * len(contexts)  # 1 answer x 2 slots each
    assert record["counts"]["contexts_finished"] == len(contexts)
    # each slot of candidates.jsonl ends in exactly one of the result files
    every = [c["id"] for c in out.read_jsonl(run_dir / out.CANDIDATES)]
    settled = [c["id"] for c in out.read_jsonl(run_dir / out.TEST_CASES)]
    settled += [c["id"] for c in out.read_jsonl(run_dir / out.REJECTED)]
    assert sorted(settled) == sorted(every) and len(every) == 2 * len(contexts)
    assert lines(run_dir / out.PENDING) == []
    assert_counts_match_files(run_dir, record)


def test_fault_budget_cap_stops_the_run_cleanly(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(6))
    with ScriptedLLMServer() as server:
        record = scripted_run(server, input_path, tmp_path / "run", max_tokens=400)
        sent = len(server.requests)
    run_dir = tmp_path / "run"
    assert record["status"] == "stopped"
    assert "token cap reached" in record["message"] and "400" in record["message"]
    assert sent < 6 * 3  # far fewer requests than a full run of six contexts
    for name in (out.TEST_CASES, out.REJECTED, out.BUGS, out.ANSWERS, out.SKIPPED, out.TRACE):
        assert (run_dir / name).exists(), name
    assert_counts_match_files(run_dir, record)


def test_resume_after_budget_stop_with_a_raised_cap_completes_the_run(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(4))
    with ScriptedLLMServer() as server:
        reference = scripted_run(server, input_path, tmp_path / "reference")
        stopped = scripted_run(server, input_path, tmp_path / "run", max_tokens=2000)
        server.reset()
        summary = run_pipeline(
            input_path, tmp_path / "run", worker.settings_for(server.base_url), resume=True
        )
        resumed_requests = len(server.requests)
    assert stopped["status"] == "stopped" and summary.status == "finished"
    assert 0 < resumed_requests < reference["usage"]["requests"]
    assert result_sets(tmp_path / "run") == result_sets(tmp_path / "reference")


def test_resume_with_other_settings_is_refused_with_advice(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(1))
    with ScriptedLLMServer() as server:
        scripted_run(server, input_path, tmp_path / "run")
        (tmp_path / "run" / out.RUN).unlink()
        changed = worker.settings_for(server.base_url, questions_per_entity=3)
        with pytest.raises(RunDirError, match="nothing to resume.*same input and settings"):
            run_pipeline(input_path, tmp_path / "run", changed, resume=True)


# ---- crash and resume ----


def run_worker(input_path: Path, run_dir: Path, stats: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "evals.reliability_worker", str(input_path), str(run_dir)]
    env = os.environ | {"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([*command, str(stats), *extra], cwd=ROOT, env=env)


def wait_for_finished_contexts(run_dir: Path, process: subprocess.Popen, count: int) -> int:
    deadline = time.time() + 60
    trace = run_dir / out.TRACE
    while time.time() < deadline and process.poll() is None:
        events = [json.loads(line) for line in lines(trace) if line.endswith("}")]
        finished = sum(e.get("event") == "context_finished" for e in events)
        if finished >= count and (run_dir / out.PARTIAL).exists():
            return finished
        time.sleep(0.01)
    raise AssertionError(f"no {count} finished contexts before the worker ended or timed out")


def test_resume_after_sigkill_matches_an_uninterrupted_run(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(10))
    with ScriptedLLMServer(latency_s=0.05) as server:
        reference = scripted_run(server, input_path, tmp_path / "reference")
        full_generation = worker.request_stats(server)["generation"]

    crashed = tmp_path / "crashed"
    process = run_worker(input_path, crashed, tmp_path / "killed.json", "--latency", "0.1")
    try:
        wait_for_finished_contexts(crashed, process, 2)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert not (crashed / out.RUN).exists()

    resumed = run_worker(input_path, crashed, tmp_path / "resumed.json", "--resume")
    assert resumed.wait(timeout=120) == 0
    stats = json.loads((tmp_path / "resumed.json").read_text())
    record = out.read_json(crashed / out.RUN)
    assert stats["status"] == record["status"] == "finished"
    assert result_sets(crashed) == result_sets(tmp_path / "reference")
    test_ids = [case["id"] for case in out.read_jsonl(crashed / out.TEST_CASES)]
    assert len(test_ids) == len(set(test_ids))  # each test once
    assert checkpointed_threads(crashed) == set()  # every context in the store, none in flight
    for line in lines(crashed / out.TRACE):
        json.loads(line)
    assert record["counts"] == reference["counts"]
    assert 0 < stats["generation"] < full_generation


# ---- cache ----


def test_replay_from_shared_cache_makes_no_requests_on_another_port(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(3))
    cache = str(tmp_path / "shared_cache.sqlite")
    # The first server drops n (one choice per request), the second honours it, and the runs
    # use different thread counts: the cache keys depend on none of that, nor on the port.
    with ScriptedLLMServer(honour_n=False) as server:
        first = scripted_run(server, input_path, tmp_path / "first", cache_path=cache)
        first_requests = len(server.requests)
    release_services()
    with ScriptedLLMServer() as other:
        second = scripted_run(
            other, input_path, tmp_path / "second", cache_path=cache, concurrency=4
        )
        assert other.requests == []
    assert first_requests > 0 and first["counts"]["accepted"] > 0
    assert second["status"] == "finished"
    assert second["usage"]["requests"] == 0 and second["usage"]["cached"] >= first_requests
    assert lines(tmp_path / "second" / out.TEST_CASES) == lines(tmp_path / "first" / out.TEST_CASES)


# ---- outages, failures and what they keep ----


def test_outage_mid_run_stops_the_run_and_resume_matches_an_uninterrupted_run(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(4))
    with ScriptedLLMServer() as server:
        reference = scripted_run(server, input_path, tmp_path / "reference")

    with ScriptedLLMServer() as failing:
        reasks = Counter[str]()

        def votes_then_outage(question: str) -> list[str]:
            reasks["n"] += 1
            if reasks["n"] == 3:  # the endpoint goes down after the third re-ask
                failing.fail_next("500", times=10_000)
            return worker.votes(question)

        script = worker.script()
        script.votes = votes_then_outage
        script.install(failing.rules)
        settings = worker.settings_for(failing.base_url, breaker_failures=2)
        stopped = run_pipeline(input_path, tmp_path / "run", settings)
        answered = sum(r.status == 200 for r in failing.requests)
        failing_url = failing.base_url
    record = out.read_json(tmp_path / "run" / out.RUN)
    assert stopped.status == record["status"] == "stopped"
    assert f"LLM at {failing_url} unavailable" in record["message"]
    assert "--resume" in record["message"]
    for name in (out.TEST_CASES, out.REJECTED, out.PENDING, out.CANDIDATES, out.TRACE):
        assert (tmp_path / "run" / name).exists(), name
    assert 0 < answered < reference["usage"]["requests"]
    assert record["counts"]["contexts_finished"] < 4

    release_services()
    with ScriptedLLMServer() as back:  # back up, on another port
        worker.script().install(back.rules)
        resumed = run_pipeline(
            input_path, tmp_path / "run", worker.settings_for(back.base_url), resume=True
        )
        resent = len(back.requests)
    assert resumed.status == "finished", resumed.message
    assert result_sets(tmp_path / "run") == result_sets(tmp_path / "reference")
    assert out.read_json(tmp_path / "run" / out.RUN)["counts"] == reference["counts"]
    assert resent < reference["usage"]["requests"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "cq2a.cli", *args, "--no-progress"]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_dead_llm_exits_3_with_run_json_and_resume_completes_the_run(tmp_path):
    from cq2a.adapters.llm.local_server import free_port

    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(2))
    common = ["--model", "scripted", "--backend", "compatible"]
    common += ["--sut", "callable:evals.reliability_worker:decoding_sut"]
    common += ["--answers-per-context", "1", "--questions-per-entity", "2", "--no-relations"]
    dead_url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    dead = cli(
        "run", str(input_path), "--out", str(tmp_path / "run"), "--base-url", dead_url, *common
    )
    assert dead.returncode == 3, dead.stderr
    record = out.read_json(tmp_path / "run" / out.RUN)
    assert record["status"] == "stopped"
    assert dead_url in record["message"] and "--resume" in record["message"]
    assert "--resume" in dead.stderr and "stopped" in dead.stdout
    assert record["usage"]["requests"] == 0
    for name in (out.TEST_CASES, out.REJECTED, out.BUGS, out.VERDICTS, out.TRACE):
        assert (tmp_path / "run" / name).exists(), name

    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        live = ["--base-url", server.base_url, *common, "--no-judge-probe"]
        resumed = cli("run", str(input_path), "--out", str(tmp_path / "run"), "--resume", *live)
        fresh = cli("run", str(input_path), "--out", str(tmp_path / "fresh"), *live)
    assert resumed.returncode == 0, resumed.stderr
    assert fresh.returncode == 0, fresh.stderr
    assert out.read_json(tmp_path / "run" / out.RUN)["status"] == "finished"
    assert result_sets(tmp_path / "run") == result_sets(tmp_path / "fresh")
    assert lines(tmp_path / "run" / out.TEST_CASES)


def test_failed_judge_probe_stops_the_run_before_generation(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(2))
    with ScriptedLLMServer() as server:
        # worker.judge scores 'Iceland' against 'Normandy' 95: a judge that cannot be trusted
        record = scripted_run(server, input_path, tmp_path / "run", probe_judge=True)
        prompts = [json.dumps(r.body) for r in server.requests]
    assert record["status"] == "stopped"
    assert "judge probe failed" in record["message"] and "--no-judge-probe" in record["message"]
    # the failed probe is recorded, so the report can say the judge failed it
    assert record["judge_probe"]["passed"] is False
    assert "Iceland" in record["judge_probe"]["detail"]
    # the probe's two judge calls, each its votes then the median vote's explanation
    assert len(prompts) == 4 and not any("Target answer" in p for p in prompts)
    assert lines(tmp_path / "run" / out.CANDIDATES) == []


def test_failed_judge_probe_is_checkpointed_and_resume_without_the_probe_finishes(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(1))
    with ScriptedLLMServer() as server:
        stopped = scripted_run(server, input_path, tmp_path / "run", probe_judge=True)
        with open_store(tmp_path / "run" / out.STORE) as store:
            checkpointed = store.meta(JUDGE_PROBE, ProbeResult)
            assert store.text(RUN_ID) == stopped["run_id"]
        release_services()
        resumed = run_pipeline(
            input_path,
            tmp_path / "run",
            worker.settings_for(server.base_url, probe_judge=False),
            resume=True,
        )
    record = out.read_json(tmp_path / "run" / out.RUN)
    assert stopped["status"] == "stopped" and checkpointed and checkpointed.passed is False
    assert resumed.status == "finished", resumed.message
    assert record["counts"]["accepted"] > 0
    # the run went on with --no-judge-probe; the judge it used still failed its probe
    assert record["judge_probe"]["passed"] is False


def test_preflight_stops_on_a_broken_sut_before_any_llm_call(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(1))
    with ScriptedLLMServer() as server:
        record = scripted_run(
            server,
            input_path,
            tmp_path / "run",
            preflight=True,
            sut={"kind": "callable", "model": "evals.reliability_worker:broken_sut"},
        )
        chat_requests = len(server.requests)
    assert record["status"] == "stopped"
    assert record["message"].startswith("software under test callable:")
    assert "SUT crashed" in record["message"] and "--sut" in record["message"]
    assert chat_requests == 0


def test_an_exception_in_the_run_keeps_the_work_and_resume_finishes_it(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(3))
    flaky = {"kind": "callable", "model": "evals.reliability_worker:flaky_sut"}
    with ScriptedLLMServer() as server:
        reference = scripted_run(server, input_path, tmp_path / "reference", sut=flaky)
        worker.SUT_BROKEN.set()
        try:
            failed = scripted_run(server, input_path, tmp_path / "run", sut=flaky)
        finally:
            worker.SUT_BROKEN.clear()
        saved = result_sets(tmp_path / "run") | {"verdicts": lines(tmp_path / "run" / out.VERDICTS)}
        release_services()
        summary = run_pipeline(
            input_path,
            tmp_path / "run",
            worker.settings_for(server.base_url, sut=flaky),
            resume=True,
        )
    assert failed["status"] == "failed"
    assert "SUT crashed" in failed["message"] and "--resume" in failed["message"]
    assert "flaky_sut" in failed["error"]["traceback"]
    # the generated tests were written although the SUT never answered
    assert saved[out.TEST_CASES] == result_sets(tmp_path / "reference")[out.TEST_CASES]
    assert failed["counts"]["accepted"] == reference["counts"]["accepted"] > 0
    assert saved["verdicts"] == []
    assert summary.status == "finished"
    assert result_sets(tmp_path / "run") == result_sets(tmp_path / "reference")


def test_unjudged_verdicts_are_counted_apart_and_retry_errors_judges_them(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(3))
    with ScriptedLLMServer() as server:
        server.rules.on(marker("judge.system"), "this is not json")
        first = scripted_run(server, input_path, tmp_path / "run", cache_path=None)
    verdicts = out.read_jsonl(tmp_path / "run" / out.VERDICTS)
    unjudged = [v for v in verdicts if v["stage"] == "unjudged"]
    assert first["status"] == "incomplete" and "--retry-errors" in first["message"]
    assert unjudged and first["counts"]["unjudged"] == len(unjudged)
    assert all("malformed" in v["judge_explanation"] and not v["bug"] for v in unjudged)
    assert first["counts"]["judged"] == 0 and first["counts"]["bugs"] == 0

    release_services()
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        settings = worker.settings_for(server.base_url, cache_path=None)
        summary = run_pipeline(input_path, tmp_path / "run", settings, retry_errors=True)
        kinds = {
            ("judge" if "gold_answer" in json.dumps(r.body) else "other") for r in server.requests
        }
    record = out.read_json(tmp_path / "run" / out.RUN)
    assert summary.status == "finished", summary.message
    assert kinds == {"judge"}  # everything else replayed from the run's cache
    assert record["counts"]["unjudged"] == 0 and record["counts"]["judged"] == len(unjudged)
    assert record["counts"]["bugs"] > 0


def test_spending_cap_holds_across_a_resume(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(6))
    cap = 2000
    with ScriptedLLMServer() as server:
        first = scripted_run(server, input_path, tmp_path / "run", max_tokens=cap, concurrency=4)
        spent = sum(r.prompt_tokens + r.completion_tokens for r in server.requests)
        # run.json counts every request the stopped part made, those of interrupted nodes too
        # (a generation request stopped once explained is metered by the client's estimate:
        # a token or two apart from the server's count)
        metered = out.read_json(tmp_path / "run" / out.RUN)["usage"]["total_tokens"]
        assert metered == pytest.approx(spent, rel=0.01)
        server.reset()
        release_services()
        again = run_pipeline(
            input_path,
            tmp_path / "run",
            worker.settings_for(server.base_url, max_tokens=cap, concurrency=4),
            resume=True,
        )
        resumed = sum(r.prompt_tokens + r.completion_tokens for r in server.requests)
    assert first["status"] == again.status == "stopped"
    assert 0 < spent <= cap  # requests in flight together stayed under the cap
    assert "token cap reached" in again.message
    # What the first part spent counts against the same cap: the resumed part may use only
    # what was left (the first part can stop with room left while requests in flight held it).
    assert spent + resumed <= cap


def test_context_over_the_model_window_is_skipped_with_its_reason(tmp_path):
    long_context = worker.contexts(1)[0].model_copy(
        update={"id": "long", "context": " ".join([worker.TEXTS[0]] * 12)}
    )
    input_path = worker.write_input(tmp_path / "in.jsonl", [*worker.contexts(1), long_context])
    with ScriptedLLMServer() as server:
        window = 1800  # tokens; the long context needs about 1600 + 1300
        record = scripted_run(server, input_path, tmp_path / "run", spec={"context_window": window})
        prompts = [json.dumps(r.body) for r in server.requests]
    skipped = {s["id"]: s for s in out.read_jsonl(tmp_path / "run" / out.SKIPPED)}
    assert skipped["long"]["reason"] == "context_too_long"
    assert "window of 1800" in skipped["long"]["detail"]
    assert record["status"] == "finished"
    assert record["counts"]["contexts_finished"] == 2
    assert not any("Normans later conquered England in 1066. Rollo" in p for p in prompts)
    events = [json.loads(line) for line in lines(tmp_path / "run" / out.TRACE)]
    assert any(e["event"] == "context_finished" and e["context_id"] == "long" for e in events)


# ---- malformed output ----


def test_malformed_generation_output_is_rejected_not_a_crash(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(3))
    with ScriptedLLMServer() as server:
        server.rules.on("Target answer", "this is not json")
        record = scripted_run(server, input_path, tmp_path / "run", malformed_retries=1)
    rejected = out.read_jsonl(tmp_path / "run" / out.REJECTED)
    assert record["status"] == "finished"
    assert len(rejected) == 6 and lines(tmp_path / "run" / out.TEST_CASES) == []
    for candidate in rejected:
        reasons = {r for a in candidate["attempts"] for r in a["reasons"]}
        assert reasons == {"malformed_output"}
        assert "malformed output" in candidate["attempts"][-1]["explanation"]
    assert record["counts"]["rejection_reasons"] == {"malformed_output": 12}
    assert_counts_match_files(tmp_path / "run", record)


def test_malformed_content_fault_on_every_request_still_finishes(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(2))
    plan = FaultPlan(rate=1.0, kinds=["malformed_content"], seed=0)
    with ScriptedLLMServer(faults=plan) as server:
        record = scripted_run(server, input_path, tmp_path / "run")
    assert record["status"] == "finished"
    assert record["counts"]["accepted"] == 0 and record["counts"]["rejected"] == 4
    assert set(record["counts"]["rejection_reasons"]) == {"malformed_output"}


# ---- secrets and bad input ----


def test_bad_input_secret_not_leaked_into_run_dir(tmp_path):
    secret = "sk-SECRET-123"
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(2))
    # Failed requests too: their errors end up in the records of the run.
    plan = FaultPlan(rate=0.3, kinds=["500", "malformed", "empty_choices"], seed=1)
    with ScriptedLLMServer(faults=plan) as server:
        record = scripted_run(
            server,
            input_path,
            tmp_path / "run",
            spec={"api_key": secret},
            cache_path=None,
            llm_retries=0,
            concurrency=1,
            breaker_failures=50,  # this test wants failed calls recorded, not a stop
        )
    # Calls that failed for good leave their slots unsettled: the run says so, not "finished".
    assert record["status"] == "incomplete", record["message"]
    assert record["counts"]["llm_errors"] > 0 and "--retry-errors" in record["message"]
    pending = out.read_jsonl(tmp_path / "run" / out.PENDING)
    assert pending and all(c["error"] for c in pending)
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert {out.RUN, out.TRACE, out.LLM_CACHE, out.CHECKPOINTS} <= {p.name for p in files}
    for path in files:
        assert secret.encode() not in path.read_bytes(), path


def test_bad_input_lines_are_skipped_with_reasons(tmp_path):
    good = worker.contexts(2)
    input_path = worker.write_input(tmp_path / "in.jsonl", good)
    with input_path.open("a", encoding="utf-8") as handle:
        handle.write('{"id": "broken", "context": \n')
        handle.write(json.dumps({"id": "nocontext", "title": "no text"}) + "\n")
        handle.write(json.dumps({"id": good[0].id, "context": good[1].context}) + "\n")
        handle.write(json.dumps({"id": "blank", "context": "   ...  "}) + "\n")
    with ScriptedLLMServer() as server:
        record = scripted_run(server, input_path, tmp_path / "run")
    assert record["status"] == "finished"
    reasons = {(s["id"], s["reason"]) for s in record["skipped"]}
    assert reasons == {
        ("line 3", "invalid_json"),
        ("nocontext", "missing_context"),
        (good[0].id, "duplicate_id"),
        ("blank", "empty_context"),
    }
    assert len(lines(tmp_path / "run" / out.SKIPPED)) == 4
    assert record["counts"]["contexts"] == 2 and record["counts"]["contexts_finished"] == 2
    settled = [*out.read_jsonl(tmp_path / "run" / out.TEST_CASES)]
    settled += out.read_jsonl(tmp_path / "run" / out.REJECTED)
    assert {c["context_id"] for c in settled} == {c.id for c in good}
    assert record["counts"]["accepted"] > 0


def test_bad_input_run_dir_holding_another_run_is_refused(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(1))
    other_input = worker.write_input(tmp_path / "other.jsonl", worker.contexts(1, prefix="other"))
    with ScriptedLLMServer() as server:
        scripted_run(server, input_path, tmp_path / "run")
        before = lines(tmp_path / "run" / out.TEST_CASES)
        with pytest.raises(RunDirError, match="different run.*choose another --out.*--force"):
            scripted_run(server, other_input, tmp_path / "run")
    assert lines(tmp_path / "run" / out.TEST_CASES) == before


# ---- flat memory: finished contexts leave the checkpoint ----


def checkpointed_threads(run_dir: Path) -> set[str]:
    with sqlite3.connect(run_dir / out.CHECKPOINTS, timeout=30) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if "checkpoints" not in tables:
            return set()
        return {row[0] for row in db.execute("SELECT DISTINCT thread_id FROM checkpoints")}


def test_finished_contexts_leave_the_checkpoint_for_the_run_store(tmp_path):
    contexts = worker.contexts(6)
    input_path = worker.write_input(tmp_path / "in.jsonl", contexts)
    run_dir = tmp_path / "run"
    held: list[int] = []

    def count_threads(event: dict[str, Any]) -> None:
        if event.get("event") == "context_finished":
            held.append(len(checkpointed_threads(run_dir)))

    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        settings = worker.settings_for(server.base_url, concurrency=2)
        summary = run_pipeline(input_path, run_dir, settings, on_event=count_threads)
    assert summary.status == "finished", summary.message
    # while it ran, the checkpoint held the contexts in flight, never the finished ones
    assert len(held) == len(contexts) and max(held) <= 2
    assert checkpointed_threads(run_dir) == set()
    with open_store(run_dir / out.STORE) as store:
        assert store.finished_contexts() == {c.id for c in contexts}
        assert len(store.verdicts()) == summary.counts["test_cases"] > 0
    assert summary.counts["contexts_finished"] == len(contexts)
