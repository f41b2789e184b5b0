"""Reliability figures: outages, injected faults, crashes, the spending cap and bad input.

Every LLM role is played by the scripted OpenAI-compatible server (``evals.reliability_worker``),
the parser and embedder are the real offline ones, and the CLI runs in subprocesses as a user
would run it. ``python -m evals.reliability [--json OUT]`` prints one table per figure.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cq2a.adapters.llm.local_server import free_port
from cq2a.app import outputs as out
from cq2a.app.run import run_pipeline
from cq2a.runtime.services import release_services
from cq2a.testing.scripted_server import FAULT_KINDS, FaultPlan, ScriptedLLMServer
from evals import reliability_worker as worker

REPO = Path(__file__).resolve().parents[1]
ENV = os.environ | {"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
#: The options that make a CLI run use the scripted roles (judge probe left on, so each
#: caller says whether it wants it).
SCRIPTED = [
    "--model",
    "scripted",
    "--backend",
    "compatible",
    "--answers-per-context",
    "1",
    "--questions-per-entity",
    "2",
    "--no-relations",
    "--no-progress",
]
DECODING_SUT = "callable:evals.reliability_worker:decoding_sut"


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> dict[str, Any]:
    """Run ``cq2a`` in a subprocess: exit code, seconds, and its last message line."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "cq2a.cli", *args],
        cwd=REPO,
        env=ENV | (env or {}),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    messages = [line for line in done.stderr.splitlines() if line.startswith("cq2a: ")]
    return {
        "rc": done.returncode,
        "seconds": round(time.perf_counter() - started, 1),
        "message": messages[-1] if messages else done.stderr.strip().splitlines()[-1:],
        "stdout": done.stdout.strip(),
    }


def result_files(run_dir: Path) -> dict[str, list[str]]:
    """What two runs must agree on: the tests, and each test's verdict."""

    def rows(name: str, keys: tuple[str, ...]) -> list[str]:
        path = run_dir / name
        records = out.read_jsonl(path) if path.exists() else []
        return sorted(json.dumps({k: r.get(k) for k in keys}) for r in records)

    return {
        "test_cases": rows(out.TEST_CASES, ("id", "question", "answer")),
        "verdicts": rows(out.VERDICTS, ("test_id", "sut_answer", "bug", "stage")),
    }


def present(run_dir: Path) -> list[str]:
    names = (out.RUN, out.TEST_CASES, out.REJECTED, out.PENDING, out.VERDICTS, out.BUGS)
    return [name for name in names if (run_dir / name).exists()]


# ---- figures ----


def dead_llm(tmp: Path) -> dict[str, Any]:
    """The issue's command: nothing listens at the LLM's URL. Then resume with it up."""
    input_path = worker.write_input(tmp / "in.jsonl", worker.contexts(2))
    url = f"http://127.0.0.1:{free_port()}/v1"
    sut = ["--sut", DECODING_SUT]
    dead = cli(
        "run", str(input_path), "--out", str(tmp / "dead"), "--base-url", url, *SCRIPTED, *sut
    )
    record = out.read_json(tmp / "dead" / out.RUN)
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        live = ["--base-url", server.base_url, *SCRIPTED, *sut, "--no-judge-probe"]
        resumed = cli("run", str(input_path), "--out", str(tmp / "dead"), "--resume", *live)
        fresh = cli("run", str(input_path), "--out", str(tmp / "fresh"), *live)
    return {
        "exit_code": dead["rc"],
        "seconds_to_exit": dead["seconds"],
        "status": record["status"],
        "message": record["message"],
        "files_present": present(tmp / "dead"),
        "resume_exit_code": resumed["rc"],
        "resume_same_as_uninterrupted": result_files(tmp / "dead") == result_files(tmp / "fresh")
        and fresh["rc"] == 0,
        "accepted": len(result_files(tmp / "fresh")["test_cases"]),
    }


