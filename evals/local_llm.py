"""The local LLM at the hardware limit: llama.cpp's native server with slots, measured on a real
model with the pipeline's own prompts and client.

One fixed workload on the shipped SQuAD contexts (human questions and answers, so no stage
depends on another): ``generation`` structured requests (the entity prompt, 2 questions each),
``reask`` questions re-asked with 5 votes each, ``judge`` structured verdicts. It runs twice
through ``cq2a.adapters.llm.client.ChatClient``:

* serial: a server with 1 slot, one request at a time, votes as 5 requests (the old server);
* slotted: a server with ``--slots`` slots, stage by stage as the graph runs one context (all
  generation requests at once, then all re-asks, then all judge requests; the client keeps as
  many choices in flight as there are slots), votes as ``n`` requests of at most ``slots``.

``local_llm_throughput_ratio`` is completion tokens/s slotted ÷ serial. ``local_votes_ratio``
is the seconds of 5 votes as one ``n=5`` request ÷ 5 sequential requests (same server, same
prompts). ``local_compute_efficiency`` is the slotted workload's compute bound ÷ its wall time,
the bound being the tokens the server really processed (its ``/metrics``, so cached prompt
prefixes are not counted) at the best rates ``llama-batched-bench`` measures. Every figure
comes with the load average.

    python -m evals.local_llm --json evals/results/local_llm.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from cq2a.adapters.fanout import parallel_map
from cq2a.adapters.llm.catalog import ensure_model
from cq2a.adapters.llm.choices import forget_n_support
from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.endpoint import Endpoint
from cq2a.adapters.llm.local_server import (
    LocalLLMServer,
    model_alias,
    server_binary,
    server_counters,
)
from cq2a.adapters.llm.prompts import load_prompt, render_prompt
from cq2a.adapters.llm.usage import Usage, tally_usage
from cq2a.generation.questions import GeneratedQuestions, blank_out
from cq2a.models.records import JudgeVerdict
from cq2a.settings import DEFAULT_LOCAL_MODEL, LOCAL_CONTEXT_WINDOW, LLMSpec, Settings
from evals.runs import emit

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO / "cq2a" / "data" / "squad2_dev_sample.jsonl"
METRICS = ("prompt_tokens_total", "tokens_predicted_total")


def sentence_of(context: str, answer: str) -> str:
    """The sentence of ``context`` that holds ``answer`` (the generation prompt's cloze)."""
    for sentence in re.split(r"(?<=[.!?])\s+", context):
        if answer in sentence:
            return sentence
    return context


def workload(
    records: list[dict[str, Any]], generation: int, reask: int, judge: int
) -> list[tuple[str, str, str, str]]:
    """``(kind, system, user, id)`` for each request group, drawn in order from the human
    questions of ``records`` (the project's dataset JSONL)."""
    qas = [
        (record["context"], qa["question"], qa["answers"])
        for record in records
        for qa in record.get("qas", [])
        if qa.get("answers") and not qa.get("is_impossible")
    ]
    if len(qas) < max(generation, reask, judge) + 1:
        raise SystemExit(f"the sample has {len(qas)} answered questions; the workload needs more")
    items = []
    for index, (context, _, answers) in enumerate(qas[:generation]):
        answer = answers[0]
        user = render_prompt(
            "entity_questions.user",
            context=context,
            cloze=blank_out(sentence_of(context, answer), answer),
            feedback="",
            count=2,
            answer=answer,
        )
        items.append(("generation", load_prompt("entity_questions.system"), user, f"g{index}"))
    for index, (context, question, _) in enumerate(qas[:reask]):
        user = render_prompt("reask.user", context=context, question=question)
        items.append(("reask", load_prompt("reask.system"), user, f"r{index}"))
    for index, (context, question, answers) in enumerate(qas[:judge]):
        user = render_prompt(
            "judge.user",
            context=context,
            question=question,
            gold_answer=answers[0],
            sut_answer=qas[index + 1][2][0],  # another question's answer: often a bug
        )
        items.append(("judge", load_prompt("judge.system"), user, f"j{index}"))
    return items


def send(client: ChatClient, item: tuple[str, str, str, str], votes: int) -> Usage:
    """One workload item's request; returns what it used."""
    kind, system, user, _ = item
    with tally_usage() as tally:
        if kind == "reask":
            client.text(system, user, n=votes)
        else:
            client.structured(
                system, user, GeneratedQuestions if kind == "generation" else JudgeVerdict
            )
    return tally.total


def metrics(server: LocalLLMServer) -> dict[str, float]:
    """The server's token counters (``local_server.server_counters``, from its ``/metrics``)."""
    found = server_counters(server.base_url)
    if found is None:
        raise RuntimeError(f"the server at {server.base_url} serves no /metrics")
    return {name: found.get(name, 0.0) for name in METRICS}


def client_for(server: LocalLLMServer, model: str, slots: int, seed: int) -> ChatClient:
    forget_n_support()
    spec = LLMSpec(model=model, temperature=0.7, max_tokens=256)
    settings = Settings(cache_path="off", seed=seed, local_slots=slots)
    return ChatClient(spec, settings, endpoint=Endpoint(server.base_url, server.slots))


def run_workload(
    model_path: Path,
    model: str,
    slots: int,
    items: list[tuple[str, str, str, str]],
    votes: int,
    parallel: bool,
    seed: int,
) -> dict[str, Any]:
    with LocalLLMServer(
        model_path, alias=model_alias(model), n_ctx=LOCAL_CONTEXT_WINDOW, slots=slots
    ) as server:
        client = client_for(server, model, slots, seed)
        client.text("Reply with one word.", "Warm up.", n=1)  # load pages, fill caches
        before = metrics(server)
        started = time.perf_counter()
        with tally_usage() as tally:
            if parallel:  # stage by stage, as the graph runs a context: a stage's requests at once
                for kind in ("generation", "reask", "judge"):
                    stage = [item for item in items if item[0] == kind]
                    parallel_map(lambda item: send(client, item, votes), stage, len(stage))
            else:
                for item in items:
                    send(client, item, votes)
        wall = time.perf_counter() - started
        after = metrics(server)
    total = tally.total
    return {
        "slots": slots,
        "wall_s": round(wall, 1),
        "requests": total.requests,
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "completion_tokens_per_s": round(total.completion_tokens / wall, 2),
        "prompt_tokens_processed": int(after[METRICS[0]] - before[METRICS[0]]),
        "tokens_predicted": int(after[METRICS[1]] - before[METRICS[1]]),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def votes_seconds(
    model_path: Path, model: str, slots: int, items: list[tuple[str, str, str, str]], votes: int
) -> dict[str, Any]:
    """5 votes as one n-request vs 5 single requests, on the same server and prompts (each
    prompt asked once beforehand, so both find its prefix cached)."""
    reasks = [item for item in items if item[0] == "reask"][:3]
    with LocalLLMServer(
        model_path, alias=model_alias(model), n_ctx=LOCAL_CONTEXT_WINDOW, slots=slots
    ) as server:
        together = client_for(server, model, slots, seed=100)
        apart = client_for(server, model, 1, seed=200)
        apart.choices.max_choices = 1  # one choice per request, sent one after another
        for _, system, user, _ in reasks:
            together.text(system, user, n=1)
        started = time.perf_counter()
        one = [send(together, item, votes) for item in reasks]
        one_s = time.perf_counter() - started
        started = time.perf_counter()
        five = [send(apart, item, votes) for item in reasks]
        five_s = time.perf_counter() - started
    return {
        "questions": len(reasks),
        "n_request_s": round(one_s, 2),
        "sequential_s": round(five_s, 2),
        "n_requests": sum(u.requests for u in one),
        "sequential_requests": sum(u.requests for u in five),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def batched_bench(model_path: Path, batches: list[int], threads: int) -> list[dict[str, float]]:
    """``llama-batched-bench`` rows: prompt and generation tokens/s at each batch size."""
    binary = server_binary()
    bench = binary.parent / "llama-batched-bench" if binary else None
    if bench is None or not bench.exists():
        return []
    command = [
        str(bench), "-m", str(model_path), "-c", str(LOCAL_CONTEXT_WINDOW * max(batches)),
        "-npp", "256", "-ntg", "32", "-npl", ",".join(map(str, batches)), "-t", str(threads),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=1800)
    rows = []
    for line in done.stdout.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 10 and cells[0].isdigit():
            rows.append(
                {
                    "pp": float(cells[0]),
                    "tg": float(cells[1]),
                    "batch": float(cells[2]),
                    "pp_tokens_per_s": float(cells[5]),
                    "tg_tokens_per_s": float(cells[7]),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_LOCAL_MODEL)
    parser.add_argument("--slots", type=int, default=Settings().local_slots)
    parser.add_argument("--generation", type=int, default=8)
    parser.add_argument("--reask", type=int, default=8, help="questions, each with 5 votes")
    parser.add_argument("--judge", type=int, default=8)
    parser.add_argument("--votes", type=int, default=5)
    parser.add_argument("--skip-serial", action="store_true")
    parser.add_argument("--skip-batched-bench", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    model_path = ensure_model(args.model)
    records = [json.loads(line) for line in SQUAD.read_text().splitlines() if line.strip()]
    items = workload(records, args.generation, args.reask, args.judge)
    threads = os.cpu_count() or 1
    report: dict[str, Any] = {"model": args.model, "threads": threads, "votes": args.votes}
    batches = sorted({1, 2, 4, 8, args.slots})
    report["batched_bench"] = (
        [] if args.skip_batched_bench else batched_bench(model_path, batches, threads)
    )
    print(json.dumps(report["batched_bench"], indent=1), flush=True)
    report["slotted"] = run_workload(
        model_path, args.model, args.slots, items, args.votes, parallel=True, seed=1
    )
    print("slotted", report["slotted"], flush=True)
    if not args.skip_serial:
        report["serial"] = run_workload(
            model_path, args.model, 1, items, args.votes, parallel=False, seed=1
        )
        print("serial", report["serial"], flush=True)
        report["local_llm_throughput_ratio"] = round(
            report["slotted"]["completion_tokens_per_s"]
            / report["serial"]["completion_tokens_per_s"],
            2,
        )
    report["votes"] = votes_seconds(model_path, args.model, max(args.slots, 5), items, args.votes)
    report["local_votes_ratio"] = round(
        report["votes"]["n_request_s"] / report["votes"]["sequential_s"], 2
    )
    if report["batched_bench"]:
        best_tg = max(row["tg_tokens_per_s"] for row in report["batched_bench"])
        best_pp = max(row["pp_tokens_per_s"] for row in report["batched_bench"])
        slotted = report["slotted"]
        bound = slotted["tokens_predicted"] / best_tg + slotted["prompt_tokens_processed"] / best_pp
        report["compute_bound_s"] = round(bound, 1)
        report["local_compute_efficiency"] = round(bound / slotted["wall_s"], 2)
    emit(report, json.dumps(report, indent=2), args.json)


if __name__ == "__main__":
    main()
