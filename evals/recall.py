"""Extraction recall (RQ3): how many human answers of a QA dataset the extractor proposes.

For every answerable human question of a dataset, the question counts as covered when one of its
human answers matches an answer extracted from its context (no LLM): the same text after
SQuAD-style normalisation, or token F1 >= 0.8. Yes/no datasets (BoolQ) have no span answers and
are reported as not applicable. Recall is given for each answer set (``asked``, the default, and
``paper``, III-A1 alone), for every ranked answer and for the first 12, 25 and 50 of each context
(the default ``Settings.answer_budget`` is 50), and per answer kind within the default budget.
With ``--passages N`` each context is first cut into passages of at most N characters by the
documents' splitter (``cq2a.documents.split``), and each passage gets its own budget, as a run
on a long document does.

    python -m evals.recall --data /work/shared/data/*.jsonl --json evals/results/recall.json
    python -m evals.recall --data narrativeqa_test_sample.jsonl --lines 25-47 --passages 1200
    python -m evals.recall --data evals/data/piaf_fr_sample.jsonl --language fr --part tune
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

from cq2a.language.answers import normalize_yes_no
from cq2a.models.records import Answer, Context
from cq2a.settings import AnswerSet, Settings
from evals.parts import PARTS, Part, records_of_part

SHIPPED = Path(__file__).resolve().parents[1] / "cq2a" / "data" / "squad2_dev_sample.jsonl"
F1_MATCH = 0.8
BUDGETS = (12, 25, 50)
#: Articles the normalisation drops, per language (French elided "l'" included).
_ARTICLES = {
    "en": re.compile(r"\b(a|an|the)\b"),
    "fr": re.compile(r"\b(le|la|les|l|un|une|des)\b"),
}
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ELISION = str.maketrans({"'": " ", "\u2019": " "})


def squad_normalise(text: str, language: str = "en") -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces.
    In French an apostrophe separates an elided article from its word ("l'armée"), as the
    normalisation of French reading-comprehension scores does, instead of being dropped."""
    text = text.lower()
    if language != "en":
        text = text.translate(_ELISION)
    articles = _ARTICLES.get(language, _ARTICLES["en"])
    text = articles.sub(" ", text.translate(_PUNCTUATION))
    return " ".join(text.split())


def token_f1(prediction: str, gold: str, language: str = "en") -> float:
    """SQuAD's token-overlap F1 of two answers (after ``squad_normalise``)."""
    pred = squad_normalise(prediction, language).split()
    ref = squad_normalise(gold, language).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if not common:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_match(gold: str, extracted: list[str], language: str = "en") -> tuple[str, float]:
    """How a human answer is matched by the extracted ones: 'exact', 'f1' or 'none', and F1."""
    key = squad_normalise(gold, language)
    if any(squad_normalise(text, language) == key for text in extracted):
        return "exact", 1.0
    best = max((token_f1(text, gold, language) for text in extracted), default=0.0)
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


class KindRecall(BaseModel):
    """One answer kind within the default budget: how many answers of it a context keeps, and
    the questions it covers (alone, and as the first match in rank order)."""

    per_context: float
    covers: int
    recall: float
    first_match: int


class SetRecall(BaseModel):
    """One answer set (``asked`` or ``paper``) on one dataset."""

    answers: str
    extracted_per_context: float
    all_answers: Coverage
    at_budget: dict[str, Coverage]
    per_kind: dict[str, KindRecall]
    misses: list[dict[str, Any]] = []


class DatasetRecall(BaseModel):
    data: str
    dataset: str
    contexts: int
    part: str = "all"
    language: str = "en"
    passage_chars: int | None = None
    passages_per_context: float = 1.0
    applicable: bool
    reason: str = ""
    questions: int = 0
    budget: int = 0
    sets: list[SetRecall] = []