def injected_faults(tmp: Path, contexts: int = 20, rate: float = 0.2) -> dict[str, Any]:
    """20% of requests fail (500, 429 with Retry-After, timeouts, malformed bodies and JSON,
    empty choices) over a 20-context run."""
    items = worker.contexts(contexts)
    input_path = worker.write_input(tmp / "in.jsonl", items)
    plan = FaultPlan(rate=rate, kinds=list(FAULT_KINDS), seed=3)
    release_services()
    with ScriptedLLMServer(faults=plan, timeout_hold_s=1.5, retry_after_s=0.01) as server:
        worker.script().install(server.rules)
        settings = worker.settings_for(
            server.base_url, spec={"timeout_s": 1.0}, llm_retries=3, concurrency=4
        )
        summary = run_pipeline(input_path, tmp / "run", settings)
        requests = server.requests
    run_dir = tmp / "run"
    record = out.read_json(run_dir / out.RUN)
    candidates = {c["id"] for c in out.read_jsonl(run_dir / out.CANDIDATES)}
    settled = [
        c["id"]
        for name in (out.TEST_CASES, out.REJECTED, out.PENDING)
        for c in out.read_jsonl(run_dir / name)
    ]
    skipped = {s["id"] for s in out.read_jsonl(run_dir / out.SKIPPED)}
    finished = record["counts"]["contexts_finished"]
    faults = Counter(r.fault for r in requests if r.fault)
    return {
        "status": summary.status,
        "requests": len(requests),
        "faulted_requests": faults.total(),
        "faults": dict(faults),
        "contexts_finished": finished,
        "contexts_skipped_with_reason": len(skipped),
        "contexts_lost": contexts - finished - len(skipped & {c.id for c in items}),
        "candidates": len(candidates),
        "totals_reconcile": sorted(settled) == sorted(candidates)
        and record["counts"]["accepted"]
        + record["counts"]["rejected"]
        + record["counts"]["pending"]
        == len(candidates),
        "pending_after_errors": record["counts"]["pending"],
        "unjudged": record["counts"]["unjudged"],
    }


def wait_for_contexts(run_dir: Path, process: subprocess.Popen[bytes], count: int) -> None:
    deadline = time.time() + 120
    trace = run_dir / out.TRACE
    while time.time() < deadline and process.poll() is None:
        text = trace.read_text(encoding="utf-8") if trace.exists() else ""
        if text.count('"context_finished"') >= count:
            return
        time.sleep(0.01)
    raise RuntimeError(f"the worker ended or stalled before {count} contexts finished")


def kill_and_resume(tmp: Path, points: tuple[int, ...] = (1, 4, 8)) -> list[dict[str, Any]]:
    """SIGKILL a run of 10 contexts after 1, 4 and 8 contexts finished; resume each."""
    input_path = worker.write_input(tmp / "in.jsonl", worker.contexts(10))
    release_services()
    with ScriptedLLMServer(latency_s=0.05) as server:
        worker.script().install(server.rules)
        run_pipeline(input_path, tmp / "reference", worker.settings_for(server.base_url))
    reference = result_files(tmp / "reference")
    rows = []
    for point in points:
        run_dir = tmp / f"killed-{point}"
        command = [sys.executable, "-m", "evals.reliability_worker", str(input_path), str(run_dir)]
        process = subprocess.Popen(
            [*command, str(tmp / f"k{point}.json"), "--latency", "0.1"], cwd=REPO, env=ENV
        )
        try:
            wait_for_contexts(run_dir, process, point)
            process.send_signal(signal.SIGKILL)
        finally:
            process.wait(timeout=60)
        resumed = subprocess.run(
            [*command, str(tmp / f"r{point}.json"), "--resume"], cwd=REPO, env=ENV, timeout=300
        )
        stats = json.loads((tmp / f"r{point}.json").read_text())
        rows.append(
            {
                "killed_after_contexts": point,
                "killed_by_sigkill": process.returncode == -signal.SIGKILL,
                "resume_exit_code": resumed.returncode,
                "status": stats["status"],
                "resumed_requests": stats["requests"],
                "identical_output": result_files(run_dir) == reference,
                "tests": len(reference["test_cases"]),
            }
        )
    return rows


def spend_cap_across_resume(tmp: Path, cap: int = 2000) -> dict[str, Any]:
    """Stop at a token cap, resume with the same cap, then with a raised one."""
    input_path = worker.write_input(tmp / "in.jsonl", worker.contexts(6))
    spent: list[int] = []
    release_services()
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        statuses = []
        for limit in (cap, cap, None):
            before = len(server.requests)
            summary = run_pipeline(
                input_path,
                tmp / "run",
                worker.settings_for(server.base_url, max_tokens=limit, concurrency=4),
                resume=bool(spent),
            )
            release_services()
            statuses.append(summary.status)
            spent.append(
                sum(r.prompt_tokens + r.completion_tokens for r in server.requests[before:])
            )
    return {
        "cap": cap,
        "first_part_tokens": spent[0],
        "resume_same_cap_tokens": spent[1],
        "statuses": statuses,
        "total_under_the_cap": spent[0] + spent[1],
        "overshoot_tokens": max(0, spent[0] + spent[1] - cap),
        "raised_cap_finishes": statuses[-1] == "finished",
    }


