"""The run's checkpoint: a SQLite checkpointer in the run directory for the threads in flight,
the record types it may deserialise, and whether a run may be resumed."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from cq2a.app import outputs as out
from cq2a.app.rundir import RunDirError, RunPlan
from cq2a.app.store import RUN_ID, RunStore

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


def checkpoint_serializer() -> JsonPlusSerializer:
    return JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)


@contextmanager
def open_checkpointer(run_dir: Path) -> Iterator[SqliteSaver]:
    """The SQLite checkpointer in the run directory, for the threads of the run in flight."""
    with closing(sqlite3.connect(run_dir / out.CHECKPOINTS, check_same_thread=False)) as db:
        yield SqliteSaver(db, serde=checkpoint_serializer())


def saved_threads(saver: SqliteSaver) -> set[str]:
    """The threads the checkpointer holds: the run's head, and the contexts in flight."""
    with saver.cursor(transaction=False) as cursor:
        cursor.execute("SELECT DISTINCT thread_id FROM checkpoints")
        return {row[0] for row in cursor.fetchall()}


def check_resumable(store: RunStore, plan: RunPlan) -> None:
    if store.text(RUN_ID) != plan.run_id:
        raise RunDirError(
            f"nothing to resume in {plan.run_dir} for this input and these settings: the "
            "interrupted run used others; rerun it with the same input and settings, "
            "or start afresh without --resume"
        )
