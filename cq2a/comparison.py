"""Comparison with the gold answer (III-C2 step 2): the re-asked majority answer must be the
answer the question was generated for. ``compare_round`` is the graph's step: every candidate
waiting for it, compared and settled."""

from __future__ import annotations

from collections.abc import Sequence

from cq2a.answers import is_abstention, normalize_yes_no
from cq2a.candidates import at_step, reject, settle, with_attempt
from cq2a.embeddings import SimilarityPairs
from cq2a.models import Candidate, RejectReason


def exact_agreement(gold: str, majority: str) -> float | None:
    """1.0 or 0.0 where closeness means nothing: a yes/no gold answer needs the same yes/no, an
    unanswerable one an abstention. None: compare by embedding similarity (III-C2)."""
    gold_yes_no = normalize_yes_no(gold)
    if gold_yes_no is not None:
        return float(normalize_yes_no(majority) == gold_yes_no)
    if is_abstention(gold):
        return float(is_abstention(majority))
    return None


def compare_with_gold(
    candidates: Sequence[Candidate], similarity_pairs: SimilarityPairs, threshold: float
) -> list[Candidate]:
    """III-C2 step 2: the majority answer must be at least ``threshold`` similar to the gold
    (exactly the same for yes/no and unanswerable golds, ``exact_agreement``).

    The similarity is recorded either way; ``settle`` then accepts the candidate, or sends it
    back to generation."""
    if not candidates:
        return []
    gold = [c.answer.text for c in candidates]
    majority = [c.current.majority_answer or "" for c in candidates]
    scores = similarity_pairs(majority, gold)
    compared = []
    for candidate, score in zip(candidates, scores, strict=True):
        exact = exact_agreement(candidate.answer.text, candidate.current.majority_answer or "")
        score = round(float(score if exact is None else exact), 4)
        if score >= threshold:
            compared.append(with_attempt(candidate, similarity=score))
        else:
            compared.append(reject(candidate, RejectReason.INCONSISTENT, similarity=score))
    return compared


def evidence_is_in_context(candidate: Candidate, context: str) -> Candidate:
    """A test records the spans of the context that support its answer; one whose evidence is
    not found there verbatim is rejected before it is accepted."""
    missing = [e for e in candidate.answer.evidence if not e.found_in(context)]
    if not missing or candidate.current.rejected:
        return candidate
    return reject(candidate, RejectReason.EVIDENCE_MISSING)


def compare_round(
    candidates: Sequence[Candidate],
    similarity_pairs: SimilarityPairs,
    threshold: float,
    max_attempts: int,
    context: str,
) -> list[Candidate]:
    """Compare every candidate waiting for it, check its evidence against ``context``, and
    settle each; returns them."""
    compared = compare_with_gold(at_step(candidates, "compare"), similarity_pairs, threshold)
    return [settle(evidence_is_in_context(c, context), max_attempts) for c in compared]
