"""Calibrate the "same answer" cosine threshold of an embedding model on human SQuAD answers.

Positives: two different human answers to the same SQuAD 2.0 question ("10th century" /
"the first half of the 10th century"). Hard negatives: the answers of two different questions
about the same context, skipping pairs where one answer contains the other. The paper's 0.75 was
set for SimCSE (III-C2, III-D); other models need their own value.

The chosen threshold is precision-oriented: the smallest one whose precision reaches
``--min-precision`` (default 0.9). Both uses of the threshold pay more for a false "same": in the
consistency check it admits a question whose answer is not the gold answer, and in stage 1 of the
oracle it hides a bug, while a false "different" only costs a re-ask or a judge call. The F1-best
threshold is reported alongside.

    python -m evals.calibrate --model all-MiniLM-L6-v2 --json evals/results/calibration_minilm.json
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from cq2a.language.answers import normalize_answer
from cq2a.language.embeddings import SIMCSE_THRESHOLD, load_embedder

REPO = Path(__file__).resolve().parents[1]
SQUAD = next(
    (
        folder / "squad2_dev_sample.jsonl"
        for folder in (REPO / "data", REPO.parent / "shared" / "data")
        if (folder / "squad2_dev_sample.jsonl").is_file()
    ),
    REPO / "data" / "squad2_dev_sample.jsonl",
)
GRID = [round(0.4 + 0.01 * step, 2) for step in range(56)]


class Pair(BaseModel):
    a: str
    b: str
    same: bool


class Point(BaseModel):
    threshold: float
    precision: float
    recall: float
    f1: float


class Calibration(BaseModel):
    model: str
    data: str
    positives: int
    negatives: int
    rule: str
    paper_threshold: Point
    best_f1: Point
    chosen: Point
    curve: list[Point]


def read_questions(path: Path) -> list[list[list[str]]]:
    """Per context, the distinct answers of each answerable question."""
    contexts = []
    for line in path.read_text(encoding="utf-8").splitlines():
        qas = json.loads(line)["qas"]
        answers = [list(dict.fromkeys(qa["answers"])) for qa in qas if not qa["is_impossible"]]
        contexts.append([group for group in answers if group])
    return contexts


def answer_key(text: str) -> str:
    """Two answers are the same string when they differ only in case and trimming (the pairs
    the threshold was calibrated on; the vote's ``cq2a.language.answers.answer_key`` is looser)."""
    return normalize_answer(text).casefold()


def positive_pairs(contexts: list[list[list[str]]]) -> list[Pair]:
    return [
        Pair(a=a, b=b, same=True)
        for questions in contexts
        for answers in questions
        for a, b in itertools.combinations(answers, 2)
        if answer_key(a) != answer_key(b)
    ]


def negative_pairs(contexts: list[list[list[str]]]) -> list[Pair]:
    """First answers of two questions of one context, unless one contains the other."""
    pairs = []
    for questions in contexts:
        for first, second in itertools.combinations(questions, 2):
            a, b = first[0], second[0]
            ka, kb = answer_key(a), answer_key(b)
            if ka not in kb and kb not in ka:
                pairs.append(Pair(a=a, b=b, same=False))
    return pairs


def point(threshold: float, scores: np.ndarray, labels: np.ndarray) -> Point:
    predicted = scores >= threshold
    true_pos = int((predicted & labels).sum())
    precision = true_pos / max(int(predicted.sum()), 1)
    recall = true_pos / max(int(labels.sum()), 1)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Point(
        threshold=threshold, precision=round(precision, 4), recall=round(recall, 4), f1=round(f1, 4)
    )


def calibrate(model: str, data: Path = SQUAD, min_precision: float = 0.9) -> Calibration:
    contexts = read_questions(data)
    pairs = positive_pairs(contexts) + negative_pairs(contexts)
    embedder = load_embedder(model)
    scores = np.array(embedder.similarity_pairs([p.a for p in pairs], [p.b for p in pairs]))
    labels = np.array([p.same for p in pairs])
    curve = [point(t, scores, labels) for t in GRID]
    precise = [p for p in curve if p.precision >= min_precision]
    chosen = precise[0] if precise else max(curve, key=lambda p: p.precision)
    return Calibration(
        model=model,
        data=str(data),
        positives=int(labels.sum()),
        negatives=int((~labels).sum()),
        rule=f"smallest threshold with precision >= {min_precision}",
        paper_threshold=point(SIMCSE_THRESHOLD, scores, labels),
        best_f1=max(curve, key=lambda p: (p.f1, p.threshold)),
        chosen=chosen,
        curve=curve,
    )


def table(result: Calibration) -> str:
    rows = [("paper (0.75)", result.paper_threshold), ("best F1", result.best_f1)]
    rows.append(("chosen", result.chosen))
    lines = [
        f"{result.model}: {result.positives} positive / {result.negatives} negative pairs",
        f"{'':14} {'thr':>5} {'prec':>6} {'rec':>6} {'F1':>6}",
    ]
    for label, p in rows:
        lines.append(
            f"{label:14} {p.threshold:5.2f} {p.precision:6.3f} {p.recall:6.3f} {p.f1:6.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2")
    parser.add_argument("--data", type=Path, default=SQUAD)
    parser.add_argument("--min-precision", type=float, default=0.9)
    parser.add_argument("--json", type=Path, default=None, help="Write the full result here.")
    args = parser.parse_args(argv)
    result = calibrate(args.model, args.data, args.min_precision)
    print(table(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(result.model_dump_json(indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
