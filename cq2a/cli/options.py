"""What the command line's flags make of the settings, and the demo's input and settings."""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path
from typing import Any

from cq2a.settings import DEFAULT_LOCAL_SUT_MODEL, Settings

DEMO_DATA = "squad2_dev_sample.jsonl"
DEMO_OUT = "runs/demo"


def settings_from_args(args: argparse.Namespace, base: Settings | None = None) -> Settings:
    """Settings from the environment, with the command line's flags on top."""
    settings = base or Settings()
    overrides: dict[str, Any] = {}
    simple = {
        "seed": "seed",
        "answers_per_context": "answers_per_context",
        "questions_per_entity": "questions_per_entity",
        "questions_per_relation": "questions_per_relation",
        "concurrency": "concurrency",
        "consistency_threshold": "consistency_threshold",
        "oracle_threshold": "oracle_threshold",
        "judge_threshold": "judge_threshold",
        "max_tokens": "max_tokens",
        "max_cost": "max_cost",
        "price_per_1k_prompt": "price_per_1k_prompt",
        "price_per_1k_completion": "price_per_1k_completion",
        "question_mix": "question_mix",
        "coverage_rounds": "coverage_rounds",
        "answers": "answers",
        "language": "language",
    }
    for arg, field in simple.items():
        if getattr(args, arg, None) is not None:
            overrides[field] = getattr(args, arg)
    if getattr(args, "languages", None):
        overrides["languages"] = args.languages.split(",")
    if getattr(args, "no_relations", False):
        overrides["relations"] = False
    if getattr(args, "no_judge_probe", False):
        overrides["probe_judge"] = False
    for role in ("generator", "reasker", "judge"):
        if args.model:
            overrides[f"{role}.model"] = args.model
        if args.backend:
            overrides[f"{role}.backend"] = args.backend
        if args.base_url:
            overrides[f"{role}.base_url"] = args.base_url
    if args.sut:
        kind, _, model = args.sut.partition(":")
        overrides["sut.kind"] = kind
        if model:
            overrides["sut.model"] = model
    if getattr(args, "sut_input", None):
        overrides["sut.input"] = args.sut_input
    return settings.with_overrides(**overrides) if overrides else settings


def describe_sut(settings: Settings) -> str:
    """What the run tests, said before it starts; the offline default SUT comes with a warning,
    as its bugs say more about a 135M model than about QA software."""
    sut = settings.sut
    where = f" ({sut.backend} server)" if sut.kind == "openai" else ""
    if sut.kind == "rag":
        where = f" (top {sut.top_k} passages to a {sut.backend} reader; the question alone)"
    elif sut.input == "question":
        where += " (the question alone)"
    line = f"software under test: {sut.kind}:{sut.model}{where}"
    if sut.kind == "openai" and sut.backend == "local" and sut.model == DEFAULT_LOCAL_SUT_MODEL:
        line += (
            " - the offline default, a 135M chat model that answers few questions right "
            "(SQuAD F1 0.13 on the shipped sample, evals/README.md#the-default-sut); "
            "pass --sut KIND:MODEL to test yours"
        )
    return line


def demo_input() -> Path:
    """The shipped SQuAD sample: ``data/`` in a checkout, or the package's copy."""
    path = Path(str(resources.files("cq2a"))) / "data" / DEMO_DATA
    if not path.is_file():
        raise FileNotFoundError(f"{DEMO_DATA} is not shipped with this installation")
    return path


def demo_settings(rag: bool = False) -> Settings:
    """The demo keeps the paper's method but asks one question per answer (two per relation),
    so it finishes in minutes on two CPU cores (``cq2a run`` keeps Table I's 5 and 10). Eight
    answers with one question each spread the tests over more answers and every question kind,
    at about the cost of five with two each (evals/README.md#the-demo).

    ``rag``: the SUT is ``rag:bm25``, asked the question alone, retrieving from the whole
    input (the tests come from its first contexts only: a limited run keeps the rest as the
    retriever's corpus), so a bug can be a retrieval miss as well as a reader error."""
    overrides: dict[str, Any] = {
        "answers_per_context": 8,
        "questions_per_entity": 1,
        "questions_per_relation": 2,
    }
    if rag:
        overrides |= {
            "sut.kind": "rag",
            "sut.model": "bm25",
            "sut.input": "question",
        }
    return Settings().with_overrides(**overrides)
