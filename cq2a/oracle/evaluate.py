"""III-D's entry point: the software under test answers every test in batches, then the two-stage
oracle decides."""

from __future__ import annotations

from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.sut.base import QASystem, SUTQuery, answer_within, truncated_inputs
from cq2a.language.embeddings import SimilarityPairs
from cq2a.language.lemmas import Lemmatizer
from cq2a.models.records import TestCase, Verdict
from cq2a.oracle.judge import OracleLimits, oracle_verdicts
from cq2a.settings import SUTSpec


def evaluate_cases(
    cases: list[TestCase],
    sut: QASystem,
    sut_spec: SUTSpec,
    judge: ChatClient,
    similarity_pairs: SimilarityPairs,
    lemmatize: Lemmatizer,
    limits: OracleLimits,
) -> list[Verdict]:
    """III-D: the software under test answers every test in batches (each batch within
    ``sut_spec``'s timeout), then the two-stage oracle decides (``similarity_pairs``, then the
    ``judge``; ``lemmatize`` tells an answer that restates the question); each verdict says
    whether the SUT saw its whole input (an adapter with a window reports what it cut)."""
    if not cases:
        return []
    queries = [SUTQuery(question=case.question, context=case.context) for case in cases]
    sut_answers = answer_within(sut, queries, sut_spec)
    verdicts = oracle_verdicts(
        judge,
        cases,
        sut_answers,
        similarity_pairs,
        lemmatize=lemmatize,
        limits=limits,
    )
    flags = truncated_inputs(sut, queries)
    if flags is not None:
        verdicts = [
            v.model_copy(update={"sut_input_truncated": flag})
            for v, flag in zip(verdicts, flags, strict=True)
        ]
    return verdicts
