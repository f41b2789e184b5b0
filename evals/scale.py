"""Scale of one process, or of Ray actors: ``cq2a run`` over many contexts against a scripted LLM.

    python -m evals.scale --sizes 1000,5000 --latency 0.05 --json evals/results/scale.json
    python -m evals.scale --sizes 20,100 --latency 0      # a quick check
    python -m evals.scale --engine ray --actors 1,2,4 --sizes 500 --latency 0.5 \
        --json evals/results/scale-ray.json                # the Ray engine (evals/scale_ray.py)

Per size, one ``cq2a run INPUT --out DIR`` subprocess (LLM cache off, the callable
``evals.reliability_worker:decoding_sut`` as the SUT, no model download beyond the parser and
embedder a run always loads) against one scripted OpenAI-compatible server in this process,
answering every request after ``--latency`` seconds. Measured: the process's wall seconds, the
run's own seconds (``run.json``: start-up and model loading left out) and from them seconds per
context and contexts per second, the child's peak RSS (``wait4``'s ``ru_maxrss``), and the bytes
per finished context of the checkpoint database and of the other result files, each SQLite file
measured as a ``VACUUM INTO`` copy (so free pages and the WAL do not count).

The scripted roles are ``evals.reliability_worker``'s: every reply is computed from its request
alone (a question carries its gold answer spelled backwards), so a resumed run, a second process or
another worker sharing the server gets the same answers.

Inputs: the 93 shipped SQuAD passages repeated in order; copy ``k`` of passage ``ID`` has the id
``ID-copyK`` and the sentence ``This is copy K of the passage.`` appended to its text (copy 0
too, so every context carries the same extra sentence and the per-context work does not change
with the size), so no two ids and no two texts are the same.

``--engine ray``: per size and per ``--actors`` count, one ``cq2a run INPUT --out DIR --engine ray
--ray-actors N --store postgresql://...`` subprocess with the same flags (each actor works
``--concurrency`` contexts at a time, with as many requests in flight), against one scripted
server that every actor reaches over HTTP. The benchmark starts its own PostgreSQL and runs Ray,
the server and the runs in a loopback-only network namespace. Measured: wall and run seconds,
contexts per second and the speed-up over the fewest actors, the user + system CPU seconds of the
run's whole process tree (Ray's workers included) and as a share of the machine's cores, and
whether every actor count's suite has the same test ids; ``evals/scale_ray.py`` says how.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cq2a.app import outputs as out
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO / "cq2a" / "data" / "squad2_dev_sample.jsonl"
SQLITE_SUFFIXES = (".sqlite", ".db")
SUT = "callable:evals.reliability_worker:decoding_sut"
#: Settings without a command-line flag; each role's replies are short, so a small completion
#: cap keeps the spending meter's reservations near what requests use (as the reliability runs).
ENVIRONMENT = {
    "CQ2A_CACHE_PATH": "off",
    "CQ2A_PREFLIGHT": "false",
    "CQ2A_LLM_RETRIES": "1",
    "CQ2A_GENERATOR__MAX_TOKENS": "64",
    "CQ2A_REASKER__MAX_TOKENS": "64",
    "CQ2A_JUDGE__MAX_TOKENS": "64",
    "CQ2A_JUDGE__TEMPERATURE": "0",
    "HF_HUB_OFFLINE": "1",
}


def copied_contexts(count: int, source: Path = SQUAD) -> list[dict[str, str]]:
    """``count`` contexts: the source passages repeated, each copy with its own id and sentence."""
    passages = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    made = []
    for index in range(count):
        copy, passage = divmod(index, len(passages))
        row = passages[passage]
        text = f"{row['context'].rstrip()} This is copy {copy} of the passage."
        made.append({"id": f"{row['id']}-copy{copy}", "context": text})
    return made


def write_contexts(path: Path, rows: Sequence[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def run_command(
    input_path: Path, run_dir: Path, base_url: str, concurrency: int, answers: int
) -> list[str]:
    """The ``cq2a run`` a size measures, as a child process (``run_arguments``)."""
    return [
        sys.executable,
        "-m",
        "cq2a.cli",
        *run_arguments(input_path, run_dir, base_url, concurrency, answers),
    ]


def run_arguments(
    input_path: Path, run_dir: Path, base_url: str, concurrency: int, answers: int
) -> list[str]:
    """``cq2a run``'s arguments: entity questions only, two per answer, no relations, no
    coverage rounds, no judge probe; every LLM role at ``base_url``."""
    return [
        "run",
        str(input_path),
        "--out",
        str(run_dir),
        "--backend",
        "compatible",
        "--base-url",
        base_url,
        "--model",
        "scripted",
        "--sut",
        SUT,
        "--question-mix",
        "entity=1",
        "--no-relations",
        "--coverage-rounds",
        "0",
        "--answers-per-context",
        str(answers),
        "--questions-per-entity",
        "2",
        "--concurrency",
        str(concurrency),
        "--no-judge-probe",
        "--no-progress",
    ]


def vacuumed_bytes(path: Path) -> int:
    """Bytes of a SQLite database once copied with ``VACUUM INTO`` (its WAL folded in)."""
    with tempfile.TemporaryDirectory(prefix="cq2a-vacuum-") as tmp:
        copy = Path(tmp) / path.name
        connection = sqlite3.connect(path)
        try:
            connection.execute("VACUUM INTO ?", (str(copy),))
        finally:
            connection.close()
        return copy.stat().st_size


def store_bytes(run_dir: Path) -> dict[str, int]:
    """Bytes of each file a run left, SQLite files vacuumed; their WAL and SHM files left out."""
    sizes = {}
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        if path.name.endswith(("-wal", "-shm", "-journal")):
            continue
        name = str(path.relative_to(run_dir))
        sizes[name] = (
            vacuumed_bytes(path) if path.suffix in SQLITE_SUFFIXES else path.stat().st_size
        )
    return sizes


class SizeResult(BaseModel):
    """One run at one size."""

    contexts: int
    contexts_finished: int
    status: str
    wall_s: float
    run_s: float
    s_per_context: float
    contexts_per_s: float
    peak_rss_mb: float
    requests: int
    checkpoint_bytes_per_context: float
    results_bytes_per_context: float
    files: dict[str, int]


def measure_size(
    server: ScriptedLLMServer, work: Path, count: int, concurrency: int, answers: int
) -> SizeResult:
    """One ``cq2a run`` subprocess over ``count`` contexts; its peak RSS from ``wait4``."""
    input_path = write_contexts(work / f"contexts_{count}.jsonl", copied_contexts(count))
    run_dir = work / f"run_{count}"
    command = run_command(input_path, run_dir, server.base_url, concurrency, answers)
    environment = os.environ | ENVIRONMENT | {"PYTHONPATH": str(REPO)}
    served_before = server.served
    log = (work / f"run_{count}.log").open("wb")
    started = time.perf_counter()
    child = subprocess.Popen(command, cwd=REPO, env=environment, stdout=log, stderr=log)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    log.close()
    record = out.read_json(run_dir / out.RUN) if (run_dir / out.RUN).exists() else {}
    if not record:
        tail = (work / f"run_{count}.log").read_text(encoding="utf-8", errors="replace")[-2000:]
        raise RuntimeError(f"cq2a run exited {child.returncode} with no run.json:\n{tail}")
    finished = int(record.get("counts", {}).get("contexts_finished", 0))
    run_s = float(record.get("seconds") or wall)
    files = store_bytes(run_dir)
    checkpoint = files.get(out.CHECKPOINTS, 0)
    per = max(finished, 1)
    return SizeResult(
        contexts=count,
        contexts_finished=finished,
        status=str(record.get("status")),
        wall_s=round(wall, 2),
        run_s=round(run_s, 2),
        s_per_context=round(run_s / count, 4),
        contexts_per_s=round(count / run_s, 3),
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),  # kilobytes on Linux
        requests=server.served - served_before,
        checkpoint_bytes_per_context=round(checkpoint / per, 1),
        results_bytes_per_context=round((sum(files.values()) - checkpoint) / per, 1),
        files=files,
    )


def ratios(results: Sequence[SizeResult]) -> dict[str, float]:
    """The largest size against the smallest: the issue's targets are RSS <= 1.2x and seconds
    per context within 20%."""
    small, large = min(results, key=lambda r: r.contexts), max(results, key=lambda r: r.contexts)
    return {
        "peak_rss_ratio": round(large.peak_rss_mb / small.peak_rss_mb, 3),
        "s_per_context_ratio": round(large.s_per_context / small.s_per_context, 3),
    }


def print_table(results: Sequence[SizeResult]) -> None:
    columns = (
        "contexts",
        "contexts_finished",
        "status",
        "wall_s",
        "run_s",
        "s_per_context",
        "contexts_per_s",
        "peak_rss_mb",
        "requests",
        "checkpoint_bytes_per_context",
        "results_bytes_per_context",
    )
    print(" | ".join(columns))
    for item in results:
        print(" | ".join(str(getattr(item, column)) for column in columns))
    if len(results) > 1:
        print(ratios(results))


def git_commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True)
    return done.stdout.decode().strip()


def write_results(args: argparse.Namespace, figures: dict[str, Any]) -> None:
    """``--json``: the commit, the settings, the machine's cores and load, then ``figures``."""
    payload: dict[str, Any] = {
        "commit": git_commit(),
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "answers_per_context": args.answers_per_context,
        "cpus": os.cpu_count(),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        **figures,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,5000", help="context counts, comma-separated")
    parser.add_argument(
        "--latency", type=float, default=0.05, help="seconds the server waits per request"
    )
    parser.add_argument("--concurrency", type=int, default=8, help="cq2a's concurrent requests")
    parser.add_argument("--answers-per-context", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--keep", type=Path, default=None, help="keep inputs and runs here")
    parser.add_argument(
        "--engine", choices=("local", "ray"), default="local", help="ray: evals/scale_ray.py"
    )
    parser.add_argument("--actors", default="1,2,4", help="--engine ray: actor counts")
    args = parser.parse_args(argv)
    if args.engine == "ray":
        from evals import scale_ray  # here, not at the top: it imports this module

        scale_ray.main(args)
        return
    sizes = [int(size) for size in args.sizes.split(",")]
    results = []
    with tempfile.TemporaryDirectory(prefix="cq2a-scale-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        with ScriptedLLMServer(latency_s=args.latency, keep_requests=False) as server:
            worker.script().install(server.rules)
            for size in sizes:
                results.append(
                    measure_size(server, work, size, args.concurrency, args.answers_per_context)
                )
                print(f"done: {size} contexts in {results[-1].wall_s} s", file=sys.stderr)
    print_table(results)
    if args.json:
        write_results(
            args,
            {
                "results": [item.model_dump() for item in results],
                "ratios": ratios(results) if len(results) > 1 else {},
            },
        )


if __name__ == "__main__":
    main()
