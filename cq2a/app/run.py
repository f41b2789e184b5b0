"""A durable run: input file in, run directory out.

The graph runs under a SQLite checkpointer in the run directory, so ``resume=True`` continues an
interrupted run without redoing finished contexts. Results are appended per context as each one
finishes (``partial/``) and the final files are rewritten from the final state.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel

from cq2a.adapters.llm.breaker import LLMUnavailable
from cq2a.adapters.llm.usage import BudgetExceeded, Usage, add_usage
from cq2a.app import outputs as out
from cq2a.app.inputs import InputError, read_contexts
from cq2a.app.preflight import JudgeProbeFailed, PreflightFailed
from cq2a.app.suite import suite_counts
from cq2a.graph.graph import PER_CONTEXT
from cq2a.graph.state import merge_by_id, union
from cq2a.models.candidates import test_cases_of
from cq2a.models.records import Answer, Candidate, Context, Skip, Verdict
from cq2a.runtime.services import release_services, services_for
from cq2a.settings import Settings

EventHandler = Callable[[dict[str, Any]], None]

VERSIONED_PACKAGES = (
    "cq2a",
    "langgraph",
    "langchain-openai",
    "langchain-core",
    "openai",
    "sentence-transformers",
    "transformers",
    "torch",
    "spacy",
    "stanza",
)


class RunDirError(RuntimeError):
    """The output directory cannot be used for this run; the message says what to do."""


class RunSummary(BaseModel):
    run_dir: str
    status: str
    message: str = ""
    counts: dict[str, Any]
    usage: Usage
    seconds: float


#: Settings that change how a run is carried out but not its results: a run may be resumed with
#: other values (a restarted server on a new port, a raised spending cap, lower concurrency).
RUNTIME_SETTINGS = (
    "concurrency",
    "requests_per_second",
    "llm_retries",
    "breaker_failures",
    "breaker_window_s",
    "probe_judge",
    "preflight",
    "max_tokens",
    "max_cost",
    "price_per_1k_prompt",
    "price_per_1k_completion",
    "cache_path",
    "model_dir",
)
RUNTIME_LLM_FIELDS = ("base_url", "timeout_s", "supports_n")
RUNTIME_SUT_FIELDS = ("base_url", "batch_size", "device", "timeout_s")


def fingerprint(contexts: list[Context], settings: Settings) -> str:
    """Identity of a run: its contexts and the settings that shape its results (no secrets)."""
    public = settings.public_dump()
    for name in RUNTIME_SETTINGS:
        public.pop(name, None)
    for role in ("generator", "reasker", "judge"):
        for name in RUNTIME_LLM_FIELDS:
            public[role].pop(name, None)
    for name in RUNTIME_SUT_FIELDS:
        public["sut"].pop(name, None)
    payload = {"contexts": [c.model_dump(mode="json") for c in contexts], "settings": public}
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return digest[:16]


def prepare_run_dir(run_dir: Path, run_id: str, *, resume: bool, force: bool) -> None:
    """Refuse to mix two runs in one directory; start a fresh checkpoint unless resuming."""
    run_file = run_dir / out.RUN
    if run_file.exists() and not force:
        previous = out.read_json(run_file).get("run_id")
        if previous != run_id:
            raise RunDirError(
                f"{run_dir} holds a different run ({previous}); choose another --out, "
                "or pass --force to overwrite it"
            )
    if resume and not (run_dir / out.CHECKPOINTS).exists():
        raise RunDirError(f"nothing to resume in {run_dir}: no {out.CHECKPOINTS}")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / ".write-test").touch()
        (run_dir / ".write-test").unlink()
    except OSError as error:
        raise RunDirError(
            f"cannot write the run directory {run_dir}: {error.strerror or error}; "
            "choose another --out"
        ) from error
    if not resume:
        for name in (out.CHECKPOINTS, out.TRACE):
            (run_dir / name).unlink(missing_ok=True)
        shutil.rmtree(run_dir / out.PARTIAL, ignore_errors=True)


#: The record types a checkpoint holds; only these are deserialised on resume.
CHECKPOINT_TYPES = [
    ("cq2a.models.records", name)
    for name in (
        "Context",
        "Answer",
        "AnswerKind",
        "Triple",
        "Candidate",
        "Attempt",
        "CheckResult",
        "RejectReason",
        "Skip",
        "Verdict",
        "JudgeVerdict",
        "Evidence",
        "ContextPlan",
    )
] + [
    ("cq2a.adapters.llm.usage", "Usage"),
    ("cq2a.oracle.judge", "ProbeResult"),
    ("cq2a.coverage.diversity", "SuiteFigures"),
    ("cq2a.coverage.diversity", "Diversity"),
    ("cq2a.coverage.diversity", "ContextDiversity"),
    ("cq2a.models.mix", "MixReport"),
    ("cq2a.models.mix", "KindShare"),
]


def checkpoint_serializer() -> Any:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    return JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)


def package_versions() -> dict[str, str]:
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    from cq2a.adapters.llm.local_server import server_version

    versions["llama-server"] = server_version() or "not installed"
    return versions


#: Why a run stops early, saving what it has: a spending cap, an LLM outage, a missing
#: component, an untrustworthy judge. ``--resume`` continues it once the cause is gone.
STOP_ERRORS: tuple[type[BaseException], ...] = (
    BudgetExceeded,
    LLMUnavailable,
    PreflightFailed,
    JudgeProbeFailed,
    KeyboardInterrupt,
)


class Outcome(BaseModel):
    """How the graph's stream ended."""

    status: str = "finished"
    message: str = ""
    error: dict[str, str] | None = None


