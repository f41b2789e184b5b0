"""How well a software under test answers human-written questions: SQuAD exact match and F1.

Asks the SUT every answerable human question of a dataset file (the project's JSONL with
``qas``) through the adapter a run uses (``cq2a.adapters.sut.build_sut``, so the same prompt and
the same
local server), and scores each answer against the best of the human answers (SQuAD's
normalisation and token F1). A demo whose SUT answers few questions right reports bugs that say
nothing about QA software; this is how the offline default SUT is chosen.

    python -m evals.sut_quality --sut openai:smollm2-135m-instruct \
        --json evals/results/sut_quality.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from cq2a.adapters.sut.base import SUTQuery
from cq2a.runtime.services import services_for
from cq2a.settings import Settings
from evals.recall import squad_normalise, token_f1
from evals.runs import emit

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO / "cq2a" / "data" / "squad2_dev_sample.jsonl"


def questions(path: Path, limit: int | None) -> list[tuple[SUTQuery, list[str]]]:
    """``(query, human answers)`` for each answerable question, in file order."""
    found = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        for qa in record.get("qas", []):
            if qa.get("answers") and not qa.get("is_impossible"):
                query = SUTQuery(context=record["context"], question=qa["question"])
                found.append((query, qa["answers"]))
    return found[:limit]


def score(answer: str, golds: list[str]) -> tuple[float, float]:
    """SQuAD exact match and F1 of one answer against its best human answer."""
    exact = float(any(squad_normalise(answer) == squad_normalise(gold) for gold in golds))
    return exact, max(token_f1(answer, gold) for gold in golds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sut", default=None, help="KIND:MODEL (default: the offline default)")
    parser.add_argument("--data", type=Path, default=SQUAD)
    parser.add_argument("--limit", type=int, default=None, help="first N questions only")
    parser.add_argument("--samples", type=int, default=8, help="answers to print")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    settings = Settings()
    if args.sut:
        kind, _, model = args.sut.partition(":")
        settings = settings.with_overrides(**{"sut.kind": kind, "sut.model": model})
    items = questions(args.data, args.limit)
    sut = services_for(settings).sut
    started = time.perf_counter()
    answers = sut.answer([query for query, _ in items])
    seconds = time.perf_counter() - started
    scores = [score(answer, golds) for answer, (_, golds) in zip(answers, items, strict=True)]
    report: dict[str, Any] = {
        "sut": f"{settings.sut.kind}:{settings.sut.model}",
        "data": str(args.data.relative_to(REPO) if args.data.is_relative_to(REPO) else args.data),
        "questions": len(items),
        "exact_match": round(sum(e for e, _ in scores) / len(scores), 3),
        "f1": round(sum(f for _, f in scores) / len(scores), 3),
        "seconds": round(seconds, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "samples": [
            {"question": q.question, "gold": golds, "answer": a, "f1": round(f, 2)}
            for (q, golds), a, (_, f) in list(zip(items, answers, scores, strict=True))[
                : args.samples
            ]
        ],
    }
    emit(report, json.dumps(report, indent=2), args.json)


if __name__ == "__main__":
    main()
