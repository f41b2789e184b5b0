"""III-D's entry point: the software under test answers every test in batches, then the two-stage
oracle decides."""

from __future__ import annotations

from collections.abc import Sequence

from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.sut.base import (
    QASystem,
    SUTAnswer,
    SUTQuery,
    answer_within,
    truncated_inputs,
)
from cq2a.language.embeddings import SimilarityPairs
from cq2a.language.lemmas import Lemmatizer
from cq2a.models.records import TestCase, Verdict
from cq2a.oracle.attribution import attributed
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
    corpus: Sequence[tuple[str, str]] | None = None,
    *,
    index_corpus: bool = True,
) -> list[Verdict]:
    """III-D: the software under test answers every test in batches (each batch within
    ``sut_spec``'s timeout), then the two-stage oracle decides (``similarity_pairs``, then the
    ``judge``; ``lemmatize`` tells an answer that restates the question); each verdict says
    whether the SUT saw its whole input (an adapter with a window reports what it cut).

    A SUT asked the question alone (``SUTSpec.question_alone``) that has ``index`` first gets the
    ``corpus`` as ``(id, text)`` pairs (by default the tests' own passages); the passages it
    names with its answers attribute its bugs (``cq2a.oracle.attribution``). With
    ``index_corpus`` false it searches what it was given before (a run evaluated in chunks
    indexes its corpus once)."""
    if not cases:
        return []
    question_only = sut_spec.question_alone
    queries = [
        SUTQuery(question=case.question, context=None if question_only else case.context)
        for case in cases
    ]
    index = getattr(sut, "index", None)
    if question_only and index is not None and index_corpus:
        index(list(corpus) if corpus is not None else _passages_of(cases))
    sut_answers = answer_within(sut, queries, sut_spec)
    texts = [a.answer if isinstance(a, SUTAnswer) else a for a in sut_answers]
    verdicts = oracle_verdicts(
        judge,
        cases,
        texts,
        similarity_pairs,
        lemmatize=lemmatize,
        limits=limits,
    )
    verdicts = [
        attributed(verdict, case, answer, question_only)
        for verdict, case, answer in zip(verdicts, cases, sut_answers, strict=True)
    ]
    flags = truncated_inputs(sut, queries)
    if flags is not None:
        verdicts = [
            v.model_copy(update={"sut_input_truncated": flag})
            for v, flag in zip(verdicts, flags, strict=True)
        ]
    return verdicts


def _passages_of(cases: list[TestCase]) -> list[tuple[str, str]]:
    """Each test's passage once, as ``(id, text)``."""
    return list({case.context_id: case.context for case in cases}.items())