@dataclass(frozen=True)
class RunPlan:
    """What a run is asked to do: its contexts, its settings (with the cache path it uses) and
    its identity, the fingerprint of both."""

    input_path: str | Path
    run_dir: Path
    contexts: list[Context]
    skipped: list[Skip]
    settings: Settings
    run_id: str
    started: float

    @property
    def config(self) -> dict[str, Any]:
        """The LangGraph config: the run's thread (its checkpoints) and its limits."""
        return {
            "configurable": {"thread_id": self.run_id},
            "max_concurrency": max(self.settings.concurrency, 2),
            "recursion_limit": 200 + 20 * len(self.contexts),
        }


def run_pipeline(
    input_path: str | Path,
    run_dir: str | Path,
    settings: Settings,
    *,
    limit: int | None = None,
    resume: bool = False,
    retry_errors: bool = False,
    force: bool = False,
    on_event: EventHandler | None = None,
) -> RunSummary:
    """Run CQ2A over an input file; every outcome, including a stop, leaves a complete run dir.

    Steps: read the input, open the run directory, stream the graph under its checkpointer,
    write the results from the checkpointed state.
    """
    plan = plan_run(input_path, Path(run_dir), settings, limit)
    open_run_dir(plan, resume=resume, retry_errors=retry_errors, force=force)
    estimate = None if resume or retry_errors else run_estimate(plan.contexts, plan.settings)
    announce(plan, estimate, on_event)
    with open_checkpointed_graph(plan.run_dir) as graph:
        if resume:
            check_resumable(graph, plan)
        outcome = stream_run(graph, plan, resume=resume, on_event=on_event)
        values = checkpointed_values(graph, plan.config)
    release_services(plan.run_id)
    return write_run(plan, outcome, values, estimate)


def plan_run(
    input_path: str | Path, run_dir: Path, settings: Settings, limit: int | None
) -> RunPlan:
    """Read the input (its first ``limit`` usable contexts); the LLM cache defaults to the run
    directory's."""
    started = time.time()
    contexts, skipped = read_contexts(input_path, settings.max_context_chars)
    if limit is not None:
        contexts = contexts[:limit]
    if not contexts:
        reasons = Counter(s.reason for s in skipped)
        detail = f": {len(skipped)} lines skipped ({dict(reasons)})" if skipped else ""
        raise InputError(f"no usable context in {input_path}{detail}")
    if settings.cache_path is None:
        settings = settings.model_copy(update={"cache_path": str(run_dir / out.LLM_CACHE)})
    run_id = fingerprint(contexts, settings)
    return RunPlan(input_path, run_dir, contexts, skipped, settings, run_id, started)


def open_run_dir(plan: RunPlan, *, resume: bool, retry_errors: bool, force: bool) -> None:
    """Check that this run may use its directory and prepare it; no earlier run's services
    stay open."""
    if retry_errors and resume:
        raise RunDirError(
            "--resume continues a stopped run and --retry-errors re-runs a finished one: pass one"
        )
    if retry_errors:
        check_retryable(plan.run_dir, plan.run_id, plan.settings)
    prepare_run_dir(plan.run_dir, plan.run_id, resume=resume, force=force)
    release_services()


