"""A candidate's bookkeeping: changes to its current attempt, its next step, its fate, and the
test case an accepted one becomes.

A slot moves generate -> check -> reask -> compare -> done (``Candidate.next_step``). Each step
sets the next one when its attempt passes; ``settle`` decides the rest: accepted, sent back to
generate while attempts are left, or rejected for good; ``context_is_settled`` says when a
context's loop is over. ``test_cases_of`` is the one builder of test cases.
"""

from __future__ import annotations

from collections.abc import Sequence

from cq2a.models.records import Candidate, CandidateStep, Context, RejectReason, TestCase


def with_attempt(candidate: Candidate, **changes: object) -> Candidate:
    """A copy of the candidate whose current attempt has ``changes`` applied."""
    attempt = candidate.current.model_copy(update=changes)
    return candidate.model_copy(update={"attempts": [*candidate.attempts[:-1], attempt]})


def reject(candidate: Candidate, reason: RejectReason, **changes: object) -> Candidate:
    reasons = [*candidate.current.reasons, reason]
    return with_attempt(candidate, reasons=list(dict.fromkeys(reasons)), **changes)


def at_step(candidates: Sequence[Candidate], step: CandidateStep) -> list[Candidate]:
    """The candidates waiting for ``step``, in order."""
    return [c for c in candidates if c.next_step == step]


def settle(candidate: Candidate, max_attempts: int) -> Candidate:
    """Accept a candidate that passed everything; send a rejected one back to generation, or
    reject it for good once it is out of attempts."""
    if candidate.status != "pending" or not candidate.attempts:
        return candidate
    attempt = candidate.current
    if not attempt.rejected and attempt.similarity is not None:
        return candidate.model_copy(update={"status": "accepted", "next_step": "done"})
    if attempt.rejected and len(candidate.attempts) >= max_attempts:
        return candidate.model_copy(update={"status": "rejected", "next_step": "done"})
    if attempt.rejected:
        return candidate.model_copy(update={"next_step": "generate"})
    return candidate


def context_is_settled(candidates: Sequence[Candidate], rounds: int, max_rounds: int) -> bool:
    """Whether a context's loop is over: no slot is pending, or ``max_rounds`` are done. Every
    round settles each slot or spends one of its attempts; a slot whose LLM call failed spent
    none, so ``max_rounds`` gives such slots extra rounds to catch up."""
    return rounds >= max_rounds or all(c.status != "pending" for c in candidates)


#: Why a slot is left pending when its context ends without a failed call of its own.
OUT_OF_ROUNDS = (
    "out of rounds: earlier LLM calls for this slot failed and used up the rounds it had left; "
    "--retry-errors continues it"
)


def left_pending(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The slots a context ends with still pending, each saying why: its last call's error, or
    ``OUT_OF_ROUNDS`` when its call succeeded but failures before it used up its rounds."""
    return [
        c.model_copy(update={"error": c.error or OUT_OF_ROUNDS})
        for c in candidates
        if c.status == "pending"
    ]


def test_cases_of(candidates: Sequence[Candidate], contexts: dict[str, Context]) -> list[TestCase]:
    """Accepted candidates as test cases (III-D)."""
    cases = []
    for candidate in candidates:
        if candidate.status != "accepted":
            continue
        attempt = candidate.current
        answer = candidate.answer
        source = contexts[candidate.context_id].source
        cases.append(
            TestCase(
                id=candidate.id,
                context_id=candidate.context_id,
                context=contexts[candidate.context_id].context,
                question=attempt.question,
                answer=answer.text,
                kind=answer.kind,
                sentence=answer.sentence,
                start=answer.start,
                end=answer.end,
                explanation=attempt.explanation,
                attempts=len(candidate.attempts),
                template=attempt.template,
                as_generated=attempt.as_generated,
                votes=attempt.votes,
                similarity=attempt.similarity or 0.0,
                evidence=answer.evidence,
                source=source,
                language=contexts[candidate.context_id].language or "en",
                document_evidence=[source.shifted(e) for e in answer.evidence] if source else [],
            )
        )
    return cases
