"""Each paper step's dependencies and limits, from a run's services and settings: what the nodes
and ``cq2a test`` hand the steps, so that a step's signature names what it uses. A step's limits
are a frozen dataclass whose fields are named as the settings they come from."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

from cq2a.answers.plan import ExtractionLimits
from cq2a.checks.rules import CheckLimits
from cq2a.coverage.steering import CoverageLimits
from cq2a.generation.questions import GenerationLimits
from cq2a.models.records import TestCase, Verdict
from cq2a.oracle.evaluate import evaluate_cases
from cq2a.oracle.judge import OracleLimits
from cq2a.runtime.services import Services
from cq2a.settings import Settings

Limits = TypeVar("Limits")


def limits_from(kind: type[Limits], settings: Settings, **given: Any) -> Limits:
    """A step's limits: each field the setting of the same name, unless ``given``."""
    names = [field.name for field in fields(kind)]  # type: ignore[arg-type]
    return kind(**{n: given[n] if n in given else getattr(settings, n) for n in names})


def extraction_limits(settings: Settings) -> ExtractionLimits:
    """III-A's limits; the windows are those of the roles whose prompts hold the context."""
    windows = {"generator": settings.generator.window(), "reasker": settings.reasker.window()}
    return limits_from(ExtractionLimits, settings, windows=windows, mix=settings.mix())


def generation_limits(settings: Settings) -> GenerationLimits:
    """III-B's limits: slots per answer (Table I), attempts per slot, concurrent requests, and
    whether the questions will be asked without their passage."""
    standalone = settings.sut.question_alone
    return limits_from(GenerationLimits, settings, standalone_questions=standalone)


def check_limits(settings: Settings) -> CheckLimits:
    """III-C1's limits, and the near-duplicate threshold."""
    return limits_from(CheckLimits, settings)


def coverage_limits(settings: Settings) -> CoverageLimits:
    """The limits of coverage-steered rounds."""
    return limits_from(CoverageLimits, settings, mix=settings.mix())


def oracle_limits(run: Services, language: str | None = None) -> OracleLimits:
    """III-D's limits; the similarity threshold defaults by the language's embedding model."""
    threshold = run.speaking(language).oracle_threshold
    return limits_from(OracleLimits, run.settings, oracle_threshold=threshold)


def evaluate_with(
    run: Services, cases: list[TestCase], corpus: list[tuple[str, str]] | None = None
) -> list[Verdict]:
    """III-D (``evaluate_cases``) with the run's SUT and judge, and the embedder, lemmatizer
    and limits of each test's language (the tests of one language at a time); with no cases
    it builds none of them (a SUT may load a model). ``corpus``: the run's passages, for a SUT
    that retrieves its own, handed over once per run (``claim_sut_index``) however many chunks
    the run evaluates in."""
    if not cases:
        return []
    sut_spec, judge = run.settings.sut, run.llm.judge
    fresh = sut_spec.question_alone and run.claim_sut_index()
    verdicts: dict[str, Verdict] = {}
    for language in dict.fromkeys(case.language for case in cases):
        group = [case for case in cases if case.language == language]
        speech = run.speaking(language)
        limits = oracle_limits(run, language)
        pairs, lemmatize = speech.embedder.similarity_pairs, speech.lemmatize
        judged = evaluate_cases(
            group, run.sut, sut_spec, judge, pairs, lemmatize, limits, corpus, index_corpus=fresh
        )
        verdicts.update((verdict.test_id, verdict) for verdict in judged)
        fresh = False
    return [verdicts[case.id] for case in cases]