def announce(plan: RunPlan, estimate: dict[str, Any] | None, on_event: EventHandler | None) -> None:
    """Tell the caller what the run is about to do, and the estimate of what it will spend."""
    if on_event is None:
        return
    on_event({"event": "run_started", "contexts": len(plan.contexts), "skipped": len(plan.skipped)})
    if estimate is not None:
        on_event({"event": "run_estimate", **estimate})


def most_spent(*usages: Usage | None) -> Usage:
    """Field by field, the most any account says was spent. A node that a stop interrupts
    (the spending cap, an outage) checkpoints none of the requests it already made; the
    spending meter counted them."""
    found = [u for u in usages if u is not None]
    return Usage(**{name: max(getattr(u, name) for u in found) for name in Usage.model_fields})


def metered_spend(plan: RunPlan) -> Usage | None:
    """What this process's spending meter counted for the run (None: no LLM client was
    built, or the run already ended and released it)."""
    runtime = services_for(plan.settings, plan.run_id).__dict__.get("llm")
    return runtime.meter.total if runtime is not None else None


def recorded_spend(run_dir: Path) -> Usage | None:
    """The usage an earlier part of the run wrote to run.json before it stopped."""
    try:
        record = json.loads((run_dir / out.RUN).read_text(encoding="utf-8"))
        return Usage.model_validate(record.get("usage") or {})
    except (OSError, ValueError):
        return None


def check_resumable(graph: Any, plan: RunPlan) -> None:
    if not graph.get_state(plan.config).values:
        raise RunDirError(
            f"nothing to resume in {plan.run_dir} for this input and these settings: the "
            "interrupted run used others; rerun it with the same input and settings, "
            "or start afresh without --resume"
        )


def write_run(
    plan: RunPlan, outcome: Outcome, values: dict[str, Any], estimate: dict[str, Any] | None
) -> RunSummary:
    """Write the results and run.json from the checkpointed state; the run's summary."""
    counts = write_results(plan.run_dir, values, plan.contexts, plan.skipped)
    if outcome.status == "finished" and unsettled(counts):
        outcome = Outcome(
            status="incomplete",
            message=f"{unsettled(counts)} slots, relation extractions or verdicts were left "
            "unsettled by failed LLM calls",
        )
    outcome.message = with_next_step(outcome, plan.input_path, plan.run_dir)
    usage = most_spent(values.get("usage") or Usage(), metered_spend(plan))
    record = run_record(plan, outcome, counts, usage, values)
    if estimate is not None:
        from cq2a.app.estimate import estimate_error

        record["estimate"] = estimate_error(estimate, usage.total_tokens)
    record["repaired"] = [{"id": c.id, "note": c.note} for c in plan.contexts if c.note]
    out.write_json(plan.run_dir / out.RUN, record)
    return RunSummary(
        run_dir=str(plan.run_dir),
        status=outcome.status,
        message=outcome.message,
        counts=counts,
        usage=usage,
        seconds=record["seconds"],
    )


#: Contexts the estimate printed before a run is computed on (then scaled to the input).
ESTIMATE_SAMPLE = 10


def run_estimate(contexts: list[Context], settings: Settings) -> dict[str, Any] | None:
    """``cq2a estimate``'s figures with the default rates, on a sample of the contexts; None
    when the parser cannot load (the preflight then says why)."""
    from cq2a.app.estimate import Rates, estimate_contexts
    from cq2a.language.parsing.base import ParserUnavailable

    try:
        return estimate_contexts(contexts, settings, Rates(), sample=ESTIMATE_SAMPLE)
    except ParserUnavailable:
        return None


