"""A Ray scenario for tests/test_ray_loopback.py, run inside a loopback-only network namespace:
start a local Ray, call an actor, SIGKILL its process, and write as JSON what the next call
raised and which address Ray used.

Usage: python ray_actor_kill.py WORKDIR (short: Ray's unix sockets live under WORKDIR/ray); the
report is WORKDIR/report.json, since Ray prints its workers' messages on stdout."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import ray


@ray.remote(max_restarts=0)
class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def pid(self) -> int:
        return os.getpid()

    def increment(self) -> int:
        self.calls += 1
        return self.calls


def main(workdir: Path) -> None:
    started = time.monotonic()
    # address="local": never join a cluster that `ray start` left on this machine.
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        _temp_dir=str(workdir / "ray"),
    )
    report: dict[str, object] = {"init_s": round(time.monotonic() - started, 2)}
    try:
        report["node_ip"] = ray.util.get_node_ip_address()
        report["nodes"] = [node["NodeManagerAddress"] for node in ray.nodes()]
        counter = Counter.remote()
        report["calls"] = [ray.get(counter.increment.remote()) for _ in range(2)]
        os.kill(ray.get(counter.pid.remote()), signal.SIGKILL)
        try:
            ray.get(counter.increment.remote(), timeout=30)
            report["after_kill"] = "answered"
        except ray.exceptions.ActorDiedError:
            report["after_kill"] = "ActorDiedError"
    finally:
        ray.shutdown()
    report["total_s"] = round(time.monotonic() - started, 2)
    (workdir / "report.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
