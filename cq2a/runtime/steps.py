"""Each paper step's dependencies and limits, from a run's services and settings: what the nodes
and ``cq2a test`` hand the steps, so that a step's signature names what it uses."""

from __future__ import annotations

from cq2a.answers.plan import ExtractionLimits
from cq2a.checks.rules import CheckLimits
from cq2a.coverage.steering import CoverageLimits
from cq2a.generation.questions import GenerationLimits
from cq2a.models.records import TestCase, Verdict
from cq2a.oracle.evaluate import OracleLimits, evaluate_cases
from cq2a.runtime.services import Services
from cq2a.settings import Settings


def extraction_limits(settings: Settings) -> ExtractionLimits:
    """III-A's limits; the windows are those of the roles whose prompts hold the context."""
    return ExtractionLimits(
        windows={"generator": settings.generator.window(), "reasker": settings.reasker.window()},
        max_sentence_tokens=settings.max_sentence_tokens,
        mix=settings.mix(),
        answers_per_context=settings.answers_per_context,
        answers=settings.answers,
        answer_budget=settings.answer_budget,
    )


def generation_limits(settings: Settings) -> GenerationLimits:
    """III-B's limits: slots per answer (Table I), attempts per slot, concurrent requests."""
    return GenerationLimits(
        per_entity=settings.questions_per_entity,
        per_relation=settings.questions_per_relation,
        max_attempts=settings.max_attempts,
        concurrency=settings.concurrency,
    )


def check_limits(settings: Settings) -> CheckLimits:
    """III-C1's limits, and the near-duplicate threshold."""
    return CheckLimits(
        min_chars=settings.min_question_chars,
        max_chars=settings.max_question_chars,
        leak_rule=settings.leak_rule,
        dedup_threshold=settings.dedup_threshold,
        max_attempts=settings.max_attempts,
    )


def coverage_limits(settings: Settings) -> CoverageLimits:
    """The limits of coverage-steered rounds."""
    return CoverageLimits(
        rounds=settings.coverage_rounds,
        answers_per_context=settings.answers_per_context,
        answer_budget=settings.answer_budget,
        mix=settings.mix(),
    )


def evaluate_with(run: Services, cases: list[TestCase]) -> list[Verdict]:
    """III-D (``evaluate_cases``) with the run's SUT, judge, embedder and thresholds (the
    similarity one defaults by the embedding model); with no cases it builds none of them (a
    SUT may load a model)."""
    if not cases:
        return []
    settings = run.settings
    limits = OracleLimits(
        threshold=run.oracle_threshold,
        judge_threshold=settings.judge_threshold,
        concurrency=settings.concurrency,
        judge_votes=settings.judge_votes,
    )
    return evaluate_cases(
        cases,
        run.sut,
        settings.sut,
        run.llm.judge,
        run.embedder.similarity_pairs,
        run.lemmatize,
        limits,
    )
