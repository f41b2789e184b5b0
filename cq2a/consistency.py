"""Consistency verification (III-C2): re-ask, vote, compare with the gold answer; and dedup."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cq2a.answers import align_to_context, majority_vote, normalize_answer
from cq2a.checks import LeakRule, Lemmatizer, check_question, rejection_reasons
from cq2a.llm.client import ChatClient, LLMCallFailed
from cq2a.llm.usage import Usage
from cq2a.models import Attempt, Candidate, CheckResult, Context, RejectReason
from cq2a.prompts_loader import load_prompt, render_prompt

SimilarityMatrix = Callable[[list[str], list[str]], Any]
SimilarityPairs = Callable[[list[str], list[str]], Sequence[float]]


def with_attempt(candidate: Candidate, **changes: object) -> Candidate:
    """A copy of the candidate whose current attempt has ``changes`` applied."""
    attempt = candidate.current.model_copy(update=changes)
    return candidate.model_copy(update={"attempts": [*candidate.attempts[:-1], attempt]})


def reject(candidate: Candidate, reason: RejectReason, **changes: object) -> Candidate:
    reasons = [*candidate.current.reasons, reason]
    return with_attempt(candidate, reasons=list(dict.fromkeys(reasons)), **changes)


def awaiting(candidates: Sequence[Candidate], step: str) -> list[Candidate]:
    """Pending candidates whose current attempt is alive and has not been through ``step``."""
    alive = [
        c for c in candidates if c.status == "pending" and c.attempts and not c.current.rejected
    ]
    if step == "check":
        return [c for c in alive if not c.current.checks]
    if step == "reask":
        return [c for c in alive if c.current.checks and not c.current.votes]
    if step == "compare":
        return [c for c in alive if c.current.votes and c.current.similarity is None]
    raise ValueError(step)


def apply_constraints(
    candidate: Candidate,
    lemmatize: Lemmatizer,
    *,
    min_chars: int,
    max_chars: int,
    leak_rule: LeakRule,
) -> Candidate:
    """Run the III-C1 checks on the current attempt and record any rejection reasons."""
    attempt = candidate.current
    results: list[CheckResult] = check_question(
        candidate.answer,
        attempt.question,
        attempt.explanation,
        lemmatize=lemmatize,
        min_chars=min_chars,
        max_chars=max_chars,
        leak_rule=leak_rule,
    )
    return with_attempt(candidate, checks=results, reasons=rejection_reasons(results))


def mark_duplicates(
    new: Sequence[Candidate],
    existing: Sequence[Candidate],
    similarity_matrix: SimilarityMatrix,
    threshold: float,
) -> list[Candidate]:
    """Reject near-duplicate questions of the same answer with reason ``duplicate``.

    The first question wins: ``existing`` (accepted or still alive) questions are kept, then
    ``new`` ones in slot order, each compared with those kept before it.
    """
    updated = list(new)
    answer_ids = dict.fromkeys(c.answer.id for c in new)
    for answer_id in answer_ids:
        kept = [c for c in existing if c.answer.id == answer_id]
        fresh = [i for i, c in enumerate(updated) if c.answer.id == answer_id]
        questions = [c.current.question for c in kept] + [
            updated[i].current.question for i in fresh
        ]
        matrix = similarity_matrix(questions, questions)
        kept_rows = list(range(len(kept)))
        for offset, index in enumerate(fresh):
            row = len(kept) + offset
            twin = next((k for k in kept_rows if matrix[row][k] >= threshold), None)
            if twin is None:
                kept_rows.append(row)
                continue
            candidate = updated[index]
            detail = f"{float(matrix[row][twin]):.2f} similar to: {questions[twin]}"
            check = CheckResult(name="duplicate", passed=False, detail=detail)
            updated[index] = reject(
                candidate, RejectReason.DUPLICATE, checks=[*candidate.current.checks, check]
            )
    return updated


def reask(
    client: ChatClient, context: Context, candidate: Candidate, votes: int, seed_offset: int
) -> tuple[Candidate, Usage]:
    """Ask the LLM the question ``votes`` times (Table II) and keep the majority answer.

    A failed call leaves the candidate waiting to be re-asked (next round, or a resume), with
    the error recorded."""
    user = render_prompt("reask.user", context=context.context, question=candidate.current.question)
    try:
        completion = client.text(
            load_prompt("reask.system"), user, n=votes, seed_offset=seed_offset
        )
    except LLMCallFailed as error:
        return candidate.model_copy(update={"error": str(error)}), Usage()
    # Each vote as the span of the context it stands for, so the votes and the gold compare as
    # spans (III-C2), whether the re-asker copied a span or wrote a sentence around it.
    answers = [
        align_to_context(normalize_answer(text), context.context) for text in completion.texts
    ]
    winner, count = majority_vote(answers)
    voted = with_attempt(
        candidate,
        raw_votes=completion.texts,
        votes=answers,
        majority_answer=winner,
        majority_count=count,
    )
    return voted.model_copy(update={"error": None}), completion.usage


def compare_with_gold(
    candidates: Sequence[Candidate], similarity_pairs: SimilarityPairs, threshold: float
) -> list[Candidate]:
    """III-C2 step 2: the majority answer must be at least ``threshold`` similar to the gold."""
    if not candidates:
        return []
    gold = [c.answer.text for c in candidates]
    majority = [c.current.majority_answer or "" for c in candidates]
    scores = similarity_pairs(majority, gold)
    compared = []
    for candidate, score in zip(candidates, scores, strict=True):
        score = round(float(score), 4)
        if score >= threshold:
            compared.append(with_attempt(candidate, similarity=score))
        else:
            compared.append(reject(candidate, RejectReason.INCONSISTENT, similarity=score))
    return compared


def settle(candidate: Candidate, max_attempts: int) -> Candidate:
    """Accept a candidate that passed everything; reject for good one out of attempts."""
    if candidate.status != "pending" or not candidate.attempts:
        return candidate
    attempt: Attempt = candidate.current
    if not attempt.rejected and attempt.similarity is not None:
        return candidate.model_copy(update={"status": "accepted"})
    if attempt.rejected and len(candidate.attempts) >= max_attempts:
        return candidate.model_copy(update={"status": "rejected"})
    return candidate
