"""RQ3 (paper IV-D, Tables VI and VIII): naturalness and context coverage of accepted questions.

Naturalness: an LLM judge scores each question 0-5 on natural phrasing (CR1), topical clarity (CR2)
and contextual grounding (CR3), each with an explanation (prompts ``naturalness.*``).
Coverage, two ways:

- ``llm``: as the paper does, the LLM gets a context and all its accepted questions and copies,
  per question, the segment of the context it asks about (prompts ``coverage.*``); coverage is
  the length of the union of the segments found in the context (exact, then case-insensitive
  search; segments not found are ignored) over the context length.
- deterministic: the share of context characters inside the sentences accepted tests come from,
  and inside their answer spans.

Coverage figures are means over contexts with at least one accepted test. LLM settings come from
``cq2a.settings.Settings`` (``CQ2A_*`` variables) with ``--model/--backend/--base-url`` for the
judge; ``--sample N`` caps the questions scored and the contexts sent for LLM coverage.

    python -m evals.rq3_quality RUN_DIR --json rq3.json                 # deterministic only
    python -m evals.rq3_quality RUN_DIR --llm --sample 50 --json rq3.json
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from pydantic import BaseModel, Field

from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.prompts import load_prompt, render_prompt
from cq2a.adapters.llm.structured import Malformed
from cq2a.models.records import TestCase
from cq2a.reporting.exports import answer_start
from cq2a.runtime.services import services_for
from cq2a.settings import Settings
from evals.runs import KINDS, emit, load_run, seeded_sample, table

Span = tuple[int, int]
CRITERIA = ("natural_phrasing", "topical_clarity", "contextual_grounding")


class CriterionScore(BaseModel):
    score: int = Field(ge=0, le=5)
    explanation: str


class Naturalness(BaseModel):
    """The judge's scores on the paper's three criteria (IV-D)."""

    natural_phrasing: CriterionScore
    topical_clarity: CriterionScore
    contextual_grounding: CriterionScore

    @property
    def average(self) -> float:
        return mean(getattr(self, name).score for name in CRITERIA)


class SegmentMatch(BaseModel):
    question: int = Field(description="The question's number in the list.")
    segment: str = Field(description="Text copied word for word from the context, or empty.")


class CoverageMatches(BaseModel):
    """Per question, the context segment it asks about (IV-D coverage)."""

    matches: list[SegmentMatch]


# ---- spans ----


def locate(segment: str, context: str) -> Span | None:
    """Where ``segment`` occurs in ``context``: exact match first, then case-insensitive."""
    text = segment.strip()
    if not text:
        return None
    at = context.find(text)
    if at < 0:
        at = context.lower().find(text.lower())
    return (at, at + len(text)) if at >= 0 else None


def union_length(spans: list[Span]) -> int:
    """Characters covered by the union of half-open spans."""
    covered, reach = 0, -1
    for start, end in sorted(spans):
        start = max(start, reach)
        if end > start:
            covered += end - start
            reach = end
    return covered


def covered_share(spans: list[Span], context: str) -> float:
    return union_length(spans) / len(context) if context else 0.0


def by_context(cases: list[TestCase]) -> dict[str, list[TestCase]]:
    grouped: dict[str, list[TestCase]] = defaultdict(list)
    for case in cases:
        grouped[case.context_id].append(case)
    return dict(grouped)


def sentence_coverage(cases: list[TestCase]) -> float:
    """Share of the context inside the sentences the tests' answers come from."""
    context = cases[0].context
    spans = [span for case in cases if (span := locate(case.sentence, context))]
    return covered_share(spans, context)


def answer_coverage(cases: list[TestCase]) -> float:
    """Share of the context inside the tests' answer spans."""
    context = cases[0].context
    spans = []
    for case in cases:
        start = answer_start(case)
        if start >= 0:
            spans.append((start, start + len(case.answer)))
    return covered_share(spans, context)


def deterministic_coverage(cases: list[TestCase]) -> dict[str, Any]:
    groups = by_context(cases)
    if not groups:
        return {"contexts": 0, "sentence_coverage": None, "answer_coverage": None}
    return {
        "contexts": len(groups),
        "sentence_coverage": round(mean(sentence_coverage(g) for g in groups.values()), 4),
        "answer_coverage": round(mean(answer_coverage(g) for g in groups.values()), 4),
    }


# ---- LLM parts ----