def bad_inputs(tmp: Path) -> list[dict[str, Any]]:
    """Twelve kinds of bad input (and a SUT failing after generation), each through the CLI:
    what the user sees and what is kept."""
    good = worker.contexts(2)
    lines = [json.dumps({"id": c.id, "context": c.context}) for c in good]

    def write(name: str, data: bytes) -> Path:
        path = tmp / name
        path.write_bytes(data)
        return path

    good_file = write("good.jsonl", ("\n".join(lines) + "\n").encode())
    not_a_dir = write("a-file", b"")
    huge = "The Rhine flows from the Swiss Alps to the North Sea. " * 380_000  # ~20 MB
    cases: list[tuple[str, Path, list[str], dict[str, str]]] = [
        ("empty file", write("empty.jsonl", b""), [], {}),
        ("binary file", write("binary.jsonl", bytes(range(256)) * 64), [], {}),
        (
            "bad JSON line",
            write("badjson.jsonl", ("\n".join([*lines, '{"id": "x", "context": '])).encode()),
            [],
            {},
        ),
        (
            "missing context",
            write("nocontext.jsonl", ("\n".join([*lines, json.dumps({"id": "y"})])).encode()),
            [],
            {},
        ),
        ("duplicate ids", write("dup.jsonl", ("\n".join([*lines, lines[0]])).encode()), [], {}),
        (
            "20 MB context",
            write(
                "huge.jsonl",
                (lines[0] + "\n" + json.dumps({"id": "huge", "context": huge})).encode(),
            ),
            [],
            {},
        ),
        (
            "non-UTF-8",
            write(
                "latin1.jsonl",
                (lines[0] + "\n").encode()
                + '{"id": "l", "context": "Caf\xe9 au lait is served in Paris."}\n'.encode(
                    "latin-1"
                ),
            ),
            [],
            {},
        ),
        (
            "SUT returns the wrong count",
            good_file,
            ["--sut", "callable:evals.reliability_worker:wrong_count_sut"],
            {},
        ),
        ("SUT raises", good_file, ["--sut", "callable:evals.reliability_worker:broken_sut"], {}),
        (
            "SUT hangs",
            good_file,
            ["--sut", "callable:evals.reliability_worker:hanging_sut"],
            {"CQ2A_SUT__TIMEOUT_S": "3"},
        ),
        (
            "SUT raises after generation (preflight off)",
            good_file,
            ["--sut", "callable:evals.reliability_worker:broken_sut"],
            {"CQ2A_PREFLIGHT": "false"},
        ),
        ("unknown model", good_file, ["--backend", "local", "--model", "no-such-model"], {}),
        ("unwritable --out", good_file, ["--out", str(not_a_dir / "run")], {}),
    ]
    rows = []
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        for index, (name, path, extra, env) in enumerate(cases):
            run_dir = tmp / f"bad-{index}"
            args = [
                "run",
                str(path),
                "--out",
                str(run_dir),
                *SCRIPTED,
                "--base-url",
                server.base_url,
            ]
            args += ["--no-judge-probe", "--sut", DECODING_SUT, *extra]
            result = cli(*args, env=env)
            record = out.read_json(run_dir / out.RUN) if (run_dir / out.RUN).exists() else {}
            kept = (
                len(out.read_jsonl(run_dir / out.TEST_CASES))
                if (run_dir / out.TEST_CASES).exists()
                else 0
            )
            rows.append(
                {
                    "input": name,
                    "exit_code": result["rc"],
                    "status": record.get("status", "-"),
                    "message": result["message"] if result["rc"] else result["stdout"],
                    "skipped": [s["reason"] for s in record.get("skipped", [])],
                    "tests_kept": kept,
                    "seconds": result["seconds"],
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument(
        "--only", nargs="*", default=None, help="dead_llm faults kill spend bad_inputs"
    )
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    steps: dict[str, Callable[[Path], Any]] = {
        "dead_llm": dead_llm,
        "faults": injected_faults,
        "kill": kill_and_resume,
        "spend": spend_cap_across_resume,
        "bad_inputs": bad_inputs,
    }
    with tempfile.TemporaryDirectory(prefix="cq2a-reliability-") as tmp:
        for name, step in steps.items():
            if args.only and name not in args.only:
                continue
            folder = Path(tmp) / name
            folder.mkdir()
            started = time.perf_counter()
            figures[name] = step(folder)
            print(f"## {name} ({time.perf_counter() - started:.0f} s)", flush=True)
            print(json.dumps(figures[name], indent=2), flush=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
