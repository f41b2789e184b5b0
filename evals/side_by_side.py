"""cq2a and a peer's test-set generator side by side: the same passages, the same local model,
wall time, tokens, and the outputs for a person to read.

The passages are the demo's (the first ``--contexts`` of the shipped SQuAD 2.0 sample). One
local llama.cpp server serves the default generator model to both tools (started here, or the
one ``CQ2A_LOCAL_LLM_URL`` names); its ``/metrics`` are read before and after each tool, so the
tokens are what the server processed, generated and found in its prompt cache for that tool
alone. cq2a runs as ``cq2a demo`` (its SUT and oracle included: its own local SUT server is not
counted in the generator's tokens; run.json's ``local_servers`` has it). The peer runs with the
Python of its own virtual environment (``--peer-python``; peers are not project dependencies):

    python -m venv /tmp/peers && /tmp/peers/bin/pip install deepeval==4.3.1
    python -m evals.side_by_side --peer deepeval --peer-python /tmp/peers/bin/python \\
        --json evals/results/side_by_side.json
    python -m evals.side_by_side --from evals/results/side_by_side.json \\
        --labels evals/data/side_by_side_labels.jsonl --json evals/results/side_by_side.json

``--labels``: a person's reading of the outputs, one JSON object per line
``{"tool", "question", "valid", "why"}``; with it the JSON gives valid tests and seconds and
tokens per valid test for each tool (an output nobody labelled counts as unread, not valid).
``--from``: label a result written earlier instead of running the tools again.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cq2a.adapters.llm.local_server import (
    EXTERNAL_URL_ENV,
    counters_spent,
    get_local_server,
    server_counters,
    stop_local_servers,
)
from cq2a.cli.options import demo_input
from cq2a.settings import DEFAULT_LOCAL_MODEL, Settings
from evals.runs import emit, table

REPO = Path(__file__).resolve().parents[1]
#: Runner scripts, run with the peer's Python, by peer name.
PEERS = {"deepeval": REPO / "evals" / "peers" / "deepeval_synthesizer.py"}


def timed(command: list[str], base_url: str, env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run ``command`` to its end; its wall time and what the server did meanwhile."""
    before = server_counters(base_url)
    if before is None:
        raise SystemExit(f"{base_url} serves no /metrics: start it with `cq2a llm serve`")
    started = time.monotonic()
    with log.open("w") as out:
        done = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{command[:3]} exited {done.returncode}; see {log}")
    after = server_counters(base_url)
    if after is None:
        raise SystemExit(f"{base_url} stopped serving /metrics during {command[:3]}")
    used = counters_spent(before, after)
    return {
        "seconds": round(seconds, 1),
        "tokens": used["prompt_tokens"] + used["tokens_predicted"],
    } | used


def cq2a_outputs(run_dir: Path) -> list[dict[str, Any]]:
    """The accepted tests of a cq2a run, for reading."""
    path = run_dir / "test_cases.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    return [
        {"context_id": r["context_id"], "question": r["question"], "answer": r["answer"]}
        for r in rows
    ]


def with_labels(
    result: dict[str, Any], outputs: list[dict[str, Any]], labels: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Valid outputs by a person's labels, and seconds and tokens per valid test."""
    read = [labels[o["question"]] for o in outputs if o["question"] in labels]
    valid = sum(bool(label["valid"]) for label in read)
    figures: dict[str, Any] = {"read": len(read), "unread": len(outputs) - len(read)}
    figures["valid"] = valid
    figures["seconds_per_valid"] = round(result["seconds"] / valid, 1) if valid else None
    figures["tokens_per_valid"] = round(result["tokens"] / valid) if valid else None
    return figures


def run_both(args: argparse.Namespace) -> dict[str, Any]:
    """The peer, then cq2a, on the demo's first passages and one local server."""
    work = Path(args.work or tempfile.mkdtemp(prefix="side_by_side_"))
    work.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in demo_input().read_text().splitlines() if line]
    passages = work / "passages.jsonl"
    passages.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[: args.contexts])
    )
    server = get_local_server(DEFAULT_LOCAL_MODEL, slots=Settings().local_slots)
    env = os.environ | {EXTERNAL_URL_ENV: server.base_url, "HF_HUB_OFFLINE": "1"}
    # a 1.5B model on 2 cores answers slower than DeepEval's default per-call timeout
    env |= {"DEEPEVAL_TELEMETRY_OPT_OUT": "1", "ERROR_REPORTING": "NO"}
    env |= {"DEEPEVAL_DISABLE_TIMEOUTS": "1"}
    try:
        peer_out = work / f"{args.peer}.json"
        peer_command = [args.peer_python, str(PEERS[args.peer]), "--contexts", str(passages)]
        peer_command += ["--base-url", server.base_url, "--model", server.alias]
        peer_command += ["--per-context", str(args.per_context), "--out", str(peer_out)]
        peer = timed(peer_command, server.base_url, env, work / f"{args.peer}.log")
        peer_outputs = json.loads(peer_out.read_text())["goldens"]
        run_dir = work / "cq2a"
        cq2a_command = [sys.executable, "-m", "cq2a.cli", "demo", "--limit", str(args.contexts)]
        cq2a_command += ["--out", str(run_dir), "--force", "--no-progress"]
        ours = timed(cq2a_command, server.base_url, env, work / "cq2a.log")
        our_outputs = cq2a_outputs(run_dir)
    finally:
        stop_local_servers()
    return {
        "passages": [r["id"] for r in rows[: args.contexts]],
        "model": server.alias,
        "tools": {
            args.peer: peer | {"outputs": len(peer_outputs)},
            "cq2a": ours | {"outputs": len(our_outputs)},
        },
        "outputs": {args.peer: peer_outputs, "cq2a": our_outputs},
        "load_average_after": list(os.getloadavg()),
    }


def labelled(result: dict[str, Any], labels_path: Path) -> dict[str, Any]:
    """``result`` with each tool's valid outputs and seconds and tokens per valid test."""
    labels: dict[str, dict[str, dict[str, Any]]] = {}
    for line in labels_path.read_text().splitlines():
        if line.strip():
            label = json.loads(line)
            labels.setdefault(label["tool"], {})[label["question"]] = label
    for tool, outputs in result["outputs"].items():
        result["tools"][tool] |= with_labels(result["tools"][tool], outputs, labels.get(tool, {}))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", choices=sorted(PEERS), default="deepeval")
    parser.add_argument("--peer-python", help="the peer's virtualenv Python")
    parser.add_argument("--contexts", type=int, default=2, help="the demo's first N passages")
    parser.add_argument("--per-context", type=int, default=6, help="the peer's goldens each")
    parser.add_argument("--labels", default=None, help="JSONL of a person's reading")
    parser.add_argument("--from", dest="source", default=None, help="label this result JSON")
    parser.add_argument("--work", default=None, help="folder for the runs (default: a temp one)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.source:
        result = json.loads(Path(args.source).read_text())
    elif args.peer_python:
        result = run_both(args)
    else:
        parser.error("give --peer-python to run both tools, or --from a result to label")
    if args.labels:
        result = labelled(result, Path(args.labels))
    columns = ["seconds", "prompt_tokens", "prompt_tokens_cached", "tokens_predicted"]
    columns += ["outputs", "valid", "seconds_per_valid", "tokens_per_valid"]
    rows = [[tool] + [f.get(c) for c in columns] for tool, f in result["tools"].items()]
    emit(result, table(["tool", *columns], rows), Path(args.json) if args.json else None)


if __name__ == "__main__":
    main()
