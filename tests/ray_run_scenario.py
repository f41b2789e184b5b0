"""Ray runs of cq2a for tests/test_ray_run.py, inside a loopback-only network namespace: a local
Ray, the scripted LLM (started here, so it is on this namespace's loopback) and PostgreSQL over
its unix socket.

Five runs of the same input: the single-process engine over SQLite (the reference); ``cq2a run
--engine ray --ray-actors 2`` through the command line; the Ray engine again with the actor
that finishes the first context SIGKILLed at once, while it still works another, and the actor
that evaluates the first chunk of tests SIGKILLed too; the Ray
engine under a token cap that the run reaches by its middle, with the tokens the scripted server
counted over all of its requests; and ``cq2a run --engine ray`` in a
process of its own, SIGKILLed (driver and, with it, its actors) once its first context is
saved, then the same command with ``--resume``.

Usage: python ray_run_scenario.py WORKDIR STORE_URL CONTEXTS. The report is WORKDIR/report.json
(Ray prints its workers' messages on stdout): each run's suite files, sorted, and what the
killing run saw.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import ray

from cq2a.app import outputs as out
from cq2a.app.backend import Backend
from cq2a.app.run import run_pipeline
from cq2a.cli import main as cq2a_main
from cq2a.runtime.services import release_services
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker
from evals.scale import ENVIRONMENT, run_arguments

SUITE_FILES = (out.TEST_CASES, out.VERDICTS, out.BUGS, out.REJECTED)
#: The capped run's token cap, as a share of what the reference run spent (each context about
#: an eighth): the run reaches it with about three contexts finished and four in flight
#: (two per actor), so it stops before the last context starts.
CAP_SHARE = 0.33


def suite(run_dir: Path) -> dict[str, list[str]]:
    return {
        name: sorted((run_dir / name).read_text(encoding="utf-8").splitlines())
        for name in SUITE_FILES
    }


def extracted(run_dir: Path) -> list[str]:
    """The contexts whose trace shows their extract stage. Events stream from the actors as they
    happen, so a context that a dead actor began and another resumed past its extract stage
    shows it too."""
    events = map(json.loads, (run_dir / out.TRACE).read_text(encoding="utf-8").splitlines())
    return sorted(
        e["context_id"]
        for e in events
        if e.get("event") == "stage_started" and e.get("stage") == "extract"
    )


def served_tokens(server: ScriptedLLMServer, since: int) -> int:
    """The tokens the scripted server counted over its requests from the ``since``-th on: what
    the run really spent, whichever process sent them."""
    return sum(r.prompt_tokens + r.completion_tokens for r in server.requests[since:])


def cli_arguments(input_path: Path, run_dir: Path, base_url: str, store: str) -> list[str]:
    """``cq2a run --engine ray``'s arguments, with the reference's settings as flags
    (evals/scale.py's)."""
    arguments = run_arguments(input_path, run_dir, base_url, concurrency=2, answers=1)
    return [*arguments, "--engine", "ray", "--ray-actors", "2", "--store", store]


def cli_run(input_path: Path, run_dir: Path, base_url: str, store: str) -> int:
    return cq2a_main(cli_arguments(input_path, run_dir, base_url, store))


def killed_driver_then_resumed(
    input_path: Path, run_dir: Path, base_url: str, store: str, address: str
) -> dict[str, Any]:
    """``cq2a run --engine ray`` as its own process on this Ray cluster, SIGKILLed once its
    first context is in ``partial/`` (its actors, which it owns, die with it); then the same
    command with ``--resume``. What each part saw, and the resumed run's suite."""
    command = [
        sys.executable,
        "-m",
        "cq2a.cli",
        *cli_arguments(input_path, run_dir, base_url, store),
        "--ray-address",
        address,
    ]
    driver = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    partial = run_dir / "partial"
    deadline = time.monotonic() + 600
    while driver.poll() is None and time.monotonic() < deadline:
        if partial.is_dir() and any(partial.iterdir()):
            break
        time.sleep(0.02)
    alive = driver.poll() is None
    driver.kill()
    _, stderr = driver.communicate()
    saved = len(list(partial.iterdir())) if partial.is_dir() else 0
    resumed = subprocess.run([*command, "--resume"], capture_output=True, text=True, check=False)
    record = out.read_json(run_dir / out.RUN)
    test_ids = [case["id"] for case in out.read_jsonl(run_dir / out.TEST_CASES)]
    return {
        "killed_while_running": alive,
        "saved_when_killed": saved,
        "first_stderr": stderr.decode(errors="replace")[-2000:],
        "exit": resumed.returncode,
        "stderr": resumed.stderr[-2000:],
        "status": record["status"],
        "message": record.get("message", ""),
        "contexts_finished": record["counts"]["contexts_finished"],
        "duplicate_tests": len(test_ids) - len(set(test_ids)),
        "suite": suite(run_dir),
    }


class KillFirstWorker:
    """An event handler that SIGKILLs the actor that reports the run's first finished context,
    and the actor that reports its first evaluated chunk (before it is handed the next)."""

    def __init__(self) -> None:
        self.killed: list[int] = []
        self.workers: list[int] = []
        self.evaluators: list[int] = []
        self.replaced = 0

    def __call__(self, event: dict[str, Any]) -> None:
        if event.get("event") == "worker_replaced":
            self.replaced += 1
        if event.get("event") == "context_worked":
            self.workers.append(event["worker"])
            if not self.killed:
                self.kill(event["worker"])
        if event.get("event") == "chunk_evaluated":
            self.evaluators.append(event["worker"])
            if len(self.evaluators) == 1:
                self.kill(event["worker"])

    def kill(self, pid: int) -> None:
        self.killed.append(pid)
        os.kill(pid, signal.SIGKILL)


def main(workdir: Path, store: str, count: int) -> None:
    os.environ.update(ENVIRONMENT)
    report: dict[str, Any] = {}
    started = time.monotonic()
    cluster = ray.init(
        address="local", num_cpus=2, include_dashboard=False, _temp_dir=str(workdir / "ray")
    )
    report["init_s"] = round(time.monotonic() - started, 1)
    input_path = worker.write_input(workdir / "in.jsonl", worker.contexts(count))
    try:
        with ScriptedLLMServer() as server:
            worker.script().install(server.rules)
            settings = worker.settings_for(server.base_url)
            reference = run_pipeline(input_path, workdir / "reference", settings)
            report["reference"] = {
                "status": reference.status,
                "suite": suite(workdir / "reference"),
            }
            report["reference_s"] = round(time.monotonic() - started, 1)
            release_services()

            code = cli_run(input_path, workdir / "cli", server.base_url, store)
            report["cli"] = {"exit": code, "suite": suite(workdir / "cli")}
            report["cli_s"] = round(time.monotonic() - started, 1)
            release_services()

            killer = KillFirstWorker()
            backend = Backend(engine="ray", store=store, ray_actors=2)
            killed = run_pipeline(
                input_path, workdir / "killed", settings, on_event=killer, backend=backend
            )
            report["killed"] = {
                "status": killed.status,
                "message": killed.message,
                "suite": suite(workdir / "killed"),
                "killed_pids": killer.killed,
                "workers": killer.workers,
                "evaluators": killer.evaluators,
                "driver": os.getpid(),
                "replaced": killer.replaced,
                "extracted": extracted(workdir / "killed"),
            }
            report["killed_s"] = round(time.monotonic() - started, 1)
            release_services()

            cap = int(reference.usage.total_tokens * CAP_SHARE)
            sent = len(server.requests)
            capped = run_pipeline(
                input_path,
                workdir / "capped",
                worker.settings_for(server.base_url, max_tokens=cap),
                backend=backend,
            )
            report["capped"] = {
                "cap": cap,
                "status": capped.status,
                "message": capped.message,
                "contexts_finished": capped.counts["contexts_finished"],
                "reference_tokens": reference.usage.total_tokens,
                "server_tokens": served_tokens(server, since=sent),
            }
            report["capped_s"] = round(time.monotonic() - started, 1)
            release_services()

            report["resumed"] = killed_driver_then_resumed(
                input_path,
                workdir / "resumed",
                server.base_url,
                store,
                cluster.address_info["address"],
            )
            report["resumed_s"] = round(time.monotonic() - started, 1)
    finally:
        ray.shutdown()
        (workdir / "report.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