def read_items(
    path: Path, limit: int | None = None, first: int = 1, part: Part = "all"
) -> list[Item]:
    """The file's contexts from line ``first`` (1-based), or those of ``part`` of a shipped
    sample (``evals.parts``), at most ``limit`` of them."""
    items = []
    lines = path.read_text(encoding="utf-8").splitlines()
    if part != "all":
        rows = records_of_part(lines, part)
    else:
        rows = [json.loads(line) for line in lines[first - 1 :] if line.strip()]
    for row in rows[:limit]:
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


def covered(golds: list[str], texts: list[str], language: str = "en") -> bool:
    return any(best_match(gold, texts, language)[0] != "none" for gold in golds)


def coverage(
    items: list[Item], extracted: list[list[str]], language: str = "en"
) -> tuple[Coverage, list[dict]]:
    """Questions whose human answers the extracted answers cover, and the uncovered ones."""
    exact = f1 = answers = matched = 0
    misses = []
    for item, texts in zip(items, extracted, strict=True):
        for question, golds in zip(item.questions, item.answers, strict=True):
            kinds = [best_match(gold, texts, language) for gold in golds]
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


def per_kind(
    items: list[Item], kept: list[list[Answer]], language: str = "en"
) -> dict[str, KindRecall]:
    """Each answer kind's share of the answers kept within the budget, and of the questions it
    covers."""
    total = sum(len(item.questions) for item in items) or 1
    kinds = sorted({a.kind.value for answers in kept for a in answers})
    result = {}
    for kind in kinds:
        covers = first = 0
        for item, answers in zip(items, kept, strict=True):
            texts = [a.text for a in answers if a.kind.value == kind]
            for golds in item.answers:
                covers += covered(golds, texts, language)
                first_hit = next((a for a in answers if covered(golds, [a.text], language)), None)
                first += first_hit is not None and first_hit.kind.value == kind
        result[kind] = KindRecall(
            per_context=round(
                sum(len([a for a in k if a.kind.value == kind]) for k in kept) / max(len(items), 1),
                1,
            ),  # fmt: skip
            covers=covers,
            recall=round(covers / total, 4),
            first_match=first,
        )
    return result


def passages_of(context: Context, passage_chars: int | None) -> list[Context]:
    """The context whole, or its passages as the documents' splitter cuts them."""
    if passage_chars is None:
        return [context]
    from cq2a.documents.split import passages

    return [
        Context(id=f"{context.id}#{n}", context=context.context[span.start : span.end])
        for n, span in enumerate(passages(context.context, passage_chars))
    ]


def extract_all(
    items: list[Item], answers: AnswerSet, passage_chars: int | None = None, language: str = "en"
) -> list[list[list[Answer]]]:
    """Every entity answer of each passage of each context, in the order a run's budget takes
    them (a context read whole is one passage)."""
    from cq2a.answers.plan import select_entities
    from cq2a.language.parsing import get_parser

    parser = get_parser("spacy", language)
    return [
        [
            select_entities(parser.parse(passage), passage, answers)
            for passage in passages_of(item.context, passage_chars)
        ]
        for item in items
    ]


def within(ranked: list[list[list[Answer]]], budget: int | None) -> list[list[Answer]]:
    """Each context's answers, the first ``budget`` of each of its passages."""
    return [[a for passage in item for a in passage[:budget]] for item in ranked]


def _texts(kept: list[list[Answer]]) -> list[list[str]]:
    return [[a.text for a in answers] for answers in kept]


def set_recall(
    items: list[Item],
    answers: AnswerSet,
    budget: int,
    passage_chars: int | None = None,
    language: str = "en",
) -> SetRecall:
    ranked = extract_all(items, answers, passage_chars, language)
    texts = _texts(within(ranked, None))
    everything, misses = coverage(items, texts, language)
    budgets = sorted({*BUDGETS, budget})
    return SetRecall(
        answers=answers,
        extracted_per_context=round(sum(map(len, texts)) / max(len(items), 1), 1),
        all_answers=everything,
        at_budget={
            str(k): coverage(items, _texts(within(ranked, k)), language)[0] for k in budgets
        },
        per_kind=per_kind(items, within(ranked, budget), language),
        misses=misses[:10],
    )


