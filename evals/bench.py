"""Benchmarks of the pipeline's engineering: scheduling, tokens, cache, batching, start-up, speed.

Every LLM role is played by the scripted OpenAI-compatible server (``cq2a.testing``), so the
figures measure the orchestration, not a model. Token counts are the server's ``ceil(chars/4)``.

    python -m evals.bench --quick --json evals/results/bench_quick.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from cq2a.adapters.sut.base import SUTQuery
from cq2a.app.inputs import read_contexts
from cq2a.app.run import RunSummary, run_pipeline
from cq2a.models.records import Context
from cq2a.runtime.services import release_services
from cq2a.settings import LLMSpec, Settings, SUTSpec
from cq2a.testing.script import PipelineScript, marker
from cq2a.testing.scripted_server import RecordedRequest, ScriptedLLMServer

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO / "cq2a" / "data" / "squad2_dev_sample.jsonl"
IMPORT_SNIPPET = (
    "import time; t = time.perf_counter(); import cq2a; "
    "from cq2a.graph import build_graph; build_graph(); print(time.perf_counter() - t)"
)
TEMPLATES = (
    "According to the text, what matches clue {tag} in this account?",
    "Which item does reference {tag} point to, as the text tells it?",
    "What would a careful reader give for marker {tag} here?",
)


class Target(BaseModel):
    """A benchmark's goal: ``value >= bound`` (``at_least``) or ``value <= bound``."""

    bound: float
    at_least: bool

    def met(self, value: float | None) -> bool | None:
        if value is None:
            return None
        return value >= self.bound if self.at_least else value <= self.bound

    def __str__(self) -> str:
        return f"{'>=' if self.at_least else '<='} {self.bound:g}"


class BenchResult(BaseModel):
    name: str
    value: float | None
    unit: str = ""
    target: str = ""
    passed: bool | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


def result(name: str, value: float | None, unit: str, target: Target | None, **detail: Any):
    return BenchResult(
        name=name,
        value=None if value is None else round(value, 3),
        unit=unit,
        target="" if target is None else str(target),
        passed=None if target is None else target.met(value),
        detail=detail,
    )


# ---- the scripted run ----


def unsure_sut(items: list[SUTQuery]) -> list[str]:
    """A software under test that never knows: every case goes to the judge."""
    return ["I could not tell from the text" for _ in items]


def nonce(answer: str) -> str:
    return "zq" + hashlib.sha256(answer.encode()).hexdigest()[:6]


def bench_script() -> PipelineScript:
    """Non-leaking questions that every vote answers with their gold answer.

    One answer in three first gets a question that leaks it, so a second generate round runs
    with feedback, as in a real run.
    """
    gold_of: dict[str, str] = {}

    def questions(answer: str, has_feedback: bool) -> list[dict[str, str]]:
        tag = nonce(answer + ("+" if has_feedback else ""))
        made = [t.format(tag=tag) for t in TEMPLATES]
        if not has_feedback and int(tag[2:], 16) % 3 == 0:
            made[0] = f"Is {answer} what the text names for clue {tag}?"
        gold_of.update(dict.fromkeys(made, answer))
        why = f"The passage states it: {answer}."
        return [{"question": q, "explanation": why} for q in made]

    return PipelineScript(
        questions=questions,
        votes=lambda question: [gold_of.get(question, "unknown")] * 5,
        judge=lambda gold, sut: 10,
    )


