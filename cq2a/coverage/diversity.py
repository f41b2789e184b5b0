"""How varied an accepted suite is: distinct answers and sentence coverage per context, the
share of the commonest question openings, and how alike a context's questions are (mean
pairwise embedding similarity)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from statistics import mean

from pydantic import BaseModel

from cq2a.coverage.steering import evidence_sentences
from cq2a.language.answers import answer_tokens
from cq2a.language.lexicon import words
from cq2a.models.mix import Mix, MixReport, mix_report
from cq2a.models.records import ContextPlan, QuestionKind, TestCase

SimilarityMatrix = Callable[[list[str], list[str]], object]


class ContextDiversity(BaseModel):
    context_id: str
    tests: int
    distinct_answers: int
    sentences: int
    covered_sentences: list[int]
    coverage: float
    mean_question_similarity: float | None


class Diversity(BaseModel):
    """The run's figures (means over contexts with at least one test) and each context's."""

    contexts_with_tests: int
    distinct_answers_per_context: float
    coverage: float
    top_openings: dict[str, float]
    mean_question_similarity: float | None
    per_context: list[ContextDiversity]


def target_of(case: TestCase) -> str:
    """What a test asks about: its normalised answer span, or for a yes/no or unanswerable
    test (whose answers repeat) the target it was written for (its id without the slot)."""
    if case.kind.question_kind in ("yesno", "unanswerable"):
        return case.id.rsplit(":", 1)[0]
    return " ".join(answer_tokens(case.answer))


def opening(question: str) -> str:
    """A question's first word ("What", "Which", "In" ...), capitalised."""
    first = words(question)[:1]
    return first[0].capitalize() if first else ""


def mean_pairwise(matrix: object) -> float | None:
    rows = [list(map(float, row)) for row in matrix]  # type: ignore[attr-defined]
    pairs = [rows[i][j] for i in range(len(rows)) for j in range(i + 1, len(rows))]
    return round(mean(pairs), 4) if pairs else None


def context_diversity(
    context_id: str,
    cases: Sequence[TestCase],
    spans: Sequence[tuple[int, int]],
    similarity_matrix: SimilarityMatrix | None,
) -> ContextDiversity:
    covered = sorted(set().union(*(evidence_sentences(c.evidence, spans) for c in cases)))
    questions = [c.question for c in cases]
    similarity = (
        mean_pairwise(similarity_matrix(questions, questions))
        if similarity_matrix is not None and len(questions) > 1
        else None
    )
    return ContextDiversity(
        context_id=context_id,
        tests=len(cases),
        distinct_answers=len({target_of(c) for c in cases}),
        sentences=len(spans),
        covered_sentences=covered,
        coverage=round(len(covered) / len(spans), 4) if spans else 0.0,
        mean_question_similarity=similarity,
    )


class DiversityPart(BaseModel):
    """What ``diversity`` needs of some contexts' tests, so that a run evaluated a part at a
    time (``combine_parts``) reports the same figures as one evaluated at once: each context's
    record (those with a sentence plan, in plan order, apart from those with tests and no
    plan), the question openings counted in first-seen order, and the question kinds."""

    planned: list[ContextDiversity] = []
    unplanned: list[ContextDiversity] = []
    openings: dict[str, int] = {}
    kinds: dict[QuestionKind, int] = {}
    tests: int = 0


def diversity_part(
    cases: Sequence[TestCase],
    spans: Mapping[str, Sequence[tuple[int, int]]],
    similarity_matrix: SimilarityMatrix | None = None,
) -> DiversityPart:
    """The part of these contexts: ``spans`` holds each one's sentence offsets; ``cases`` their
    accepted tests."""
    grouped: dict[str, list[TestCase]] = defaultdict(list)
    for case in cases:
        grouped[case.context_id].append(case)

    def record(cid: str) -> ContextDiversity:
        return context_diversity(cid, grouped.get(cid, []), spans.get(cid, []), similarity_matrix)

    return DiversityPart(
        planned=[record(cid) for cid in spans],
        unplanned=[record(cid) for cid in grouped if cid not in spans],
        openings=dict(Counter(opening(c.question) for c in cases)),
        kinds=dict(Counter(case.kind.question_kind for case in cases)),
        tests=len(cases),
    )


def combine_parts(parts: Iterable[DiversityPart]) -> DiversityPart:
    """The parts of disjoint sets of contexts, in input order, as one part: the same as the part
    of all their tests at once (records and openings keep their first-seen order)."""
    combined = DiversityPart()
    openings: Counter[str] = Counter()
    kinds: Counter[QuestionKind] = Counter()
    for part in parts:
        combined.planned += part.planned
        combined.unplanned += part.unplanned
        openings.update(part.openings)
        kinds.update(part.kinds)
        combined.tests += part.tests
    combined.openings, combined.kinds = dict(openings), dict(kinds)
    return combined


def diversity_of(part: DiversityPart, top: int = 3) -> Diversity:
    """The figures of a part (means over contexts with at least one test; contexts without a
    test count with coverage 0)."""
    per_context = [*part.planned, *part.unplanned]
    tested = [c for c in per_context if c.tests]
    openings = Counter(part.openings)
    similarities = [c.mean_question_similarity for c in tested if c.mean_question_similarity]
    return Diversity(
        contexts_with_tests=len(tested),
        distinct_answers_per_context=round(mean(c.distinct_answers for c in tested), 2)
        if tested
        else 0.0,
        coverage=round(mean(c.coverage for c in per_context), 4) if per_context else 0.0,
        top_openings={k: round(v / part.tests, 4) for k, v in openings.most_common(top)},
        mean_question_similarity=round(mean(similarities), 4) if similarities else None,
        per_context=per_context,
    )


def diversity(
    cases: Sequence[TestCase],
    spans: Mapping[str, Sequence[tuple[int, int]]],
    similarity_matrix: SimilarityMatrix | None = None,
    top: int = 3,
) -> Diversity:
    """Diversity of the accepted ``cases``; ``spans`` holds each context's sentence offsets
    (contexts without a test count with coverage 0)."""
    return diversity_of(diversity_part(cases, spans, similarity_matrix), top)


class SuiteFigures(BaseModel):
    """What a run reports about its accepted suite beside the bugs: its diversity and coverage,
    and the question mix it achieved against the one chosen."""

    diversity: Diversity
    mix: MixReport


def suite_part(
    cases: Sequence[TestCase],
    plans: Sequence[ContextPlan],
    similarity_matrix: SimilarityMatrix | None = None,
) -> DiversityPart:
    """What ``suite_figures`` needs of some contexts: their plans and accepted tests."""
    return diversity_part(
        cases, {plan.id: plan.sentence_spans for plan in plans}, similarity_matrix
    )


def figures_of(part: DiversityPart, mix: Mix) -> SuiteFigures:
    """A suite's figures from its part (one or ``combine_parts`` of several)."""
    kinds = Counter(part.kinds).elements()
    return SuiteFigures(diversity=diversity_of(part), mix=mix_report(mix, kinds))


def suite_figures(
    cases: Sequence[TestCase],
    plans: Sequence[ContextPlan],
    mix: Mix,
    similarity_matrix: SimilarityMatrix | None = None,
) -> SuiteFigures:
    return figures_of(suite_part(cases, plans, similarity_matrix), mix)
