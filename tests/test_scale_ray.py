"""`python -m evals.scale --engine ray` runs end to end on a tiny input: its own PostgreSQL, Ray in
a loopback-only namespace, one `cq2a run --engine ray` per actor count, the suites compared and
the process tree's CPU counted, Ray's workers included."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cq2a.testing.services import ServiceUnavailable
from evals import scale
from tests.services import unavailable

CONTEXTS = 4


def test_the_ray_mode_measures_each_actor_count_and_compares_their_suites(tmp_path: Path) -> None:
    report = tmp_path / "scale-ray.json"
    argv = ["--engine", "ray", "--actors", "1,2", "--sizes", str(CONTEXTS), "--latency", "0"]
    started = time.monotonic()
    try:
        scale.main([*argv, "--answers-per-context", "1", "--json", str(report)])
    except ServiceUnavailable as missing:
        unavailable(str(missing))
    print(f"evals.scale --engine ray: {time.monotonic() - started:.0f} s")
    payload = json.loads(report.read_text())
    results = payload["results"]
    assert [(r["contexts"], r["actors"]) for r in results] == [(CONTEXTS, 1), (CONTEXTS, 2)]
    for result in results:
        assert (result["status"], result["contexts_finished"]) == ("finished", CONTEXTS), result
        assert result["test_ids"] > 0 and result["requests"] > 0
        # Ray's workers are counted: their parent, the raylet, ignores SIGCHLD, so without the
        # samples of them cpu_s would fall short of what the samples saw of the whole tree.
        assert result["cpu_sampled_ignored_s"] > 0, result
        assert result["cpu_s"] >= result["cpu_sampled_s"] > 0, result
        assert 0 < result["cpu_fraction"] <= result["total_cpu_fraction"]
        phases = ("startup_s", "contexts_s", "evaluate_s", "after_evaluate_s")
        assert all(result[phase] > 0 for phase in phases), result
        assert sum(result[phase] for phase in phases) <= result["run_s"] + 0.1, result
    assert results[0]["speedup"] == results[0]["contexts_speedup"] == 1.0
    assert payload["suites_equal"] == {str(CONTEXTS): True}
    assert payload["engine"] == "ray" and payload["cpus"] >= 1