def bench_settings(server: ScriptedLLMServer, cache_path: str, **overrides: Any) -> Settings:
    """Settings of a scripted run: 3 answers x 2 questions per context, 5 votes, no probe."""
    spec = {"backend": "compatible", "base_url": server.base_url, "model": "scripted"}
    reasker = {"supports_n": overrides.pop("supports_n", None)}
    values: dict[str, Any] = {
        "generator": LLMSpec(**spec),
        "reasker": LLMSpec(**spec, **reasker),
        "judge": LLMSpec(**spec, temperature=0.0),
        "sut": SUTSpec(kind="callable", model="evals.bench:unsure_sut", batch_size=16),
        "question_mix": "entity=1",  # the pipeline's mechanics, on entity questions
        "coverage_rounds": 0,
        "relations": False,
        "answers_per_context": 3,
        "questions_per_entity": 2,
        "probe_judge": False,
        "llm_retries": 1,
        "concurrency": 4,
        "cache_path": cache_path,
    }
    return Settings(**(values | overrides))


class ScriptedRun(BaseModel):
    summary: RunSummary
    started: float
    wall_s: float
    requests: list[RecordedRequest]

    @property
    def tokens(self) -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in self.requests)


def scripted_run(
    server: ScriptedLLMServer, settings: Settings, run_dir: Path, limit: int
) -> ScriptedRun:
    """One ``run_pipeline`` over the first ``limit`` SQuAD contexts; the server's view of it."""
    server.reset()
    release_services()
    started = time.time()
    summary = run_pipeline(SQUAD, run_dir, settings, limit=limit, force=True)
    wall = time.time() - started
    if summary.status != "finished":
        raise RuntimeError(f"scripted run {summary.status}: {summary.message}")
    return ScriptedRun(summary=summary, started=started, wall_s=wall, requests=server.requests)


# ---- orchestration efficiency ----


def request_kind(request: RecordedRequest) -> str:
    """Which stage sent a request, from the first line of its system prompt."""
    text = json.dumps(request.body.get("messages", []))
    kinds = {
        "relations": "relation_extraction.system",
        "generate": "entity_questions.system",
        "generate_relation": "relation_questions.system",
        "reask": "reask.system",
        "judge": "judge.system",
    }
    for kind, prompt in kinds.items():
        if json.dumps(marker(prompt))[1:-1] in text:
            if kind.startswith("generate"):
                return "generate+feedback" if "were rejected" in text else "generate"
            return kind
    return "other"


def context_stages(
    requests: Sequence[RecordedRequest], context: Context
) -> list[list[RecordedRequest]]:
    """One context's sequential stages: runs of same-kind requests in arrival order.

    A stage's requests all start before the next stage's first one (a node waits for its own
    calls), so consecutive requests of one kind form one stage.
    """
    needle = json.dumps(context.context)[1:-1]
    mine = sorted(
        (r for r in requests if request_kind(r) != "judge" and needle in json.dumps(r.body)),
        key=lambda r: r.started,
    )
    stages: list[list[RecordedRequest]] = []
    previous = None
    for request in mine:
        kind = request_kind(request)
        if kind == previous:
            stages[-1].append(request)
        else:
            stages.append([request])
        previous = kind
    return stages


def stage_gaps(stages: Sequence[Sequence[RecordedRequest]]) -> list[float]:
    """Seconds between a stage's last reply and the next stage's first request."""
    return [
        round(min(r.started for r in after) - max(r.ended for r in before), 3)
        for before, after in zip(stages, stages[1:], strict=False)
    ]


def greedy_schedule(chains: Sequence[Sequence[int]], final: int, concurrency: int) -> int:
    """Latencies a zero-overhead scheduler needs: each context's stages in order, ``final``
    calls after all contexts, ``concurrency`` slots, ready calls served in context order."""
    left = [list(chain) for chain in chains]
    steps = 0
    while any(left):
        slots = concurrency
        for chain in left:
            if chain and slots:
                taken = min(chain[0], slots)
                chain[0] -= taken
                slots -= taken
        for chain in left:
            if chain and chain[0] == 0:
                chain.pop(0)
        steps += 1
    return steps + math.ceil(final / concurrency)


