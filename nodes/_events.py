"""The trace events of the nodes (``cq2a.runtime.trace``): only nodes emit them, from the records
the
domain functions return."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cq2a.adapters.llm.usage import Usage, tally_usage
from cq2a.answers.plan import Extraction
from cq2a.models.records import Answer, Candidate
from cq2a.runtime.trace import emit


@dataclass
class StageReport:
    """What a stage's ``stage_finished`` event says: counts the node sets, the usage tallied."""

    counts: dict[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)


@contextmanager
def stage(name: str, context_id: str | None = None, **fields: Any) -> Iterator[StageReport]:
    """Time the block and tally the LLM usage of the calls made in it; when it ends without
    an error, emit ``stage_finished`` with the counts it set, that usage and the seconds."""
    started = time.perf_counter()
    report = StageReport()
    with tally_usage() as tally:
        yield report
    report.usage = tally.total
    emit(
        "stage_finished",
        context_id=context_id,
        stage=name,
        counts=report.counts,
        usage=report.usage.model_dump(),
        seconds=round(time.perf_counter() - started, 3),
        **fields,
    )


def emit_outcomes(context_id: str, stage: str, candidates: Sequence[Candidate]) -> None:
    """One event per candidate this stage accepted or rejected (``final``: it is settled); a
    candidate whose LLM call failed has no new outcome."""
    for candidate in candidates:
        attempt = candidate.current if candidate.attempts else None
        accepted = candidate.status == "accepted"
        if candidate.error is not None or attempt is None or not (accepted or attempt.rejected):
            continue
        emit(
            "candidate_accepted" if accepted else "candidate_rejected",
            context_id=context_id,
            candidate_id=candidate.id,
            stage=stage,
            majority=attempt.majority_answer,
            similarity=attempt.similarity,
            reasons=[r.value for r in attempt.reasons],
            final=candidate.status != "pending",
        )


def emit_context_finished(
    context_id: str,
    answers: Sequence[Answer],
    candidates: Sequence[Candidate],
    coverage: float | None = None,
) -> None:
    counts = {
        "answers": len(answers),
        "accepted": sum(c.status == "accepted" for c in candidates),
        "rejected": sum(c.status == "rejected" for c in candidates),
    }
    emit("context_finished", context_id=context_id, counts=counts, coverage=coverage)


def emit_left_out(extraction: Extraction, max_sentence_tokens: int) -> None:
    """One event per sentence, relation call or triple that extraction left out."""
    context_id = extraction.context_id
    for sentence in extraction.long_sentences:
        emit(
            "sentence_skipped",
            context_id=context_id,
            sentence_index=sentence.index,
            tokens=len(sentence.tokens),
            reason=f"longer than max_sentence_tokens={max_sentence_tokens}",
        )
    relations = extraction.relations
    if relations is None:
        return
    if relations.error is not None:
        emit("relations_failed", context_id=context_id, error=relations.error)
    if relations.malformed is not None:
        emit("relations_malformed", context_id=context_id, error=relations.malformed)
    for triple, reason in relations.dropped:
        emit("triple_dropped", context_id=context_id, triple=triple.model_dump(), reason=reason)
