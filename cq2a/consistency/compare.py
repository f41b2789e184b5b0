"""Comparison with the gold answer (III-C2 step 2): the re-asked majority answer must be the
answer the question was generated for. ``compare_round`` is the graph's step: every candidate
waiting for it, compared and settled."""

from __future__ import annotations

from collections.abc import Sequence

from cq2a.language.answers import answer_tokens, is_abstention, normalize_yes_no, trims_the_gold
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
_COORDINATION = frozenset({"and", "or", "et", "ou"})


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


def answer_agrees(
    gold: str, majority: str, count: int, votes: int, similarity: float, threshold: float
) -> bool:
    """III-C2 step 2's decision for one majority answer of ``count`` of ``votes`` votes, given
    its similarity to the gold (``exact_agreement`` for yes/no and unanswerable golds): at
    least ``threshold``, or the gold cut short at one end (``trims_the_gold``); for a yes/no
    gold, by at least ``YES_NO_AGREEMENT`` of the votes; for an unanswerable gold, by more
    than half of them (abstaining 2 times of 5 while the other 3 votes answer is no sign that
    the passage does not); never for a gold that is one item of the majority's list."""
    if one_item_of_a_list(gold, majority):
        return False
    if similarity < threshold and not (
        exact_agreement(gold, majority) is None and trims_the_gold(gold, majority)
    ):
        return False
    if normalize_yes_no(gold) is not None:
        return count >= YES_NO_AGREEMENT * votes
    if is_abstention(gold):
        return count > votes / 2
    return True


def agrees_with_gold(candidate: Candidate, votes: int, similarity: float, threshold: float) -> bool:
    """``answer_agrees`` for the candidate's majority answer over its own passage."""
    attempt = candidate.current
    gold, majority = candidate.answer.text, attempt.majority_answer or ""
    return answer_agrees(gold, majority, attempt.majority_count, votes, similarity, threshold)


def similarities(
    majorities: list[str], golds: list[str], similarity_pairs: SimilarityPairs
) -> list[float]:
    """Each majority answer's similarity to its gold: exact for yes/no and unanswerable golds
    (``exact_agreement``), else the embeddings' (III-C2)."""
    scores = similarity_pairs(majorities, golds) if majorities else []
    rounded = []
    for gold, majority, score in zip(golds, majorities, scores, strict=True):
        exact = exact_agreement(gold, majority)
        rounded.append(round(float(score if exact is None else exact), 4))
    return rounded


def corpus_agrees(candidate: Candidate, similarity: float, threshold: float) -> bool:
    """The majority over the passages a corpus search found (``reask_over_corpus``) is the gold
    answer, decided as the own-passage majority is."""
    attempt = candidate.current
    votes = len(attempt.corpus_votes) or 1
    gold, majority = candidate.answer.text, attempt.corpus_answer or ""
    return answer_agrees(gold, majority, attempt.corpus_count, votes, similarity, threshold)


def compare_with_gold(
    candidates: Sequence[Candidate], similarity_pairs: SimilarityPairs, threshold: float
) -> list[Candidate]:
    """III-C2 step 2: the majority answer must be at least ``threshold`` similar to the gold
    (exactly the same for yes/no and unanswerable golds, ``exact_agreement``). A candidate
    re-asked over the corpus too must also get its gold there, or it is rejected as
    ``ambiguous_in_corpus``: another passage answers it otherwise.

    The similarities are recorded either way; ``settle`` then accepts the candidate, or sends
    it back to generation."""
    if not candidates:
        return []
    gold = [c.answer.text for c in candidates]
    scores = similarities(
        [c.current.majority_answer or "" for c in candidates], gold, similarity_pairs
    )
    searched = [c for c in candidates if c.current.corpus_answer is not None]
    corpus_scores = dict(
        zip(
            [c.id for c in searched],
            similarities(
                [c.current.corpus_answer or "" for c in searched],
                [c.answer.text for c in searched],
                similarity_pairs,
            ),
            strict=True,
        )
    )
    compared = []
    for candidate, score in zip(candidates, scores, strict=True):
        votes = len(candidate.current.votes) or 1
        corpus_score = corpus_scores.get(candidate.id)
        recorded = {"similarity": score, "corpus_similarity": corpus_score}
        if not agrees_with_gold(candidate, votes, score, threshold):
            compared.append(reject(candidate, RejectReason.INCONSISTENT, **recorded))
        elif corpus_score is not None and not corpus_agrees(candidate, corpus_score, threshold):
            compared.append(reject(candidate, RejectReason.AMBIGUOUS_IN_CORPUS, **recorded))
        else:
            compared.append(with_attempt(candidate, **recorded))
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