def critical_path_bound(
    requests: Sequence[RecordedRequest], contexts: Sequence[Context], concurrency: int
) -> dict[str, Any]:
    """Lower bound, in latencies, of a run's wall time given its requests.

    Per context: each stage of k parallel calls costs ceil(k / C); evaluate's judge calls come
    after every context, two per judged test one after the other (its votes, then the median
    vote's explanation). All contexts share C slots, so the run also needs total / C latencies.
    """
    stages = [context_stages(requests, c) for c in contexts]
    chains = [[len(stage) for stage in context] for context in stages]
    paths = [sum(math.ceil(k / concurrency) for k in chain) for chain in chains]
    judges = sum(request_kind(r) == "judge" for r in requests)
    judging = max(math.ceil(judges / concurrency), min(judges, 2))
    critical = max(paths, default=0) + judging
    throughput = len(requests) / concurrency
    return {
        "per_context_latencies": paths,
        "judge_requests": judges,
        "critical_path_latencies": critical,
        "throughput_latencies": round(throughput, 2),
        "bound_latencies": max(critical, throughput),
        "stages_per_context": chains,
        "stage_gaps_s": [stage_gaps(context) for context in stages],
        "greedy_schedule_latencies": greedy_schedule(chains, judges, concurrency),
    }


def bench_orchestration(
    server: ScriptedLLMServer, work: Path, contexts: int, latency_s: float
) -> BenchResult:
    """Wall time of a run against the bound its own requests impose at ``latency_s`` each."""
    settings = bench_settings(server, "off")
    server.latency_s = latency_s
    try:
        run = scripted_run(server, settings, work / "orchestration", contexts)
    finally:
        server.latency_s = 0.0
    chosen, _ = read_contexts(SQUAD, settings.max_context_chars)
    bound = critical_path_bound(run.requests, chosen[:contexts], settings.concurrency)
    bound_s = bound["bound_latencies"] * latency_s
    first = min(r.started for r in run.requests)
    last = max(r.ended for r in run.requests)
    greedy_s = bound["greedy_schedule_latencies"] * latency_s
    efficiency = bound_s / run.wall_s
    target = Target(bound=0.9, at_least=True)
    return result(
        "orchestration_efficiency",
        efficiency,
        "bound/wall",
        target,
        contexts=contexts,
        latency_s=latency_s,
        concurrency=settings.concurrency,
        requests=len(run.requests),
        bound_s=round(bound_s, 3),
        wall_s=round(run.wall_s, 3),
        before_first_request_s=round(first - run.started, 3),
        after_last_request_s=round(run.started + run.wall_s - last, 3),
        llm_window_s=round(last - first, 3),
        greedy_schedule_s=round(greedy_s, 3),
        efficiency_vs_greedy=round(greedy_s / run.wall_s, 3),
        overhead_s=round(run.wall_s - bound_s, 3),
        miss_by=None if target.met(efficiency) else round(0.9 - efficiency, 3),
        **bound,
    )


# ---- tokens and cache ----


