"""III-D's entry point: the software under test answers every test in batches, then the two-stage
oracle decides."""

from __future__ import annotations

from cq2a.adapters.sut.base import SUTQuery, answer_within, truncated_inputs
from cq2a.models.records import TestCase, Verdict
from cq2a.oracle.judge import oracle_verdicts
from cq2a.runtime.services import Services


def evaluate_cases(services: Services, cases: list[TestCase]) -> list[Verdict]:
    """III-D: the software under test answers every test in batches, then the two-stage oracle
    decides; each verdict says whether the SUT saw its whole input (an adapter with a window
    reports what it cut)."""
    if not cases:
        return []
    settings = services.settings
    queries = [SUTQuery(question=case.question, context=case.context) for case in cases]
    sut_answers = answer_within(services.sut, queries, settings.sut)
    verdicts = oracle_verdicts(
        services.llm.judge,
        cases,
        sut_answers,
        services.embedder.similarity_pairs,
        lemmatize=services.lemmatize,
        threshold=services.oracle_threshold,
        judge_threshold=settings.judge_threshold,
        concurrency=settings.concurrency,
        judge_votes=settings.judge_votes,
    )
    flags = truncated_inputs(services.sut, queries)
    if flags is not None:
        verdicts = [
            v.model_copy(update={"sut_input_truncated": flag})
            for v, flag in zip(verdicts, flags, strict=True)
        ]
    return verdicts
