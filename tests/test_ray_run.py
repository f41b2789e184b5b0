"""``cq2a run --engine ray``: Ray actors over PostgreSQL give the single-process run's suite, also
when an actor is SIGKILLed mid-run, stop at the spending cap without passing it, finish with
--resume after the driver is SIGKILLed, and
the store's password stays out of what the runs write.

One scenario (tests/ray_run_scenario.py) runs all five runs inside a loopback-only network
namespace; the tests read its report."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cq2a.app import outputs as out
from cq2a.cli import main as cq2a_main
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker
from evals.scale import ENVIRONMENT, SUT
from tests.services import Postgres, run_in_loopback_namespace

SCENARIO = Path(__file__).with_name("ray_run_scenario.py")
ROOT = SCENARIO.parents[1]
CONTEXTS = 8
PASSWORD = "ray-pw-that-must-not-leak"


@pytest.fixture(scope="module")
def scenario(postgres: Postgres) -> Iterator[tuple[Path, dict[str, Any], float]]:
    """Not pytest's tmp_path: Ray's unix socket paths must stay under 108 characters."""
    workdir = Path(tempfile.mkdtemp(prefix="cq2a-ray-"))
    store = postgres.socket_url.replace("postgres@", f"postgres:{PASSWORD}@", 1)
    env = os.environ | {
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
        "PYTHONPATH": str(ROOT),
    }
    started = time.monotonic()
    # About 2 minutes on a quiet 2-core machine; 10 minutes under a load average of 8. The
    # limit only stops a scenario that hangs.
    done = run_in_loopback_namespace(
        [sys.executable, str(SCENARIO), str(workdir), store, str(CONTEXTS)], timeout=1500, env=env
    )
    seconds = time.monotonic() - started
    report_file = workdir / "report.json"
    report = json.loads(report_file.read_text()) if report_file.exists() else {}
    assert done.returncode == 0, (report, done.stdout[-3000:], done.stderr[-4000:])
    timings = {key: value for key, value in report.items() if key.endswith("_s")}
    print(f"ray scenario: {seconds:.0f} s in all; seconds since its start: {timings}")
    extracted = report.get("killed", {}).get("extracted")
    print(f"killed run: extract in the trace for {extracted}")
    capped = report.get("capped", {})
    print(f"capped run: {capped.get('server_tokens')} tokens served, cap {capped.get('cap')}")
    yield workdir, report, seconds
    shutil.rmtree(workdir, ignore_errors=True)


def test_ray_run_through_the_command_line_gives_the_single_process_suite(scenario) -> None:
    _, report, _ = scenario
    assert report["reference"]["status"] == "finished"
    assert report["reference"]["suite"][out.TEST_CASES]  # a suite worth comparing
    assert report["cli"]["exit"] in (0, 1)  # finished; 1: it found bugs
    assert report["cli"]["suite"] == report["reference"]["suite"]


def test_sigkilled_actors_leave_the_suite_whole_with_no_test_twice(scenario) -> None:
    workdir, report, _ = scenario
    killed = report["killed"]
    assert killed["status"] == "finished", killed["message"]
    assert len(killed["killed_pids"]) == 2 and killed["replaced"] == 2, killed
    assert len(set(killed["workers"])) >= 2  # the work did not all land on one actor
    # evaluate ran in chunks on the actors, not in the driver, one of them killed between chunks
    assert len(set(killed["evaluators"])) >= 2 and killed["driver"] not in killed["evaluators"]
    assert killed["suite"] == report["reference"]["suite"]
    # the dead actor's events reached the trace as they happened, before it died
    assert killed["extracted"] == [context.id for context in worker.contexts(CONTEXTS)]
    test_ids = [case["id"] for case in out.read_jsonl(workdir / "killed" / out.TEST_CASES)]
    assert len(test_ids) == len(set(test_ids))


def test_a_ray_run_whose_driver_is_killed_finishes_with_resume(scenario) -> None:
    """The driver SIGKILLed after its first context was saved, with others in flight; the same
    command with --resume finishes with the single-process suite and no test twice."""
    _, report, _ = scenario
    resumed = report["resumed"]
    assert resumed["killed_while_running"] and resumed["saved_when_killed"] >= 1, resumed
    assert resumed["saved_when_killed"] < CONTEXTS, resumed  # the kill came mid-run
    assert resumed["exit"] in (0, 1), resumed["stderr"]  # finished; 1: it found bugs
    assert resumed["status"] == "finished", resumed["message"]
    assert resumed["contexts_finished"] == CONTEXTS
    assert resumed["duplicate_tests"] == 0
    assert resumed["suite"] == report["reference"]["suite"]


def test_the_store_password_is_in_no_file_of_the_ray_runs(scenario) -> None:
    workdir, _, _ = scenario
    for run in ("cli", "killed", "resumed"):
        for name in (out.RUN, out.TRACE):
            assert PASSWORD not in (workdir / run / name).read_text(encoding="utf-8"), (run, name)
        assert out.read_json(workdir / run / out.RUN)["backend"]["engine"] == "ray"


def test_the_spending_cap_stops_a_ray_run_before_its_last_context(scenario) -> None:
    _, report, _ = scenario
    capped = report["capped"]
    assert capped["status"] == "stopped", capped
    assert "token cap reached" in capped["message"]
    assert "ray::" not in capped["message"] and "\x1b" not in capped["message"]  # no wrapper
    assert capped["contexts_finished"] < CONTEXTS, capped


def test_the_spending_cap_holds_over_the_requests_of_every_actor(scenario) -> None:
    """What the server counted over both actors' requests (and the driver's) stays under the
    cap: the actors share one meter in the store, so the contexts in flight when the cap is
    reached cannot pass it."""
    _, report, _ = scenario
    capped = report["capped"]
    assert 0 < capped["server_tokens"] <= capped["cap"], capped


def test_report_and_test_compare_read_a_ray_run_directory(scenario, tmp_path) -> None:
    """The run directory a Ray run writes from its store is the one `cq2a report` and `cq2a test
    --compare` read: the report is written, and the suite re-run against the same SUT and
    scripted LLM (outside the namespace: no Ray here) finds every bug still failing."""
    workdir, _, _ = scenario
    ray_run = workdir / "cli"
    assert cq2a_main(["report", str(ray_run)]) == 0
    assert (ray_run / "report.html").stat().st_size > 0

    bugs = {b["test_id"] for b in out.read_jsonl(ray_run / out.BUGS)}
    assert bugs, "the scenario's SUT fails some tests"
    with ScriptedLLMServer(latency_s=0, keep_requests=False) as server:
        worker.script().install(server.rules)
        with pytest.MonkeyPatch.context() as env:
            for name, value in ENVIRONMENT.items():
                env.setenv(name, value)
            code = cq2a_main(
                [
                    "test", str(ray_run), "--out", str(tmp_path / "again"), "--sut", SUT,
                    "--backend", "compatible", "--base-url", server.base_url,
                    "--model", "scripted", "--compare", str(ray_run), "--no-progress",
                ]
            )  # fmt: skip
    assert code == 0
    again = out.read_json(tmp_path / "again" / out.RUN)
    assert {b["test_id"] for b in out.read_jsonl(tmp_path / "again" / out.BUGS)} == bugs
    assert again["counts"]["test_cases"] == len(out.read_jsonl(ray_run / out.TEST_CASES))
    assert set(again["diff"]["still_failing"]) == bugs
    assert again["diff"]["fixed"] == again["diff"]["newly_failing"] == []