@contextmanager
def open_checkpointed_graph(run_dir: Path) -> Iterator[Any]:
    """The compiled graph with a SQLite checkpointer in the run directory."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from cq2a.graph import build_graph

    with closing(sqlite3.connect(run_dir / out.CHECKPOINTS, check_same_thread=False)) as db:
        yield build_graph(checkpointer=SqliteSaver(db, serde=checkpoint_serializer()))


def stream_run(
    graph: Any, plan: RunPlan, *, resume: bool, on_event: EventHandler | None
) -> Outcome:
    """Stream the graph, writing trace events and finished contexts as they come.

    Nothing raised here loses work: a stop or any other error is returned as the outcome, and
    the caller writes every file from what the checkpointer holds."""
    config = plan.config
    with (plan.run_dir / out.TRACE).open("a", encoding="utf-8") as trace_file:
        tracer = structlog.wrap_logger(
            structlog.WriteLogger(trace_file),
            processors=[structlog.processors.JSONRenderer(default=str)],
        )
        try:
            if resume:  # a resumed run's cap covers what it spent before
                spent = checkpointed_values(graph, config).get("usage") or Usage()
                spent = most_spent(spent, recorded_spend(plan.run_dir))
                services_for(plan.settings, plan.run_id).llm.meter.record(spent)
            for namespace, mode, chunk in graph.stream(
                None if resume else {"contexts": plan.contexts},
                config,
                context=plan.settings,
                stream_mode=["custom", "updates"],
                subgraphs=True,
            ):
                if mode == "custom":
                    tracer.msg(**chunk)
                    if on_event is not None:
                        on_event(chunk)
                elif not namespace and isinstance(chunk, dict) and PER_CONTEXT in chunk:
                    save_partial(plan.run_dir, chunk[PER_CONTEXT] or {})
        except STOP_ERRORS as error:
            reason = str(error) or "interrupted"
            return Outcome(status="stopped", message=reason)
        except Exception as error:
            return Outcome(
                status="failed",
                message=f"{type(error).__name__}: {error}",
                error={
                    "type": type(error).__name__,
                    "message": str(error),
                    "traceback": traceback.format_exc(),
                },
            )
    return Outcome()


def checkpointed_values(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The run's state, with the work of contexts still in flight when it stopped.

    All contexts run in one step of the parent graph, so until every one has finished the
    parent's values hold none of them: finished contexts are in the step's saved writes, and
    unfinished ones in their subgraph's checkpoint."""
    snapshot = graph.get_state(config, subgraphs=True)
    values = dict(snapshot.values)
    for task in snapshot.tasks:
        parts = []
        if isinstance(task.result, dict):
            parts.append(task.result)
        elif task.state is not None and hasattr(task.state, "values"):
            parts.append(task.state.values)
        for part in parts:
            for key in ("answers", "candidates", "skipped"):
                values[key] = merge_by_id(values.get(key), part.get(key))
            values["finished"] = union(values.get("finished"), part.get("finished"))
            values["usage"] = add_usage(values.get("usage"), part.get("usage"))
    return values


def check_retryable(run_dir: Path, run_id: str, settings: Settings) -> None:
    """``--retry-errors`` runs a finished run again with its LLM cache: every call that
    succeeded replays from the cache, and only the failed ones are sent again."""
    run_file = run_dir / out.RUN
    if not run_file.exists():
        raise RunDirError(f"nothing to retry in {run_dir}: no {out.RUN}")
    previous = out.read_json(run_file)
    if previous.get("run_id") != run_id:
        raise RunDirError(
            f"{run_dir} holds a run of another input or other settings; --retry-errors needs the "
            "same ones"
        )
    if previous.get("status") in ("stopped", "failed"):
        raise RunDirError(f"the run in {run_dir} did not finish: continue it with --resume")
    if settings.cache_path == "off":
        raise RunDirError("--retry-errors replays the run's LLM cache: do not turn it off")


def unsettled(counts: dict[str, Any]) -> int:
    """Slots and verdicts a finished run could not settle: LLM errors, unjudged verdicts."""
    return int(counts["pending"] + counts["unjudged"] + counts["relations_failed"])


def with_next_step(outcome: Outcome, input_path: str | Path, run_dir: Path) -> str:
    """The outcome's message with the command that carries on from it."""
    command = f"cq2a run {input_path} --out {run_dir}"
    outcome.message = outcome.message.rstrip(".")
    if outcome.status == "stopped":
        return (
            f"{outcome.message}. Everything finished so far is saved; once the cause is fixed, "
            f"continue with: {command} --resume (and the same options)"
        )
    if outcome.status == "failed":
        return (
            f"{outcome.message}. Everything finished so far is saved and the traceback is in "
            f"run.json; after a fix, continue with: {command} --resume (and the same options)"
        )
    if outcome.status == "incomplete":
        return f"{outcome.message}; send them again with: {command} --retry-errors"
    return outcome.message


