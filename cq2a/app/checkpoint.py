"""The run's checkpoint: the graph compiled with a SQLite checkpointer in the run directory, the
record types it may deserialise, and the run's state read back from it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import StateSnapshot

from cq2a.app import outputs as out
from cq2a.app.rundir import RunDirError, RunPlan
from cq2a.graph.graph import build_graph

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
def open_checkpointed_graph(run_dir: Path) -> Iterator[Any]:
    """The compiled graph with a SQLite checkpointer in the run directory."""
    with closing(sqlite3.connect(run_dir / out.CHECKPOINTS, check_same_thread=False)) as db:
        yield build_graph(checkpointer=SqliteSaver(db, serde=checkpoint_serializer()))


def check_resumable(graph: Any, plan: RunPlan) -> None:
    if not graph.get_state(plan.config).values:
        raise RunDirError(
            f"nothing to resume in {plan.run_dir} for this input and these settings: the "
            "interrupted run used others; rerun it with the same input and settings, "
            "or start afresh without --resume"
        )


def read_state(graph: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The run's state as LangGraph's snapshot of the thread gives it, with the work of the
    contexts still in flight when the run stopped.

    All contexts run in one step of the parent graph. ``get_state`` reads the thread live: its
    values already hold what every finished context wrote (the step's saved writes). A context
    still in flight has its work only in its subgraph's checkpoint, which ``subgraphs=True``
    returns as its task's state; the keys it shares with the run are folded in through the
    run's own channels, with the reducers LangGraph applies when a context ends."""
    snapshot = graph.get_state(config, subgraphs=True)
    values = dict(snapshot.values)
    in_flight = [
        task.state.values
        for task in snapshot.tasks
        if task.result is None and isinstance(task.state, StateSnapshot)
    ]
    for key, spec in graph.channels.items():
        updates = [branch[key] for branch in in_flight if key in branch]
        if not updates:
            continue
        channel = spec.copy()
        channel.update([values[key], *updates] if key in values else updates)
        values[key] = channel.get()
    return values