def dataset_recall(
    path: Path,
    limit: int | None = None,
    budget: int | None = None,
    *,
    first: int = 1,
    passage_chars: int | None = None,
    part: Part = "all",
    language: str = "en",
) -> DatasetRecall:
    """Extraction recall of one dataset file (its ``part``, read in ``language``), for both
    answer sets."""
    items = read_items(path, limit, first, part)
    name = path.stem.split("_")[0]
    count = sum(len(passages_of(item.context, passage_chars)) for item in items)
    base = {
        "data": str(path),
        "dataset": name,
        "contexts": len(items),
        "part": part,
        "language": language,
        "passage_chars": passage_chars,
        "passages_per_context": round(count / max(len(items), 1), 1),
    }
    if is_yes_no_dataset(items):
        reason = "yes/no answers are not spans of the context: span extraction does not apply"
        return DatasetRecall(**base, applicable=False, reason=reason)
    budget = Settings().answer_budget if budget is None else budget
    return DatasetRecall(
        **base,
        applicable=True,
        questions=sum(len(item.questions) for item in items),
        budget=budget,
        sets=[
            set_recall(items, "asked", budget, passage_chars, language),
            set_recall(items, "paper", budget, passage_chars, language),
        ],
    )


def table(results: list[DatasetRecall]) -> str:
    heads = "".join(f"{'@' + str(k):>7}" for k in BUDGETS)
    lines = [f"{'dataset':12} {'answers':7} {'ctx':>4} {'qs':>5} {'ext/ctx':>8} {'all':>7}{heads}"]
    for r in results:
        if not r.applicable:
            lines.append(f"{r.dataset:12} {'':7} {r.contexts:4} {'':>5} n/a: {r.reason}")
            continue
        if r.passage_chars:
            lines.append(
                f"  {r.passages_per_context} passages of <= {r.passage_chars} characters per "
                f"context, each with a budget of {r.budget}"
            )
        for s in r.sets:
            at = "".join(f"{s.at_budget[str(k)].recall:7.3f}" for k in BUDGETS)
            lines.append(
                f"{r.dataset:12} {s.answers:7} {r.contexts:4} {r.questions:5} "
                f"{s.extracted_per_context:8} {s.all_answers.recall:7.3f}{at}"
            )
        kinds = r.sets[0].per_kind
        lines.append(
            f"  asked @{r.budget} by kind (per context, recall, first match): "
            + "; ".join(
                f"{k} {v.per_context} {v.recall:.3f} {v.first_match}" for k, v in kinds.items()
            )
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, nargs="+", default=[SHIPPED])
    parser.add_argument("--limit", type=int, default=None, help="First N contexts per file.")
    parser.add_argument(
        "--budget", type=int, default=None, help="Answers kept per context (default: 50)."
    )
    parser.add_argument(
        "--lines", default=None, help="Only these lines of each file, e.g. 25-47 (1-based)."
    )
    parser.add_argument(
        "--passages",
        type=int,
        default=None,
        metavar="CHARS",
        help="Cut each context into passages of at most CHARS (each with its own budget).",
    )
    parser.add_argument(
        "--part",
        choices=PARTS,
        default="all",
        help="Only this part of a shipped sample (evals/parts.py); not with --lines.",
    )
    parser.add_argument(
        "--language", default="en", help="The passages' language: the parser read (default en)."
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.lines and args.part != "all":
        parser.error("--lines and --part choose the same contexts two ways: give one")
    first, limit = 1, args.limit
    if args.lines:
        start, _, end = args.lines.partition("-")
        first, limit = int(start), int(end) - int(start) + 1
    results = [
        dataset_recall(
            path,
            limit,
            args.budget,
            first=first,
            passage_chars=args.passages,
            part=args.part,
            language=args.language,
        )
        for path in args.data
    ]
    print(table(results))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = [r.model_dump() for r in results]
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
