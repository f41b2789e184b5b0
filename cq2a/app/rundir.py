"""The run directory: which run it holds (the run id, a fingerprint of the input and the
settings), whether this run may use it, and the versions a run records."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from langchain_core.runnables import RunnableConfig

from cq2a.adapters.llm.local_server import server_version
from cq2a.adapters.llm.usage import Usage
from cq2a.app import outputs as out
from cq2a.app.inputs import InputError, read_contexts
from cq2a.models.records import Context, Skip
from cq2a.settings import Settings

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

#: Settings that change how a run is carried out but not its results: a run may be resumed with
#: other values (a restarted server on a new port, a raised spending cap, lower concurrency).
RUNTIME_SETTINGS = (
    "concurrency",
    "requests_per_second",
    "llm_retries",
    "breaker_failures",
    "breaker_window_s",
    "breaker_cool_down_s",
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
#: The most steps one thread of a run may take: a context's loop, the head, evaluate.
RECURSION_LIMIT = 220
#: The thread of the run's head (probe, trust_judge); a context's thread is named by its id.
HEAD_THREAD = "/head"


class RunDirError(RuntimeError):
    """The output directory cannot be used for this run; the message says what to do."""


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
    #: The passages a retrieval SUT searches beyond the run's own (``write_corpus``).
    corpus: tuple[Context, ...] = ()

    def thread_config(self, part: str) -> RunnableConfig:
        """The LangGraph config of one of the run's threads (``f"{run_id}:{context id}"`` or
        the head's): the run's id keys its services (one spending meter for all threads)."""
        return {
            "configurable": {"thread_id": f"{self.run_id}:{part}", "run_id": self.run_id},
            "recursion_limit": RECURSION_LIMIT,
        }


def plan_run(
    input_path: str | Path, run_dir: Path, settings: Settings, limit: int | None
) -> RunPlan:
    """Read the input (its first ``limit`` usable contexts); the LLM cache defaults to the run
    directory's."""
    started = time.time()
    contexts, skipped = read_contexts(
        input_path, settings.max_context_chars, settings.passage_chars, settings.input_languages()
    )
    corpus: tuple[Context, ...] = ()
    if limit is not None:
        if limit < len(contexts) and settings.sut.question_alone and not settings.sut.corpus:
            corpus = tuple(contexts)
            settings = settings.with_overrides(**{"sut.corpus": str(run_dir / out.CORPUS)})
        contexts = contexts[:limit]
    if not contexts:
        reasons = Counter(s.reason for s in skipped)
        detail = f": {len(skipped)} lines skipped ({dict(reasons)})" if skipped else ""
        raise InputError(f"no usable context in {input_path}{detail}")
    if settings.cache_path is None:
        settings = settings.model_copy(update={"cache_path": str(run_dir / out.LLM_CACHE)})
    run_id = fingerprint(contexts, settings)
    return RunPlan(input_path, run_dir, contexts, skipped, settings, run_id, started, corpus)


def write_corpus(plan: RunPlan) -> None:
    """A run limited to its first contexts whose SUT gets the question alone still searches the
    whole input: its passages go to the run's ``corpus.jsonl``, the ``sut.corpus`` the
    retrieval SUT and the corpus-wide re-ask read beside the run's own contexts."""
    if not plan.corpus:
        return
    lines = (json.dumps({"id": c.id, "context": c.context}) for c in plan.corpus)
    (plan.run_dir / out.CORPUS).write_text("\n".join(lines) + "\n", encoding="utf-8")


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


def prepare_run_dir(
    run_dir: Path, run_id: str, *, resume: bool, force: bool, store_elsewhere: bool = False
) -> None:
    """Refuse to mix two runs in one directory; start a fresh checkpoint unless resuming.
    ``store_elsewhere``: the store is in PostgreSQL, which says itself what it holds."""
    run_file = run_dir / out.RUN
    if run_file.exists() and not force:
        previous = out.read_json(run_file).get("run_id")
        if previous != run_id:
            raise RunDirError(
                f"{run_dir} holds a different run ({previous}); choose another --out, "
                "or pass --force to overwrite it"
            )
    if resume and not store_elsewhere and not (run_dir / out.STORE).exists():
        raise RunDirError(f"nothing to resume in {run_dir}: no {out.STORE}")
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
        for name in (out.CHECKPOINTS, out.STORE, out.TRACE):
            (run_dir / name).unlink(missing_ok=True)
        shutil.rmtree(run_dir / out.PARTIAL, ignore_errors=True)


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


def recorded_spend(run_dir: Path) -> Usage | None:
    """The usage an earlier part of the run wrote to run.json before it stopped."""
    try:
        record = json.loads((run_dir / out.RUN).read_text(encoding="utf-8"))
        return Usage.model_validate(record.get("usage") or {})
    except (OSError, ValueError):
        return None


def package_versions() -> dict[str, str]:
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    versions["llama-server"] = server_version() or "not installed"
    return versions