def run_record(
    plan: RunPlan, outcome: Outcome, counts: dict[str, Any], usage: Usage, values: dict[str, Any]
) -> dict[str, Any]:
    """run.json: what ran, with what, how it ended, and what it produced."""
    settings, finished = plan.settings, time.time()
    return {
        "run_id": plan.run_id,
        "status": outcome.status,
        "message": outcome.message,
        "error": outcome.error,
        "input": str(plan.input_path),
        "started": datetime.fromtimestamp(plan.started, UTC).isoformat(),
        "finished": datetime.fromtimestamp(finished, UTC).isoformat(),
        "seconds": round(finished - plan.started, 2),
        "seed": settings.seed,
        "models": {
            "generator": settings.generator.model,
            "reasker": settings.reasker.model,
            "judge": settings.judge.model,
            "sut": f"{settings.sut.kind}:{settings.sut.model}",
            "embedding": settings.embedding_model,
            "parser": settings.parser,
        },
        "versions": package_versions(),
        "settings": settings.public_dump(),
        "counts": counts,
        "usage": usage.model_dump() | {"total_tokens": usage.total_tokens},
        "judge_probe": _dump(values.get("judge_probe")),
        # the accepted suite's diversity, sentence coverage and question mix (None: no evaluate)
        "figures": _dump(values.get("figures")),
        "skipped": [s.model_dump() for s in plan.skipped],
    }


def _dump(value: Any) -> Any:
    return value.model_dump() if isinstance(value, BaseModel) else value


def save_partial(run_dir: Path, update: dict[str, Any]) -> None:
    """Append one finished context's candidates, so a crash loses no finished work."""
    candidates: list[Candidate] = update.get("candidates") or []
    partial = run_dir / out.PARTIAL
    out.append_jsonl(partial / out.REJECTED, [c for c in candidates if c.status != "accepted"])
    out.append_jsonl(partial / "accepted.jsonl", [c for c in candidates if c.status == "accepted"])


def bug_record(verdict: Verdict, case_by_id: dict[str, Any]) -> dict[str, Any]:
    case = case_by_id[verdict.test_id]
    return verdict.model_dump(mode="json") | {
        "sentence": case.sentence,
        "explanation": case.explanation,
        "context": case.context,
        "votes": case.votes,
    }


def write_results(
    run_dir: Path, values: dict[str, Any], contexts: list[Context], skipped: list[Skip]
) -> dict[str, Any]:
    """Write the final files from the graph state and return the counts for run.json."""
    candidates: list[Candidate] = values.get("candidates") or []
    answers: list[Answer] = values.get("answers") or []
    verdicts: list[Verdict] = values.get("verdicts") or []
    graph_skips: list[Skip] = values.get("skipped") or []
    cases = test_cases_of(candidates, {c.id: c for c in contexts})
    case_by_id = {case.id: case for case in cases}
    rejected = [c for c in candidates if c.status == "rejected"]
    bugs = [bug_record(v, case_by_id) for v in verdicts if v.bug]
    out.write_jsonl(run_dir / out.ANSWERS, answers)
    out.write_jsonl(run_dir / out.TEST_CASES, cases)
    out.write_jsonl(run_dir / out.REJECTED, rejected)
    out.write_jsonl(run_dir / out.PENDING, [c for c in candidates if c.status == "pending"])
    out.write_jsonl(run_dir / out.CANDIDATES, candidates)
    out.write_jsonl(run_dir / out.VERDICTS, verdicts)
    out.write_jsonl(run_dir / out.BUGS, bugs)
    out.write_jsonl(run_dir / out.SKIPPED, [*skipped, *graph_skips])
    reasons = Counter(reason.value for c in rejected for reason in c.reasons)
    return {
        "contexts": len(contexts),
        "contexts_finished": len(values.get("finished") or []),
        "skipped": len(skipped) + len(graph_skips),
        "answers": dict(Counter(a.kind.value for a in answers)),
        "candidates": len(candidates),
        "questions_generated": sum(a.generated for c in candidates for a in c.attempts),
        "accepted": len(cases),
        "rejected": len(rejected),
        "pending": sum(c.status == "pending" for c in candidates),
        "relations_failed": sum(s.reason == "llm_error" for s in graph_skips),
        "llm_errors": sum(c.error is not None for c in candidates)
        + sum(s.reason == "llm_error" for s in graph_skips),
        "rejection_reasons": dict(reasons),
        "accepted_by_kind": dict(Counter(case.kind.value for case in cases)),
        "accepted_by_question_kind": dict(Counter(c.kind.question_kind for c in cases)),
        **suite_counts(cases, verdicts),
    }
