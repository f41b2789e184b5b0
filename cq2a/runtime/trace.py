"""Per-context trace events, sent to the graph's custom stream.

Only the nodes emit them (``cq2a.nodes._events``), from the records the domain functions
return. Every event is a ``TraceEvent``: ``event`` names its type, the other fields are set as
the type needs them. ``cq2a run`` writes every event to ``trace.jsonl`` through structlog and
``--follow`` prints them live; ``graph.stream(..., stream_mode="custom", subgraphs=True)``
yields them to Python callers. Outside a graph run, events go to structlog directly.

| event | fields |
|---|---|
| ``judge_probe`` | passed, detail |
| ``stage_started`` | context_id, stage, round (generate) / counts (evaluate) |
| ``stage_finished`` | context_id, stage, counts (this round's work), usage, seconds |
| ``triple_dropped`` | context_id, triple, reason (a III-A2 filter) |
| ``relations_failed``, ``relations_malformed`` | context_id, error |
| ``sentence_skipped`` | context_id, sentence_index, tokens, reason |
| ``candidate_rejected`` | context_id, candidate_id, stage, reasons, final (no attempts left) |
| ``candidate_accepted`` | context_id, candidate_id, stage, majority, similarity, final |
| ``coverage_round`` | context_id, coverage (sentences tested so far), answers (ids given) |
| ``context_finished`` | context_id, counts (answers, accepted, rejected), coverage |

``usage`` is the stage's LLM traffic (requests, cached choices, tokens; 0 for a stage that asks
none). A candidate is rejected at ``generate`` when the model wrote it no question."""

from __future__ import annotations

import time
from typing import Any, Literal

import structlog
from pydantic import BaseModel, ConfigDict

log = structlog.get_logger("cq2a")

EventType = Literal[
    "judge_probe",
    "stage_started",
    "stage_finished",
    "triple_dropped",
    "relations_failed",
    "relations_malformed",
    "sentence_skipped",
    "candidate_rejected",
    "candidate_accepted",
    "coverage_round",
    "context_finished",
    # the Ray engine's driver: which actor worked a context or evaluated a chunk, a dead one
    "context_worked",
    "chunk_evaluated",
    "worker_replaced",
]


class TraceEvent(BaseModel):
    """One trace event; unknown fields are an error, so the schema above stays true."""

    model_config = ConfigDict(extra="forbid")

    event: EventType
    ts: float
    context_id: str | None = None
    stage: str | None = None
    round: int | None = None
    counts: dict[str, int] | None = None
    usage: dict[str, int] | None = None
    seconds: float | None = None
    candidate_id: str | None = None
    reasons: list[str] | None = None
    final: bool | None = None
    majority: str | None = None
    similarity: float | None = None
    triple: dict[str, str] | None = None
    reason: str | None = None
    error: str | None = None
    passed: bool | None = None
    detail: str | None = None
    sentence_index: int | None = None
    tokens: int | None = None
    coverage: float | None = None
    answers: list[str] | None = None
    #: A coverage round's kinds that take no more slots in the context, and why.
    cut_back: dict[str, str] | None = None
    worker: int | None = None
    chunk: int | None = None


def trace_event(event: EventType, **fields: Any) -> dict[str, Any]:
    """One typed event, stamped now, as the custom stream carries it."""
    return TraceEvent(event=event, ts=round(time.time(), 3), **fields).model_dump(exclude_none=True)


def emit(event: EventType, **fields: Any) -> dict[str, Any]:
    """Send one typed event to the custom stream (inside a graph run) or to the log."""
    record = trace_event(event, **fields)
    try:
        from langgraph.config import get_stream_writer

        get_stream_writer()(record)
    except (RuntimeError, ImportError, KeyError):
        log.debug(event, **fields)
    return record
