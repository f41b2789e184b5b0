"""Coverage-steered rounds (beyond the paper): once a context's first slots (``cq2a.answers.plan``)
have settled, round by round, the answers that reach the sentences no accepted test covers yet
and the kinds the accepted tests lack get slots.

A context's pool holds every target it could ask about, best first within each kind: the ranked
entity answers (``cq2a.answers.asked``, up to ``answer_budget``), the relation triples, and the
yes/no, unanswerable and multi-sentence targets (``cq2a.answers.kinds``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cq2a.models.mix import Mix
from cq2a.models.records import Answer, Candidate, ContextPlan, Evidence, QuestionKind


def sentences_of(answer: Answer, spans: Sequence[tuple[int, int]]) -> set[int]:
    """The sentences (indices into ``spans``) a target's evidence lies in; without evidence, its
    own sentence."""
    return evidence_sentences(answer.evidence, spans) or {answer.sentence_index}


def evidence_sentences(evidence: Sequence[Evidence], spans: Sequence[tuple[int, int]]) -> set[int]:
    """The sentences (indices into ``spans``, the context's sentence offsets) that evidence
    spans overlap: the deterministic segment match RQ3's coverage uses."""
    return {
        index
        for item in evidence
        for index, (start, end) in enumerate(spans)
        if start < item.end and item.start < end
    }


def covered_sentences(
    candidates: Sequence[Candidate], spans: Sequence[tuple[int, int]]
) -> set[int]:
    """Sentences with at least one accepted test, matched on the tests' evidence offsets."""
    return {
        index
        for candidate in candidates
        if candidate.status == "accepted"
        for index in sentences_of(candidate.answer, spans)
    }


def coverage(candidates: Sequence[Candidate], spans: Sequence[tuple[int, int]]) -> float:
    """The share of a context's sentences that at least one accepted test covers."""
    return round(len(covered_sentences(candidates, spans)) / len(spans), 4) if spans else 0.0


def places_by_deficit(mix: Mix, accepted: Sequence[QuestionKind], count: int) -> list[QuestionKind]:
    """``count`` places for new answers, one at a time to the kind furthest below its share of
    the suite the places would make (accepted tests plus one per place)."""
    have = {kind: float(sum(k == kind for k in accepted)) for kind in mix}
    total = float(len(accepted))
    places: list[QuestionKind] = []
    for _ in range(count):
        total += 1
        kind = max(mix, key=lambda k: (mix[k] * total - have[k], mix[k]))
        have[kind] += 1
        places.append(kind)
    return places


#: A kind stops taking slots in a context once this many of its slots there have settled
#: without a test and none has given one (``cut_back``). One: on the demo's passages (tune
#: part, eight runs), the coverage-round slots of a kind whose first-round slots had all been
#: rejected after every attempt gave 3 tests in 35, where the entity slots of the same rounds
#: gave 22 in 28 (``evals.kind_yield``; evals/README.md, "Slots go where tests come from").
CUT_BACK_AFTER = 1


def cut_back(mix: Mix, candidates: Sequence[Candidate]) -> dict[QuestionKind, str]:
    """The kinds of the mix that take no more slots in this context, each with why: at least
    ``CUT_BACK_AFTER`` of its slots rejected after all their attempts, and none accepted. A
    place ``places_by_deficit`` would give such a kind (the furthest below its share, since it
    yields nothing) goes to the kinds that yield; the mix still decides among those."""
    settled: dict[QuestionKind, list[str]] = {}
    for candidate in candidates:
        if candidate.status != "pending":
            settled.setdefault(candidate.answer.kind.question_kind, []).append(candidate.status)
    return {
        kind: f"{len(statuses)} of its slots rejected, none accepted"
        if len(statuses) > 1
        else "its one slot rejected"
        for kind, statuses in settled.items()
        if kind in mix and "accepted" not in statuses and len(statuses) >= CUT_BACK_AFTER
    }


def next_answers(
    pool: Sequence[Answer],
    active: Sequence[Answer],
    candidates: Sequence[Candidate],
    *,
    mix: Mix,
    spans: Sequence[tuple[int, int]],
    count: int,
) -> list[Answer]:
    """Up to ``count`` answers for one more round: each place goes to the kind whose accepted
    share lags the mix most (``places_by_deficit``) among the kinds not cut back
    (``cut_back``); within a kind, answers in sentences no accepted test covers yet come first,
    each pick marking its sentences covered. A place of a kind with no answer left goes to the
    next kind that has one. Empty when every kind of the mix is cut back."""
    stopped = cut_back(mix, candidates)
    mix = {kind: share for kind, share in mix.items() if kind not in stopped}
    if not mix:
        return []
    taken = {a.id for a in active}
    left = [a for a in pool if a.id not in taken]
    uncovered = set(range(len(spans))) - covered_sentences(candidates, spans)
    accepted = [c.answer.kind.question_kind for c in candidates if c.status == "accepted"]
    picked: list[Answer] = []
    for kind in places_by_deficit(mix, accepted, count):
        order = [kind, *(k for k in mix if k != kind)]
        of_kind = next((found for k in order if (found := _of_kind(left, k))), [])
        if not of_kind:
            break
        fresh = [a for a in of_kind if sentences_of(a, spans) & uncovered]
        answer = (fresh or of_kind)[0]
        left.remove(answer)
        picked.append(answer)
        uncovered -= sentences_of(answer, spans)
    return picked


def _of_kind(answers: Sequence[Answer], kind: QuestionKind) -> list[Answer]:
    return [a for a in answers if a.kind.question_kind == kind]


@dataclass(frozen=True, kw_only=True)
class CoverageLimits:
    """What ``coverage_round`` reads from a run's settings."""

    #: Coverage rounds per context.
    coverage_rounds: int
    #: Answers of a context's first round; a coverage round gives half as many.
    answers_per_context: int
    #: Answers a context may have in all.
    answer_budget: int
    #: The share of each question kind.
    mix: Mix


def coverage_round(
    plan: ContextPlan,
    answers: Sequence[Answer],
    candidates: Sequence[Candidate],
    limits: CoverageLimits,
) -> list[Answer]:
    """The answers one more round gives slots to, once a context's slots have settled: half of
    ``answers_per_context`` (at least one) by ``next_answers``, while the ``rounds`` and
    ``answer_budget`` last. Empty: the context is done."""
    room = limits.answer_budget - len(answers)
    if plan.coverage_rounds >= limits.coverage_rounds or room <= 0:
        return []
    count = min(max(1, limits.answers_per_context // 2), room)
    return next_answers(
        plan.pool,
        answers,
        candidates,
        mix=limits.mix,
        spans=plan.sentence_spans,
        count=count,
    )
