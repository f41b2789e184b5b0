"""Extraction recall (RQ3): how many human answers of a QA dataset the extractor proposes.

For every answerable human question of a dataset, the question counts as covered when one of its
human answers matches an answer extracted from its context (III-A1, no LLM): the same text after
SQuAD-style normalisation, or token F1 >= 0.8. Yes/no datasets (BoolQ) have no span answers and
are reported as not applicable. Recall is given for every extracted answer and for the run's cap
(``Settings.answers_per_context``).

    python -m evals.recall --data /work/shared/data/*.jsonl --json evals/results/recall.json
"""

from __future__ import annotations

import argparse
import json
import re
import string
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cq2a.answers import normalize_yes_no
from cq2a.models import Context
from cq2a.settings import Settings

SHIPPED = Path(__file__).resolve().parents[1] / "cq2a" / "data" / "squad2_dev_sample.jsonl"
F1_MATCH = 0.8
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def squad_normalise(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = _ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION))
    return " ".join(text.split())


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD's token-overlap F1 of two answers (after ``squad_normalise``)."""
    pred, ref = squad_normalise(prediction).split(), squad_normalise(gold).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if not common:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_match(gold: str, extracted: list[str]) -> tuple[str, float]:
    """How a human answer is matched by the extracted ones: 'exact', 'f1' or 'none', and F1."""
    key = squad_normalise(gold)
    if any(squad_normalise(text) == key for text in extracted):
        return "exact", 1.0
    best = max((token_f1(text, gold) for text in extracted), default=0.0)
    return ("f1" if best >= F1_MATCH else "none"), best


class Item(BaseModel):
    """One dataset context with its answerable human questions."""

    context: Context
    questions: list[str]
    answers: list[list[str]]


class Coverage(BaseModel):
    """Questions covered (by an exact or an F1 match of any of their answers), and answers."""

    questions: int
    exact: int
    f1: int
    recall: float
    answers: int
    answers_matched: int
    answer_recall: float


class DatasetRecall(BaseModel):
    data: str
    dataset: str
    contexts: int
    applicable: bool
    reason: str = ""
    questions: int = 0
    extracted_per_context: float = 0.0
    all_answers: Coverage | None = None
    capped: Coverage | None = None
    cap: int = 0
    misses: list[dict[str, Any]] = []


def read_items(path: Path, limit: int | None = None) -> list[Item]:
    items = []
    for line in path.read_text(encoding="utf-8").splitlines()[:limit]:
        row = json.loads(line)
        answerable = [qa for qa in row["qas"] if not qa.get("is_impossible") and qa["answers"]]
        items.append(
            Item(
                context=Context(id=row["id"], context=row["context"]),
                questions=[qa["question"] for qa in answerable],
                answers=[list(dict.fromkeys(qa["answers"])) for qa in answerable],
            )
        )
    return items


def is_yes_no_dataset(items: list[Item]) -> bool:
    """True when every human answer is a yes/no answer (BoolQ)."""
    answers = [a for item in items for group in item.answers for a in group]
    return bool(answers) and all(normalize_yes_no(a) is not None for a in answers)


def coverage(items: list[Item], extracted: list[list[str]]) -> tuple[Coverage, list[dict]]:
    """Questions whose human answers the extracted answers cover, and the uncovered ones."""
    exact = f1 = answers = matched = 0
    misses = []
    for item, texts in zip(items, extracted, strict=True):
        for question, golds in zip(item.questions, item.answers, strict=True):
            kinds = [best_match(gold, texts) for gold in golds]
            answers += len(kinds)
            matched += sum(kind != "none" for kind, _ in kinds)
            if any(kind == "exact" for kind, _ in kinds):
                exact += 1
            elif any(kind == "f1" for kind, _ in kinds):
                f1 += 1
            else:
                best = max(score for _, score in kinds)
                misses.append({"question": question, "answers": golds, "best_f1": round(best, 2)})
    total = sum(len(item.questions) for item in items)
    found = Coverage(
        questions=total,
        exact=exact,
        f1=f1,
        recall=round((exact + f1) / total, 4) if total else 0.0,
        answers=answers,
        answers_matched=matched,
        answer_recall=round(matched / answers, 4) if answers else 0.0,
    )
    return found, misses


def extract_all(items: list[Item]) -> list[list[str]]:
    """Every entity answer (III-A1) of each context, in the extractor's order."""
    from cq2a.extraction import extract_entities
    from cq2a.parsing import get_parser

    parser = get_parser("spacy")
    return [
        [answer.text for answer in extract_entities(parser.parse(item.context), item.context)]
        for item in items
    ]


def dataset_recall(path: Path, limit: int | None = None, cap: int | None = None) -> DatasetRecall:
    """Extraction recall of one dataset file."""
    items = read_items(path, limit)
    name = path.stem.split("_")[0]
    base = {"data": str(path), "dataset": name, "contexts": len(items)}
    if is_yes_no_dataset(items):
        reason = "yes/no answers are not spans of the context: span extraction does not apply"
        return DatasetRecall(**base, applicable=False, reason=reason)
    cap = Settings().answers_per_context if cap is None else cap
    extracted = extract_all(items)
    everything, misses = coverage(items, extracted)
    capped, _ = coverage(items, [texts[:cap] for texts in extracted])
    return DatasetRecall(
        **base,
        applicable=True,
        questions=everything.questions,
        extracted_per_context=round(sum(map(len, extracted)) / max(len(items), 1), 1),
        all_answers=everything,
        capped=capped,
        cap=cap,
        misses=misses[:10],
    )


def table(results: list[DatasetRecall]) -> str:
    lines = [f"{'dataset':12} {'ctx':>4} {'qs':>5} {'ext/ctx':>8} {'recall':>7} {'@cap':>7}"]
    for r in results:
        if not r.applicable:
            lines.append(f"{r.dataset:12} {r.contexts:4} {'':>5} n/a: {r.reason}")
            continue
        assert r.all_answers is not None and r.capped is not None
        lines.append(
            f"{r.dataset:12} {r.contexts:4} {r.questions:5} {r.extracted_per_context:8} "
            f"{r.all_answers.recall:7.3f} {r.capped.recall:7.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, nargs="+", default=[SHIPPED])
    parser.add_argument("--limit", type=int, default=None, help="First N contexts per file.")
    parser.add_argument("--cap", type=int, default=None, help="Answers kept per context.")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    results = [dataset_recall(path, args.limit, args.cap) for path in args.data]
    print(table(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = [r.model_dump() for r in results]
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
