"""A durable run: input file in, run directory out.

The engine (``cq2a.app.engine``) runs each context as a thread under a SQLite checkpointer and
keeps what each finished context produced in the run store, so ``resume=True`` continues an
interrupted run without redoing finished contexts. A ``Backend`` (``cq2a.app.backend``) puts the
checkpointer and the store in PostgreSQL instead, and may hand the contexts to Ray. Results are
appended per context as each one finishes (``partial/``) and the final files are rewritten from
the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cq2a.adapters.llm.local_server import local_server_counters, prompt_cache_use
from cq2a.adapters.llm.usage import Usage
from cq2a.app.backend import Backend, open_engine
from cq2a.app.checkpoint import check_resumable
from cq2a.app.engine import Engine, EventHandler
from cq2a.app.estimate import Rates, estimate_contexts, estimate_error
from cq2a.app.outcome import Outcome
from cq2a.app.results import ResultFiles, run_record
from cq2a.app.rundir import (
    RunDirError,
    RunPlan,
    check_retryable,
    plan_run,
    prepare_run_dir,
    recorded_spend,
    write_corpus,
)
from cq2a.app.store import RUN_ID
from cq2a.language.parsing.base import ParserUnavailable
from cq2a.models.records import Context
from cq2a.runtime.services import release_services, services_for
from cq2a.settings import Settings

#: Contexts the estimate printed before a run is computed on (then scaled to the input).
ESTIMATE_SAMPLE = 10


class RunSummary(BaseModel):
    run_dir: str
    status: str
    message: str = ""
    counts: dict[str, Any]
    usage: Usage
    seconds: float


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
    backend: Backend | None = None,
) -> RunSummary:
    """Run CQ2A over an input file; every outcome, including a stop, leaves a complete run dir.

    Steps: read the input, open the run directory, run the engine under its checkpointer
    and store, write the results from the store, one context at a time.
    """
    plan = plan_run(input_path, Path(run_dir), settings, limit)
    backend = backend or Backend()
    open_run_dir(plan, backend, resume=resume, retry_errors=retry_errors, force=force)
    estimate = None if resume or retry_errors else run_estimate(plan.contexts, plan.settings)
    announce(plan, estimate, on_event)
    with open_engine(plan, backend, fresh=not resume) as engine:
        if resume:
            check_resumable(engine.store, plan)
        engine.store.set_meta(RUN_ID, plan.run_id)
        # a resumed run's cap covers what it spent before
        spent = most_spent(engine.spent(), recorded_spend(plan.run_dir)) if resume else None
        servers_before = local_server_counters()
        outcome = engine.run(spent_before=spent, on_event=on_event)
        metered = metered_spend(plan)  # read before the release drops the meter
        release_services(plan.run_id)
        return write_run(
            plan, outcome, engine, estimate, backend, metered, prompt_cache_use(servers_before)
        )


def open_run_dir(
    plan: RunPlan, backend: Backend, *, resume: bool, retry_errors: bool, force: bool
) -> None:
    """Check that this run may use its directory and prepare it; no earlier run's services
    stay open."""
    if retry_errors and resume:
        raise RunDirError(
            "--resume continues a stopped run and --retry-errors re-runs a finished one: pass one"
        )
    if retry_errors:
        check_retryable(plan.run_dir, plan.run_id, plan.settings)
    prepare_run_dir(
        plan.run_dir,
        plan.run_id,
        resume=resume,
        force=force,
        store_elsewhere=backend.store is not None,
    )
    write_corpus(plan)
    release_services()


def run_estimate(contexts: list[Context], settings: Settings) -> dict[str, Any] | None:
    """``cq2a estimate``'s figures with the default rates, on a sample of the contexts; None
    when the parser cannot load (the preflight then says why)."""
    try:
        return estimate_contexts(contexts, settings, Rates(), sample=ESTIMATE_SAMPLE)
    except ParserUnavailable:
        return None


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


def write_run(
    plan: RunPlan,
    outcome: Outcome,
    engine: Engine,
    estimate: dict[str, Any] | None,
    backend: Backend | None = None,
    metered: Usage | None = None,
    local_servers: dict[str, dict[str, Any]] | None = None,
) -> RunSummary:
    """Write the results and run.json from what the engine's store holds, what the spending
    meter counted (``metered``) and what the local llama.cpp servers processed and found in
    their prompt caches (``local_servers``, ``prompt_cache_use``); the run's summary."""
    results = ResultFiles(plan.run_dir)
    values = engine.values()
    finished = len(values["finished"])
    counts = results.write(
        engine.parts(), values["verdicts"], plan.contexts, plan.skipped, finished
    )
    if outcome.status == "finished" and unsettled(counts):
        outcome = Outcome(
            status="incomplete",
            message=f"{unsettled(counts)} slots, relation extractions or verdicts were left "
            "unsettled by failed LLM calls",
        )
    outcome.message = with_next_step(outcome, plan.input_path, plan.run_dir)
    usage = most_spent(values.get("usage") or Usage(), metered)
    record = run_record(plan, outcome, counts, usage, values)
    if backend is not None:
        record["backend"] = backend.public()
    if estimate is not None:
        record["estimate"] = estimate_error(estimate, usage.total_tokens)
    if local_servers:
        record["local_servers"] = local_servers
    results.write_record(record)
    return RunSummary(
        run_dir=str(plan.run_dir),
        status=outcome.status,
        message=outcome.message,
        counts=counts,
        usage=usage,
        seconds=record["seconds"],
    )


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
