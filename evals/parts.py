"""The tune and report parts of the shipped samples (``../shared/data/README.md``): rules and
prompts are tuned on the first, figures reported on the second.

| sample | tune | report |
|---|---|---|
| SQuAD 2.0 dev | articles Normans and 1973_oil_crisis | Harvard_University |
| BoolQ dev | lines 1-25 | lines 26-50 |
| NarrativeQA test | lines 1-24 | lines 25-47 |
| PIAF (French, evals/data/piaf_fr_sample.jsonl) | article Algérie | the other nine articles |
"""

from __future__ import annotations

import json
from typing import Any, Literal

Part = Literal["tune", "report", "all"]
PARTS: tuple[Part, ...] = ("tune", "report", "all")

#: SQuAD's report article; the others of the sample are the tune part
SQUAD_REPORT_TITLE = "Harvard_University"
#: PIAF's tune article; the others of the French sample are the report part
PIAF_TUNE_TITLE = "Algérie"
#: the last line (1-based) of the tune part of the line-split samples
TUNE_LINES = {"boolq": 25, "narrativeqa": 24}


def in_part(record: dict[str, Any], line: int, part: Part) -> bool:
    """Whether the record on (1-based) ``line`` of its sample belongs to ``part``. A record of
    another dataset (a file of the user's) has no parts: only ``all`` takes it, other parts
    raise ``ValueError``."""
    if part == "all":
        return True
    dataset = str(record.get("dataset", "")).lower()
    if "squad" in dataset:
        tune = record.get("title") != SQUAD_REPORT_TITLE
    elif dataset == "piaf":
        tune = record.get("title") == PIAF_TUNE_TITLE
    elif dataset in TUNE_LINES:
        tune = line <= TUNE_LINES[dataset]
    else:
        raise ValueError(
            f"line {line}: dataset {record.get('dataset')!r} has no tune and report parts; "
            "use --part all"
        )
    return tune == (part == "tune")


def records_of_part(lines: list[str], part: Part) -> list[dict[str, Any]]:
    """The JSON records of a sample's lines that belong to ``part``, in file order."""
    records = [(n, json.loads(text)) for n, text in enumerate(lines, start=1) if text.strip()]
    return [record for n, record in records if in_part(record, n, part)]
