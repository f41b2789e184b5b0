"""Comparison with the gold answer (III-C2 step 2): the re-asked majority answer must be the
answer the question was generated for. ``compare_round`` is the graph's step: every candidate
waiting for it, compared and settled."""

from __future__ import annotations

from collections.abc import Sequence

from cq2a.language.answers import answer_tokens, is_abstention, normalize_yes_no
from cq2a.language.embeddings import SimilarityPairs
from cq2a.models.candidates import at_step, reject, settle, with_attempt
from cq2a.models.records import Candidate, RejectReason


def exact_agreement(gold: str, majority: str) -> float | None:
    """1.0 or 0.0 where closeness means nothing: a yes/no gold answer needs the same yes/no, an
    unanswerable one an abstention. None: compare by embedding similarity (III-C2)."""
    gold_yes_no = normalize_yes_no(gold)
    if gold_yes_no is not None:
        return float(normalize_yes_no(majority) == gold_yes_no)
    if is_abstention(gold):
        return float(is_abstention(majority))
    return None


#: A yes/no gold answer needs this share of the votes: with two possible answers, a bare
#: majority (3 of 5) is too close to a coin toss to show the question is answered by its label.
YES_NO_AGREEMENT = 0.8
_COORDINATION = frozenset({"and", "or"})


def one_item_of_a_list(gold: str, majority: str) -> bool:
    """Whether the majority answer is a list ("Frankish and Roman-Gaulish") of which the gold
    is one item ("Frankish"): the question asks for the list, and its gold answer is incomplete
    however similar the two are."""
    said, wanted = answer_tokens(majority), answer_tokens(gold)
    size = len(wanted)
    if not wanted or len(said) <= size or normalize_yes_no(gold) is not None:
        return False
    for start in range(len(said) - size + 1):
        if said[start : start + size] == wanted:
            rest = said[:start] + said[start + size :]
            return bool(_COORDINATION & set(rest))
    return False


def agrees_with_gold(candidate: Candidate, votes: int, similarity: float, threshold: float) -> bool:
    """III-C2 step 2's decision for one candidate, given its similarity (``exact_agreement``
    for yes/no and unanswerable golds): at least ``threshold``; for a yes/no gold, by at least
    ``YES_NO_AGREEMENT`` of the votes; never for a gold that is one item of the majority's
    list."""
    attempt = candidate.current
    gold, majority = candidate.answer.text, attempt.majority_answer or ""
    if similarity < threshold or one_item_of_a_list(gold, majority):
        return False
    if normalize_yes_no(gold) is not None:
        return attempt.majority_count >= YES_NO_AGREEMENT * votes
    return True


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
        votes = len(candidate.current.votes) or 1
        if agrees_with_gold(candidate, votes, score, threshold):
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