def tokens_by_kind(requests: Sequence[RecordedRequest]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for r in requests:
        kind = request_kind(r)
        totals[kind] = totals.get(kind, 0) + r.prompt_tokens + r.completion_tokens
    return totals


def run_facts_judge(run: ScriptedRun) -> int:
    return tokens_by_kind(run.requests).get("judge", 0)


def run_facts(run: ScriptedRun) -> dict[str, Any]:
    accepted = int(run.summary.counts["accepted"])
    return {
        "requests": len(run.requests),
        "tokens": run.tokens,
        "accepted": accepted,
        "tokens_per_accepted": round(run.tokens / accepted, 1) if accepted else None,
        "tokens_by_stage": tokens_by_kind(run.requests),
    }


def bench_tokens(
    server: ScriptedLLMServer, work: Path, contexts: int
) -> tuple[BenchResult, BenchResult]:
    """Tokens per accepted test, cq2a vs one request per vote without cache; then cache replay."""
    cache = str(work / "llm_cache.sqlite")
    cq2a = scripted_run(server, bench_settings(server, cache), work / "cq2a", contexts)
    naive_settings = bench_settings(server, "off", supports_n=False)
    naive = scripted_run(server, naive_settings, work / "naive", contexts)
    ours, theirs = run_facts(cq2a), run_facts(naive)
    if ours["accepted"] != theirs["accepted"] or not ours["accepted"]:
        raise RuntimeError(f"runs disagree on accepted tests: {ours} vs {theirs}")
    ratio = ours["tokens_per_accepted"] / theirs["tokens_per_accepted"]
    # The judge's share depends on how often the SUT errs (here: always); without it, the ratio
    # is the cost of making the tests alone.
    making = [run.tokens - run_facts_judge(run) for run in (cq2a, naive)]
    tokens = result(
        "tokens_per_accepted_vs_naive",
        ratio,
        "ratio",
        Target(bound=0.3, at_least=False),
        contexts=contexts,
        cq2a=ours,
        naive=theirs,
        ratio_without_judge=round(making[0] / making[1], 3),
        reask_ratio=round(ours["tokens_by_stage"]["reask"] / theirs["tokens_by_stage"]["reask"], 3),
    )
    replay = scripted_run(server, bench_settings(server, cache), work / "replay", contexts)
    replayed = result(
        "cache_replay_llm_calls",
        len(replay.requests),
        "requests",
        Target(bound=0, at_least=False),
        first_run_requests=len(cq2a.requests),
        first_run_choices=sum(r.choices for r in cq2a.requests),
        same_accepted=replay.summary.counts["accepted"] == ours["accepted"],
        cached_hits=replay.summary.usage.cached,
    )
    return tokens, replayed


# ---- SUT batching ----


def bench_sut_batch(n_questions: int, batch_size: int, max_new_tokens: int) -> BenchResult:
    from evals.sut_speed import measure_batch_speedup

    measured = measure_batch_speedup(n_questions, batch_size, "cpu", max_new_tokens)
    target = Target(bound=3.0, at_least=True)
    return result("sut_batch_speedup", measured["speedup"], "x", target, **measured)


# ---- start-up ----


def import_seconds(repeats: int) -> list[float]:
    """Seconds to import cq2a and build the graph, each in a fresh interpreter."""
    times = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", IMPORT_SNIPPET],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return times


def import_offenders(top: int = 8) -> list[dict[str, Any]]:
    """Packages by the import time of their own modules (``python -X importtime``, self time
    summed per top-level package), largest first."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", IMPORT_SNIPPET],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    totals: dict[str, int] = {}
    for line in out.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if match:
            package = match.group(2).split(".")[0]
            totals[package] = totals.get(package, 0) + int(match.group(1))
    ranked = sorted(totals.items(), key=lambda item: -item[1])[:top]
    return [{"package": name, "self_s": round(micros / 1e6, 3)} for name, micros in ranked]


def bench_import(repeats: int) -> BenchResult:
    times = import_seconds(repeats)
    best = min(times)
    target = Target(bound=1.5, at_least=False)
    offenders = [] if target.met(best) else import_offenders()
    return result(
        "import_seconds", best, "s", target, runs=[round(t, 3) for t in times], offenders=offenders
    )


# ---- extraction and embedding throughput ----


def bench_extraction(limit: int) -> BenchResult:
    from cq2a.answers.entities import extract_entities
    from cq2a.language.parsing import get_parser

    contexts, _ = read_contexts(SQUAD, Settings().max_context_chars)
    contexts = contexts[:limit]
    parser = get_parser("spacy")
    parser.parse(contexts[0])  # warm-up
    started = time.perf_counter()
    parsed = [parser.parse(c) for c in contexts]
    answers = sum(len(extract_entities(p, c)) for p, c in zip(parsed, contexts, strict=True))
    seconds = time.perf_counter() - started
    sentences = sum(len(p.sentences) for p in parsed)
    return result(
        "extraction_sentences_per_s",
        sentences / seconds,
        "sent/s",
        None,
        contexts=len(contexts),
        sentences=sentences,
        answers=answers,
        seconds=round(seconds, 3),
    )


def embedding_strings(count: int) -> list[str]:
    rows = [json.loads(line) for line in SQUAD.read_text(encoding="utf-8").splitlines()]
    texts = [text for row in rows for qa in row["qas"] for text in [qa["question"], *qa["answers"]]]
    unique = list(dict.fromkeys(texts))
    return [unique[i % len(unique)] + ("" if i < len(unique) else f" ({i})") for i in range(count)]


def bench_embedding(count: int) -> BenchResult:
    from cq2a.language.embeddings import load_embedder

    embedder = load_embedder("all-MiniLM-L6-v2")
    texts = embedding_strings(count)
    embedder.encode(texts[:32])  # warm-up
    started = time.perf_counter()
    embedder.encode(texts)
    seconds = time.perf_counter() - started
    return result(
        "embedding_strings_per_s",
        count / seconds,
        "str/s",
        None,
        model=embedder.name,
        strings=count,
        seconds=round(seconds, 3),
    )


# ---- driver ----


class Plan(BaseModel):
    """Sizes of one benchmark pass."""

    contexts: int
    latency_s: float
    sut_questions: int
    sut_batch: int
    sut_new_tokens: int
    import_repeats: int
    extraction_contexts: int
    embedding_strings: int


QUICK = Plan(
    contexts=4,
    latency_s=0.2,
    sut_questions=8,
    sut_batch=8,
    sut_new_tokens=16,
    import_repeats=2,
    extraction_contexts=20,
    embedding_strings=512,
)
FULL = Plan(
    contexts=12,
    latency_s=0.5,
    sut_questions=32,
    sut_batch=16,
    sut_new_tokens=32,
    import_repeats=5,
    extraction_contexts=93,
    embedding_strings=2000,
)


def run_benchmarks(plan: Plan, on_result: Callable[[BenchResult], None]) -> list[BenchResult]:
    """Every benchmark in this process; scripted runs first (they also load spaCy and MiniLM)."""
    results: list[BenchResult] = []

    def keep(*found: BenchResult) -> None:
        for item in found:
            results.append(item)
            on_result(item)

    with tempfile.TemporaryDirectory(prefix="cq2a-bench-") as tmp, ScriptedLLMServer() as server:
        bench_script().install(server.rules)
        work = Path(tmp)
        keep(*bench_tokens(server, work, plan.contexts))
        keep(bench_orchestration(server, work, plan.contexts, plan.latency_s))
    keep(bench_import(plan.import_repeats))
    keep(bench_extraction(plan.extraction_contexts))
    keep(bench_embedding(plan.embedding_strings))
    keep(bench_sut_batch(plan.sut_questions, plan.sut_batch, plan.sut_new_tokens))
    return results


def verdict(item: BenchResult) -> str:
    return "-" if item.passed is None else ("pass" if item.passed else "MISS")


def print_table(results: Sequence[BenchResult]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        for item in results:
            print(
                f"{item.name:32} {item.value!s:>10} {item.unit:9} {item.target:8} {verdict(item)}"
            )
        return
    table = Table(title="cq2a benchmarks")
    for column in ("benchmark", "value", "unit", "target", "result"):
        table.add_column(column, justify="right" if column == "value" else "left")
    for item in results:
        table.add_row(item.name, str(item.value), item.unit, item.target, verdict(item))
    Console().print(table)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Small sizes (about a minute).")
    parser.add_argument("--json", type=Path, default=None, help="Write every result here.")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    results = run_benchmarks(plan, lambda item: print(f"done: {item.name}", file=sys.stderr))
    print_table(results)
    if args.json:
        payload = {
            "plan": plan.model_dump(),
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
            "quick": args.quick,
            "seconds": round(time.perf_counter() - started, 1),
            "results": [item.model_dump() for item in results],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
