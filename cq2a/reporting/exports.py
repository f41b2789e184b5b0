"""Read a run directory back, and export its tests for other tools and for human labelling.

Exports: ``test_cases.csv``, ``bugs.csv`` (every bug, as the report's bugs table shows it),
``squad.json`` (SQuAD v2), ``unifiedqa.tsv`` (UnifiedQA's ``question \\n context`` input,
lower-cased) and ``labeling_sheet.csv``: a seeded sample of bugs
and accepted questions with empty ``label`` (1 true / 0 false) and ``note`` columns, the manual
check behind the paper's true-positive rate and question precision (IV-C).
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from cq2a.app import outputs as out
from cq2a.models.bugs import BugRecord
from cq2a.models.records import Answer, AnswerKind, Candidate, TestCase, Verdict

CSV_TESTS = "test_cases.csv"
CSV_BUGS = "bugs.csv"
SQUAD = "squad.json"
UNIFIEDQA = "unifiedqa.tsv"
LABELING_SHEET = "labeling_sheet.csv"
RecordT = TypeVar("RecordT", bound=BaseModel)
SHEET_COLUMNS = [
    "item",
    "id",
    "context_id",
    "kind",
    "question",
    "gold_answer",
    "sut_answer",
    "judge_score",
    "sentence",
    "source",
    "cause",
    "label",
    "note",
]


class RunData(BaseModel):
    """Everything a run directory holds that the report and exports use."""

    run: dict[str, Any] = Field(default_factory=dict)
    answers: list[Answer] = Field(default_factory=list)
    cases: list[TestCase] = Field(default_factory=list)
    candidates: list[Candidate] = Field(default_factory=list)
    verdicts: list[Verdict] = Field(default_factory=list)
    bugs: list[BugRecord] = Field(default_factory=list)
    skipped: list[dict[str, Any]] = Field(default_factory=list)


def _records(path: Path, model: type[RecordT]) -> list[RecordT]:
    """The file's records, validated line by line as it is read, so a large run's file is never
    held whole as text and as parsed dicts beside its records."""
    if not path.exists():
        return []
    with path.open(encoding="utf-8") as handle:
        return [model.model_validate_json(line) for line in handle if line.strip()]


def load_run(run_dir: Path) -> RunData:
    """Read the final files; every candidate with its attempts comes from ``candidates.jsonl``
    (runs written before it existed: accepted ones from ``partial/``, rejected ones)."""
    run_file = run_dir / out.RUN
    every = _records(run_dir / out.CANDIDATES, Candidate)
    accepted = _records(run_dir / out.PARTIAL / out.ACCEPTED, Candidate)
    rejected = _records(run_dir / out.REJECTED, Candidate)
    by_id = {c.id: c for c in [*accepted, *rejected, *every]}
    return RunData(
        run=out.read_json(run_file) if run_file.exists() else {},
        answers=_records(run_dir / out.ANSWERS, Answer),
        cases=_records(run_dir / out.TEST_CASES, TestCase),
        candidates=list(by_id.values()),
        verdicts=_records(run_dir / out.VERDICTS, Verdict),
        bugs=_records(run_dir / out.BUGS, BugRecord),
        skipped=out.read_jsonl(run_dir / out.SKIPPED),
    )


def answer_start(case: TestCase) -> int:
    """Where the gold answer starts in the context: the recorded offset, else the first match."""
    if case.start is not None and case.context[case.start : case.start + len(case.answer)] == (
        case.answer
    ):
        return case.start
    found = case.context.find(case.answer)
    if found < 0:
        found = case.context.lower().find(case.answer.lower())
    return found


def csv_text(rows: list[dict[str, Any]], columns: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def cases_csv(cases: list[TestCase]) -> str:
    columns = ["id", "context_id", "kind", "question", "answer", "sentence", "start", "end"]
    columns += ["attempts", "similarity", "votes", "explanation"]
    columns += ["source", "source_start", "source_end", "evidence_start", "evidence_end"]
    rows = [case.model_dump(mode="json") | _csv_extras(case) for case in cases]
    return csv_text(rows, columns)


def _csv_extras(case: TestCase) -> dict[str, Any]:
    """The votes in one cell, and where the test's passage and evidence are in its document."""
    extras: dict[str, Any] = {"votes": " | ".join(case.votes), "source": ""}
    if case.source is not None:
        extras |= {
            "source": case.source.label(),
            "source_start": case.source.start,
            "source_end": case.source.end,
        }
    if case.document_evidence:
        evidence = case.document_evidence[0]
        extras |= {"evidence_start": evidence.start, "evidence_end": evidence.end}
    return extras


