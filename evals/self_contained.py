"""How well ``question_stands_alone`` (the check a SUT that gets the question alone needs)
agrees with hand labels of human questions.

``evals/data/self_contained_labels.jsonl`` holds SQuAD 2.0 dev questions (CC BY-SA 4.0, via
the project's ``squad2_dev_sample.jsonl``), each labelled by hand as self-contained or not,
with a short reason for the "not" ones: part ``tune`` (all questions of the 1973_oil_crisis
and Normans articles, which the rule was developed on) and part ``report`` (the first 200 of
Harvard_University, for the figures; read by hand while the "names nothing" rule was written,
so no longer unseen) and part ``report-unseen`` (the other 62 Harvard questions, labelled by a
reader who had not seen the rule's output, before it ran on them).
``evals/data/self_contained_labels_fr.jsonl`` (``--language fr``) holds the 210 PIAF questions
of ``piaf_fr_sample.jsonl`` (MIT), labelled the same way before the check ran on the report
part: ``tune`` (article Algérie) and ``report`` (the nine others). Each question is checked
with the names of its own passage (``Grounding.names``), as a run checks it. Prints, per
part, the share of self-contained questions the check rejects (target at most 5%) and of the
others it catches (target at least 80%), and the questions it gets wrong.

    python -m evals.self_contained [--language en|fr] [--part report|report-unseen|tune]
        [--json OUT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from cq2a.checks.rules import leaning_words, passage_names
from cq2a.language.deixis import deixis_for
from cq2a.language.parsing import get_parser, question_parser

DATA = Path(__file__).parent / "data"
#: the labels and the sample whose passages they were asked about, per language
LABELS = {
    "en": (
        DATA / "self_contained_labels.jsonl",
        DATA.parent.parent / "cq2a" / "data" / "squad2_dev_sample.jsonl",
    ),
    "fr": (DATA / "self_contained_labels_fr.jsonl", DATA / "piaf_fr_sample.jsonl"),
}


def read_labels(part: str, language: str = "en") -> list[dict[str, Any]]:
    labels, _ = LABELS[language]
    rows = [json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines()]
    return [row for row in rows if row["part"] == part]


def read_passages(language: str) -> dict[str, dict[str, Any]]:
    _, sample = LABELS[language]
    records = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()]
    return {record["id"]: record for record in records}


def measure(rows: list[dict[str, Any]], language: str = "en") -> dict[str, Any]:
    """The check's false rejections and catches on labelled questions."""
    parse = question_parser(get_parser("spacy", language))
    lexicon = deixis_for(language)
    passages = read_passages(language)
    wrong: list[dict[str, Any]] = []
    alone = [row for row in rows if row["self_contained"]]
    leaning = [row for row in rows if not row["self_contained"]]
    rejected_alone = caught = 0
    for row in rows:
        passage = passages[row["context_id"]]
        names = passage_names(passage["context"], passage.get("title"))
        found = leaning_words(parse(row["question"]), lexicon, names)
        if row["self_contained"] and found:
            rejected_alone += 1
            wrong.append({"question": row["question"], "label": "self-contained", "found": found})
        elif not row["self_contained"] and found:
            caught += 1
        elif not row["self_contained"]:
            wrong.append({"question": row["question"], "label": "not", "why": row["reason"]})
    return {
        "questions": len(rows),
        "self_contained": len(alone),
        "not_self_contained": len(leaning),
        "false_rejection_rate": round(rejected_alone / max(len(alone), 1), 4),
        "catch_rate": round(caught / max(len(leaning), 1), 4),
        "wrong": wrong,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", choices=sorted(LABELS), default="en")
    parser.add_argument("--part", choices=["report", "report-unseen", "tune"], default="report")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    rows = read_labels(args.part, args.language)
    if not rows:
        parser.error(f"no {args.language} labels for part {args.part}")
    result = {"language": args.language, "part": args.part, **measure(rows, args.language)}
    for item in result["wrong"]:
        print(f"  {item['label']:>14}: {item['question']}  {item.get('found') or item['why']}")
    print(
        f"{args.language}, part {args.part}: {result['questions']} questions "
        f"({result['self_contained']} self-contained, {result['not_self_contained']} not)\n"
        f"self-contained questions rejected: {result['false_rejection_rate']:.1%} (target <= 5%)\n"
        f"not-self-contained questions caught: {result['catch_rate']:.1%} (target >= 80%)"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