def rate_naturalness(judge: ChatClient, case: TestCase) -> Naturalness | None:
    """The judge's three 0-5 scores for one question; None if its reply stays malformed."""
    user = render_prompt(
        "naturalness.user", context=case.context, question=case.question, answer=case.answer
    )
    replies = judge.structured(load_prompt("naturalness.system"), user, Naturalness)
    return None if isinstance(replies[0], Malformed) else replies[0]


def llm_coverage(judge: ChatClient, cases: list[TestCase]) -> float | None:
    """Coverage of one context by the segments the LLM matches to its questions (IV-D)."""
    context = cases[0].context
    numbered = "\n".join(f"{i}. {case.question}" for i, case in enumerate(cases, 1))
    user = render_prompt("coverage.user", context=context, questions=numbered)
    replies = judge.structured(load_prompt("coverage.system"), user, CoverageMatches)
    if isinstance(replies[0], Malformed):
        return None
    spans = [span for m in replies[0].matches if (span := locate(m.segment, context))]
    return covered_share(spans, context)


def naturalness_summary(scored: list[tuple[TestCase, Naturalness]]) -> dict[str, Any]:
    """Mean CR1-CR3 and their average, per kind and overall (Table VI)."""
    result = {}
    for kind in [*KINDS, "all"]:
        mine = [n for case, n in scored if kind in ("all", case.kind.value)]
        result[kind] = {
            "n": len(mine),
            **{
                name: round(mean(getattr(n, name).score for n in mine), 3) if mine else None
                for name in CRITERIA
            },
            "average": round(mean(n.average for n in mine), 3) if mine else None,
        }
    return result


def llm_evaluation(
    cases: list[TestCase], judge: ChatClient, sample: int, seed: int
) -> dict[str, Any]:
    chosen = seeded_sample(cases, sample, seed) if sample else cases
    rated = [(case, rate_naturalness(judge, case)) for case in chosen]
    scored = [(case, n) for case, n in rated if n is not None]
    groups = list(by_context(cases).values())
    groups = seeded_sample(groups, sample, seed) if sample else groups
    shares = [share for g in groups if (share := llm_coverage(judge, g)) is not None]
    return {
        "naturalness": naturalness_summary(scored),
        "naturalness_malformed": len(rated) - len(scored),
        "scores": [
            {"id": case.id, "kind": case.kind.value, **n.model_dump()} for case, n in scored
        ],
        "llm_coverage": {
            "contexts": len(shares),
            "malformed": len(groups) - len(shares),
            "coverage": round(mean(shares), 4) if shares else None,
        },
    }


def judge_client(settings: Settings) -> ChatClient:
    return services_for(settings, "rq3").llm.judge


def evaluate(
    run_dir: Path, settings: Settings | None = None, sample: int = 0, seed: int = 0
) -> dict[str, Any]:
    """Deterministic coverage always; the LLM parts when ``settings`` is given."""
    cases = load_run(run_dir).cases
    result: dict[str, Any] = {
        "run_dir": str(run_dir),
        "accepted_tests": len(cases),
        "coverage": deterministic_coverage(cases),
    }
    if settings is not None and cases:
        result |= llm_evaluation(cases, judge_client(settings), sample, seed)
    return result


def render(result: dict[str, Any]) -> str:
    cov = result["coverage"]
    lines = [
        f"accepted tests: {result['accepted_tests']}, contexts: {cov['contexts']}",
        f"sentence coverage: {cov['sentence_coverage']}  answer-span coverage: "
        f"{cov['answer_coverage']}",
    ]
    if "llm_coverage" in result:
        lines.append(f"LLM segment coverage: {result['llm_coverage']['coverage']}")
        rows = [
            [kind, s["n"], *(s[name] for name in CRITERIA), s["average"]]
            for kind, s in result["naturalness"].items()
        ]
        lines.append(table(["kind", "n", "CR1", "CR2", "CR3", "avg"], rows))
    return "\n".join(lines)


def settings_from(args: argparse.Namespace) -> Settings:
    settings = Settings()
    judge = settings.judge.model_copy(
        update={
            k: v
            for k, v in {
                "model": args.model,
                "backend": args.backend,
                "base_url": args.base_url,
            }.items()
            if v is not None
        }
    )
    return settings.model_copy(update={"judge": judge})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--llm", action="store_true", help="also run the LLM judge parts")
    parser.add_argument("--model", default=None)
    parser.add_argument("--backend", default=None)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--sample", type=int, default=0, help="cap on questions and contexts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    wants_llm = args.llm or any((args.model, args.backend, args.base_url))
    settings = settings_from(args) if wants_llm else None
    result = evaluate(args.run_dir, settings, args.sample, args.seed)
    emit(result, render(result), args.json)


if __name__ == "__main__":
    main()