def squad_json(cases: list[TestCase]) -> dict[str, Any]:
    """SQuAD v2: data -> paragraphs -> context, qas; tests whose answer is not in the text are
    left out, since SQuAD answers are spans."""
    by_context: dict[str, list[TestCase]] = defaultdict(list)
    for case in cases:
        by_context[case.context_id].append(case)
    data = []
    for context_id, group in by_context.items():
        qas = [
            {
                "id": case.id,
                "question": case.question,
                "answers": [{"text": case.answer, "answer_start": start}],
                "is_impossible": False,
            }
            for case in group
            if (start := answer_start(case)) >= 0
        ]
        paragraph = {"context": group[0].context, "qas": qas}
        data.append({"title": context_id, "paragraphs": [paragraph]})
    return {"version": "v2.0", "data": data}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def unifiedqa_tsv(cases: list[TestCase]) -> str:
    """UnifiedQA's extractive format: ``question \\n context`` (a literal backslash-n), TAB,
    answer, all lower-cased."""
    lines = [
        f"{_one_line(case.question)} \\n {_one_line(case.context)}".lower()
        + f"\t{_one_line(case.answer).lower()}\n"
        for case in cases
    ]
    return "".join(lines)


BUG_COLUMNS = ["test_id", "context_id", "kind", "question", "gold_answer", "sut_answer"]
BUG_COLUMNS += ["similarity", "stage", "judge_score", "judge_explanation", "sentence", "source"]
BUG_COLUMNS += ["cause"]


def bugs_csv(bugs: list[BugRecord]) -> str:
    """Every bug with the columns of the report's bugs table, in ``bugs.jsonl`` order: the whole
    list when the page shows only its first rows."""
    rows = [
        bug.model_dump(mode="json", include=set(BUG_COLUMNS))
        | {"source": bug.source.label() if bug.source else "", "cause": bug.cause or ""}
        for bug in bugs
    ]
    return csv_text(rows, BUG_COLUMNS)


def _bug_row(bug: BugRecord) -> dict[str, Any]:
    score = "" if bug.judge_score is None else bug.judge_score
    row = _row("bug", bug.test_id, bug.context_id, bug.kind, bug.question, bug.gold_answer)
    where = bug.source.label() if bug.source else ""
    return {
        **row,
        "sut_answer": bug.sut_answer,
        "judge_score": score,
        "sentence": bug.sentence,
        "source": where,
        "cause": bug.cause or "",
    }


def _question_row(case: TestCase) -> dict[str, Any]:
    row = _row("question", case.id, case.context_id, case.kind, case.question, case.answer)
    return {**row, "sentence": case.sentence, "source": case.source.label() if case.source else ""}


def _row(
    item: str, test_id: str, context_id: str, kind: AnswerKind, question: str, gold: str
) -> dict[str, Any]:
    """The columns a bug and a question share in the labelling sheet, in its column order."""
    return {
        "item": item,
        "id": test_id,
        "context_id": context_id,
        "kind": kind.value,
        "question": question,
        "gold_answer": gold,
    }


def labeling_sheet(data: RunData, per_item: int = 50, seed: int = 0) -> str:
    """A seeded random sample of up to ``per_item`` bugs and ``per_item`` accepted questions."""
    rng = random.Random(seed)
    bugs = rng.sample(data.bugs, min(per_item, len(data.bugs)))
    cases = rng.sample(data.cases, min(per_item, len(data.cases)))
    rows = [_bug_row(b) for b in bugs] + [_question_row(c) for c in cases]
    return csv_text([row | {"label": "", "note": ""} for row in rows], SHEET_COLUMNS)


class LabelSummary(BaseModel):
    """What a filled-in labelling sheet says: true-positive rate of bugs, precision of questions."""

    bugs_labeled: int = 0
    bugs_true: int = 0
    bug_tp_rate: float | None = None
    questions_labeled: int = 0
    questions_valid: int = 0
    question_precision: float | None = None


def _labels(rows: list[dict[str, str]], item: str) -> list[bool]:
    values = [row.get("label", "").strip() for row in rows if row.get("item") == item]
    return [value == "1" for value in values if value in ("0", "1")]


def read_labels(path: Path) -> dict[str, Any]:
    """Read a labelling sheet; rows without a 0/1 label are not counted."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    bugs, questions = _labels(rows, "bug"), _labels(rows, "question")
    summary = LabelSummary(
        bugs_labeled=len(bugs),
        bugs_true=sum(bugs),
        bug_tp_rate=sum(bugs) / len(bugs) if bugs else None,
        questions_labeled=len(questions),
        questions_valid=sum(questions),
        question_precision=sum(questions) / len(questions) if questions else None,
    )
    return summary.model_dump()


def has_labels(path: Path) -> bool:
    if not path.exists():
        return False
    summary = read_labels(path)
    return bool(summary["bugs_labeled"] or summary["questions_labeled"])


def export_all(run_dir: Path, data: RunData | None = None, per_item: int = 50) -> list[Path]:
    """Write every export into the run directory; a labelling sheet with labels is kept."""
    data = data or load_run(run_dir)
    files = {
        CSV_TESTS: cases_csv(data.cases),
        CSV_BUGS: bugs_csv(data.bugs),
        SQUAD: json.dumps(squad_json(data.cases), indent=2, ensure_ascii=False) + "\n",
        UNIFIEDQA: unifiedqa_tsv(data.cases),
    }
    sheet = run_dir / LABELING_SHEET
    if not has_labels(sheet):
        files[LABELING_SHEET] = labeling_sheet(data, per_item, int(data.run.get("seed") or 0))
    for name, text in files.items():
        out.write_atomic(run_dir / name, text)
    return [run_dir / name for name in files]
