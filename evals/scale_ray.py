"""``python -m evals.scale --engine ray``: the Ray engine's contexts per second and CPU use at 1, 2,
4... actors, each working ``--concurrency`` contexts at a time, against one scripted LLM.

This process starts a throwaway PostgreSQL (``cq2a.testing.services``) and runs the measuring
part, ``python -m evals.scale_ray JOB_JSON``, in a network namespace that has only loopback: Ray
binds this machine's interface address otherwise, and the scripted server and ``cq2a run`` must
share the namespace's 127.0.0.1. PostgreSQL, outside it, is reached over its unix socket.

The measuring process makes itself the child subreaper (``PR_SET_CHILD_SUBREAPER``), so every
process of a run's tree that its parent leaves behind (Ray's GCS, raylet and workers, when the
driver exits first) is handed to it and reaped by it: once they are all reaped,
``getrusage(RUSAGE_CHILDREN)`` holds the user and system seconds of every process reaped along
the tree. Not those of Ray's workers and agents: the raylet, their parent, ignores SIGCHLD, so
the kernel discards their times when they exit before it. A ``/proc`` sampler, every quarter
second, keeps the last user + system ticks it saw of each process of the tree and whether its
parent ignored SIGCHLD then; ``cpu_s`` is ``RUSAGE_CHILDREN`` plus the sampled ticks of those
processes (``cpu_sampled_ignored_s``; an actor is idle when it is killed, so the last quarter
second misses little; one that outlives the raylet and is reaped here before the next sample is
counted twice), and ``cpu_sampled_s``, every sampled process's last ticks, is a lower
bound to check it by. The scripted server's threads and the sampler run in the measuring
process: ``server_cpu_s`` is its own ``RUSAGE_SELF`` over the run.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cq2a.app import outputs as out
from cq2a.testing.scripted_server import ScriptedLLMServer
from cq2a.testing.services import in_loopback_namespace, running_postgres
from evals import reliability_worker as worker
from evals.scale import (
    ENVIRONMENT,
    REPO,
    copied_contexts,
    run_command,
    write_contexts,
    write_results,
)

DATABASE = "cq2a_scale"
#: How long the processes a run leaves behind get to exit before they are killed.
REAP_GRACE_S = 60.0
#: A run whose processes use at least this share of the machine's cores has saturated them.
SATURATED = 0.9
PR_SET_CHILD_SUBREAPER = 36
STARTED_EXTRACT = ("stage_started", "extract")
STARTED_EVALUATE = ("stage_started", "evaluate")
EVALUATED = ("stage_finished", "evaluate")
RAY_ENVIRONMENT = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


class RayJob(BaseModel):
    """What the measuring process runs, written by this one as ``job.json``."""

    store: str
    sizes: list[int]
    actors: list[int]
    latency: float
    concurrency: int
    answers: int
    work: str


class ActorsResult(BaseModel):
    """One ``cq2a run --engine ray`` at one size and actor count."""

    contexts: int
    actors: int
    contexts_finished: int
    status: str
    wall_s: float
    run_s: float
    contexts_per_s: float
    speedup: float
    startup_s: float
    contexts_s: float
    contexts_phase_per_s: float
    contexts_speedup: float
    evaluate_s: float
    after_evaluate_s: float
    requests: int
    test_ids: int
    cpu_s: float
    cpu_sampled_s: float
    cpu_sampled_ignored_s: float
    server_cpu_s: float
    cpu_fraction: float
    total_cpu_fraction: float
    killed_after_run: int


def become_subreaper() -> None:
    """Adopt the orphans of this process's descendants, so their CPU time comes back here."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


@dataclass(frozen=True)
class Proc:
    """A process as ``/proc/PID/stat`` shows it; ``ticks``: its user + system clock ticks."""

    parent: int
    start: int
    ticks: int


