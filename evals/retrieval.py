"""How often the BM25 index (``cq2a.language.retrieval.PassageIndex``, the built-in ``rag:bm25``
SUT's retriever and the corpus-wide re-ask's) ranks a human question's own passage first, or
in its top 3, over a whole sample read as one corpus: with the stop words of the passages'
detected languages (what runs use) and with English stop words alone (before French corpora
got their own).

    python -m evals.retrieval --data evals/data/piaf_fr_sample.jsonl --part report \\
        [--json OUT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cq2a.language.retrieval import PassageIndex
from evals.parts import PARTS, records_of_part


def hits(index: PassageIndex, questions: list[tuple[str, str]], k: int) -> float:
    """The share of ``(question, passage id)`` pairs whose passage is in the top ``k``."""
    found = sum(any(hit.id == own for hit in index.top(question, k)) for question, own in questions)
    return round(found / max(len(questions), 1), 4)


def measure(data: Path, part: str) -> dict[str, Any]:
    lines = data.read_text(encoding="utf-8").splitlines()
    corpus = [json.loads(line) for line in lines if line.strip()]
    passages = [(record["id"], record["context"]) for record in corpus]
    questions = [
        (qa["question"], record["id"])
        for record in records_of_part(lines, part)  # type: ignore[arg-type]
        for qa in record["qas"]
    ]
    detected = PassageIndex(passages)
    english = PassageIndex(passages, languages=["en"])
    return {
        "data": str(data),
        "part": part,
        "passages": len(passages),
        "questions": len(questions),
        "languages": sorted(detected.languages),
        "detected": {"hit@1": hits(detected, questions, 1), "hit@3": hits(detected, questions, 3)},
        "english_stopwords": {
            "hit@1": hits(english, questions, 1),
            "hit@3": hits(english, questions, 3),
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--part", choices=PARTS, default="report")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = measure(args.data, args.part)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