def proc_table() -> dict[int, Proc]:
    """Every process now running, by pid."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:  # it exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after the command's name, from state
        table[int(entry.name)] = Proc(
            parent=int(fields[1]), start=int(fields[19]), ticks=int(fields[11]) + int(fields[12])
        )
    return table


def descendants(table: dict[int, Proc], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, proc in table.items():
        children.setdefault(proc.parent, []).append(pid)
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def ignores_sigchld(pid: int) -> bool:
    """Whether the process discards its children's exit (and so their CPU times)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    ignored = next(line for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(int(ignored.split()[1], 16) >> (signal.SIGCHLD - 1) & 1)


@dataclass
class TreeSamples:
    """Per ``(pid, start time)``: the last ticks seen, and whether its parent ignored SIGCHLD."""

    last: dict[tuple[int, int], tuple[int, bool]] = field(default_factory=dict)

    def seconds(self, *, ignored_only: bool = False) -> float:
        ticks = sum(t for t, ignored in self.last.values() if ignored or not ignored_only)
        return ticks / os.sysconf("SC_CLK_TCK")


@contextmanager
def sampled_tree_cpu(interval_s: float = 0.25) -> Iterator[TreeSamples]:
    """Every ``interval_s``, the ticks of every descendant of this process."""
    samples = TreeSamples()
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(interval_s):
            table = proc_table()
            tree = descendants(table, os.getpid())
            ignoring = {
                parent: ignores_sigchld(parent) for parent in {table[p].parent for p in tree}
            }
            for pid in tree:
                proc = table[pid]
                samples.last[(pid, proc.start)] = (proc.ticks, ignoring[proc.parent])

    thread = threading.Thread(target=sample, name="cpu-sampler", daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join()


def reap_all(grace_s: float = REAP_GRACE_S) -> int:
    """Reap every child this process has (adopted ones included); those still running after
    ``grace_s`` are SIGKILLed. Returns how many were killed."""
    deadline = time.monotonic() + grace_s
    killed = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return killed
        if pid:
            continue
        if time.monotonic() > deadline:
            table = proc_table()
            for child in (pid for pid, proc in table.items() if proc.parent == os.getpid()):
                os.kill(child, signal.SIGKILL)
                killed += 1
            deadline = float("inf")
        time.sleep(0.1)


def cpu_seconds(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def suite_ids(run_dir: Path) -> set[str]:
    path = run_dir / out.TEST_CASES
    return {case["id"] for case in out.read_jsonl(path)} if path.exists() else set()


@dataclass(frozen=True)
class TreeRun:
    """A child process run to its end: its exit code, wall seconds and its tree's CPU."""

    code: int
    wall_s: float
    cpu_s: float
    sampled_s: float
    sampled_ignored_s: float
    server_cpu_s: float
    killed: int


def run_tree(command: list[str], log: Path) -> TreeRun:
    """Run ``command`` (its output to ``log``), reap every process of its tree, and count their
    CPU: what the reaping brought to ``RUSAGE_CHILDREN``, plus the samples of the processes
    whose parent ignored SIGCHLD."""
    environment = os.environ | ENVIRONMENT | {"PYTHONPATH": str(REPO)}
    children_before = cpu_seconds(resource.getrusage(resource.RUSAGE_CHILDREN))
    self_before = cpu_seconds(resource.getrusage(resource.RUSAGE_SELF))
    with log.open("wb") as output, sampled_tree_cpu() as samples:
        started = time.perf_counter()
        code = subprocess.call(command, cwd=REPO, env=environment, stdout=output, stderr=output)
        wall = time.perf_counter() - started
        killed = reap_all()
    reaped = cpu_seconds(resource.getrusage(resource.RUSAGE_CHILDREN)) - children_before
    return TreeRun(
        code=code,
        wall_s=wall,
        cpu_s=reaped + samples.seconds(ignored_only=True),
        sampled_s=samples.seconds(),
        sampled_ignored_s=samples.seconds(ignored_only=True),
        server_cpu_s=cpu_seconds(resource.getrusage(resource.RUSAGE_SELF)) - self_before,
        killed=killed,
    )


def measure_actors(
    server: ScriptedLLMServer, job: RayJob, input_path: Path, count: int, actors: int
) -> tuple[ActorsResult, set[str]]:
    """One ``cq2a run --engine ray`` subprocess: its figures and its suite's test ids."""
    work = Path(job.work)
    run_dir, log = work / f"run_{count}_{actors}", work / f"run_{count}_{actors}.log"
    command = [
        *run_command(input_path, run_dir, server.base_url, job.concurrency, job.answers),
        *("--engine", "ray", "--ray-actors", str(actors), "--store", job.store),
    ]
    served_before = server.served
    run = run_tree(command, log)
    record = out.read_json(run_dir / out.RUN) if (run_dir / out.RUN).exists() else {}
    if not record:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"cq2a run --engine ray exited {run.code} with no run.json:\n{tail}")
    run_s = float(record.get("seconds") or run.wall_s)
    ids = suite_ids(run_dir)
    phase = phases(run_dir, record)
    cores = os.cpu_count() or 1
    return ActorsResult(
        contexts=count,
        actors=actors,
        contexts_finished=int(record.get("counts", {}).get("contexts_finished", 0)),
        status=str(record.get("status")),
        wall_s=round(run.wall_s, 2),
        run_s=round(run_s, 2),
        contexts_per_s=round(count / run_s, 3),
        speedup=1.0,  # this and contexts_speedup: set against the fewest actors by with_speedups
        startup_s=phase.startup_s,
        contexts_s=phase.contexts_s,
        contexts_phase_per_s=round(count / phase.contexts_s, 3) if phase.contexts_s else 0.0,
        contexts_speedup=1.0,
        evaluate_s=phase.evaluate_s,
        after_evaluate_s=phase.after_s,
        requests=server.served - served_before,
        test_ids=len(ids),
        cpu_s=round(run.cpu_s, 2),
        cpu_sampled_s=round(run.sampled_s, 2),
        cpu_sampled_ignored_s=round(run.sampled_ignored_s, 2),
        server_cpu_s=round(run.server_cpu_s, 2),
        cpu_fraction=round(run.cpu_s / run.wall_s / cores, 3),
        total_cpu_fraction=round((run.cpu_s + run.server_cpu_s) / run.wall_s / cores, 3),
        killed_after_run=run.killed,
    ), ids


@dataclass(frozen=True)
class Phases:
    """A run's seconds, from its trace and run.json: start-up (to the first context's extract:
    the head, Ray's start, the actors' model loads), the contexts (to the last one's end: what
    the actors share out), evaluate (from its start to its last chunk's end: the actors share
    its chunks out) and what follows it (writing the results from the store, in the driver)."""

    startup_s: float = 0.0
    contexts_s: float = 0.0
    evaluate_s: float = 0.0
    after_s: float = 0.0


def phases(run_dir: Path, record: dict[str, Any]) -> Phases:
    lines = (run_dir / out.TRACE).read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    starts = [e["ts"] for e in events if (e.get("event"), e.get("stage")) == STARTED_EXTRACT]
    ends = [e["ts"] for e in events if e.get("event") == "context_finished"]
    evaluated = [e["ts"] for e in events if (e.get("event"), e.get("stage")) == EVALUATED]
    began = [e["ts"] for e in events if (e.get("event"), e.get("stage")) == STARTED_EVALUATE]
    if not (starts and ends and evaluated and began and record.get("finished")):
        return Phases()
    started = datetime.fromisoformat(record["started"]).timestamp()
    finished = datetime.fromisoformat(record["finished"]).timestamp()
    return Phases(
        startup_s=round(min(starts) - started, 2),
        contexts_s=round(max(ends) - min(starts), 2),
        evaluate_s=round(max(evaluated) - min(began), 2),
        after_s=round(finished - max(evaluated), 2),
    )


def with_speedups(results: Sequence[ActorsResult]) -> list[ActorsResult]:
    """Each result's contexts per second, of the whole run and of its contexts' phase, over those
    of the fewest actors at the same size."""
    base: dict[int, ActorsResult] = {}
    for item in sorted(results, key=lambda r: r.actors):
        base.setdefault(item.contexts, item)
    return [
        item.model_copy(
            update={
                "speedup": ratio(item.contexts_per_s, base[item.contexts].contexts_per_s),
                "contexts_speedup": ratio(
                    item.contexts_phase_per_s, base[item.contexts].contexts_phase_per_s
                ),
            }
        )
        for item in results
    ]


def ratio(value: float, base: float) -> float:
    return round(value / base, 3) if base else 0.0


def measure(job: RayJob) -> dict[str, Any]:
    """Every size at every actor count against one scripted server: the results, and per size
    whether every actor count's suite has the same test ids."""
    become_subreaper()
    results, suites_equal = [], {}
    with ScriptedLLMServer(latency_s=job.latency, keep_requests=False) as server:
        worker.script().install(server.rules)
        for count in job.sizes:
            rows = copied_contexts(count)
            input_path = write_contexts(Path(job.work) / f"contexts_{count}.jsonl", rows)
            suites = []
            for actors in job.actors:
                result, ids = measure_actors(server, job, input_path, count, actors)
                results.append(result)
                suites.append(ids)
                print(f"done: {count} contexts, {actors} actors in {result.wall_s} s", flush=True)
            suites_equal[str(count)] = all(ids == suites[0] for ids in suites)
    return {
        "results": [r.model_dump() for r in with_speedups(results)],
        "suites_equal": suites_equal,
    }


def saturation(results: Sequence[ActorsResult]) -> str:
    """Where the machine's cores saturate: the fewest actors whose processes (the server's
    included) keep ``SATURATED`` of them busy."""
    cores = os.cpu_count()
    busy = sorted((r for r in results if r.total_cpu_fraction >= SATURATED), key=lambda r: r.actors)
    if not busy:
        most = max(r.actors for r in results)
        return f"{cores} cores: not saturated (<{SATURATED:.0%} busy) up to {most} actors"
    return f"{cores} cores: saturated (>={SATURATED:.0%} busy) from {busy[0].actors} actors"


def print_table(results: Sequence[ActorsResult], suites_equal: dict[str, bool]) -> None:
    columns = list(ActorsResult.model_fields)
    print(" | ".join(columns))
    for item in results:
        print(" | ".join(str(getattr(item, column)) for column in columns))
    for count, equal in suites_equal.items():
        same = "the same" if equal else "NOT the same"
        print(f"{count} contexts: the suites' test ids are {same} across actor counts")
    print(saturation(results))


def main(args: argparse.Namespace) -> None:
    """The outer process: PostgreSQL, then the measuring process in a loopback namespace."""
    actors = [int(n) for n in args.actors.split(",")]
    sizes = [int(size) for size in args.sizes.split(",")]
    # Short paths: Ray's unix sockets live under RAY_TMPDIR and must stay under 108 characters.
    with (
        tempfile.TemporaryDirectory(prefix="cq2a-sr-") as tmp,
        running_postgres(DATABASE) as postgres,
    ):
        work = args.keep or Path(tmp) / "work"
        work.mkdir(parents=True, exist_ok=True)
        job = RayJob(
            store=postgres.socket_url,
            sizes=sizes,
            actors=actors,
            latency=args.latency,
            concurrency=args.concurrency,
            answers=args.answers_per_context,
            work=str(work.resolve()),
        )
        job_path = work / "job.json"
        job_path.write_text(job.model_dump_json(), encoding="utf-8")
        environment = os.environ | RAY_ENVIRONMENT | {"RAY_TMPDIR": tmp, "PYTHONPATH": str(REPO)}
        inner = [sys.executable, "-m", "evals.scale_ray", str(job_path)]
        subprocess.run(in_loopback_namespace(inner), cwd=REPO, env=environment, check=True)
        measured = json.loads((work / "results.json").read_text(encoding="utf-8"))
    results = [ActorsResult(**item) for item in measured["results"]]
    print_table(results, measured["suites_equal"])
    if args.json:
        write_results(
            args,
            {
                "engine": "ray",
                "results": measured["results"],
                "suites_equal": measured["suites_equal"],
                "saturation": saturation(results),
            },
        )


if __name__ == "__main__":
    job_path = Path(sys.argv[1])
    measured = measure(RayJob.model_validate_json(job_path.read_text(encoding="utf-8")))
    (job_path.parent / "results.json").write_text(json.dumps(measured), encoding="utf-8")
