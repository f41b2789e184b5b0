"""RQ2 (paper IV-C, Tables V and VII): what filtering removes and how precise the questions are.

Raw = every generated question (every attempt of every slot; attempts that produced no question
are counted apart as ``no_question``); filtered = the accepted ones. Per
answer kind: raw and filtered counts, the rejections of each constraint check (III-C1) and of the
consistency step (III-C2, ``inconsistent_answer``) separately. ``--sample N`` writes a labelling
sheet of N raw and N filtered questions per kind: ``label`` 1 correct / 0 not, and ``violation``
CV (content faithfulness), IV (instructional faithfulness) or none (Table V). ``--labels`` reads it
back: precision raw vs filtered (Table VII) and CV/IV rates.

    python -m evals.rq2_filtering RUN_DIR --sample 100 --seed 0 --sheet rq2_sheet.csv
    python -m evals.rq2_filtering RUN_DIR --labels rq2_sheet.csv --json rq2.json
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from cq2a.models.records import RejectReason
from evals.runs import (
    KINDS,
    GeneratedQuestion,
    binary_label,
    emit,
    generated_questions,
    load_run,
    ratio,
    read_sheet,
    seeded_sample,
    table,
    write_sheet,
)

CONSISTENCY = RejectReason.INCONSISTENT.value
VIOLATIONS = ("CV", "IV", "none")
SHEET_COLUMNS = [
    "set",
    "id",
    "kind",
    "context_id",
    "sentence",
    "answer",
    "question",
    "label",
    "violation",
    "note",
]


def funnel(questions: list[GeneratedQuestion]) -> dict[str, dict[str, Any]]:
    """Per kind: raw and filtered counts, rejections per check reason and by consistency."""
    result = {}
    for kind in KINDS:
        every = [q for q in questions if q.kind.value == kind]
        mine = [q for q in every if q.question.strip()]
        reasons = Counter(reason for q in mine for reason in q.reasons)
        consistency = reasons.pop(CONSISTENCY, 0)
        filtered = sum(q.accepted for q in mine)
        result[kind] = {
            "raw": len(mine),
            "filtered": filtered,
            "kept_share": ratio(filtered, len(mine)),
            "removed_by_checks": dict(reasons.most_common()),
            "rejected_by_checks": sum(bool(set(q.reasons) - {CONSISTENCY}) for q in mine),
            "inconsistent_answer": consistency,
            "no_question": len(every) - len(mine),
        }
    return result


def _row(question: GeneratedQuestion, which: str) -> dict[str, Any]:
    return question.model_dump(mode="json") | {"set": which}


def sheet_rows(questions: list[GeneratedQuestion], n: int, seed: int) -> list[dict[str, Any]]:
    """Up to ``n`` raw and ``n`` filtered questions per kind, seeded (IV-C)."""
    rows = []
    for kind in KINDS:
        mine = [q for q in questions if q.kind.value == kind and q.question.strip()]
        raw = seeded_sample(mine, n, seed)
        filtered = seeded_sample([q for q in mine if q.accepted], n, seed)
        rows += [_row(q, "raw") for q in raw] + [_row(q, "filtered") for q in filtered]
    return rows


def _rates(rows: list[dict[str, str]]) -> dict[str, Any]:
    labelled = [(binary_label(r.get("label")), r.get("violation", "").strip()) for r in rows]
    known = [(label, violation) for label, violation in labelled if label is not None]
    return {
        "labeled": len(known),
        "correct": sum(label for label, _ in known),
        "precision": ratio(sum(label for label, _ in known), len(known)),
        "cv_rate": ratio(sum(v.upper() == "CV" for _, v in known), len(known)),
        "iv_rate": ratio(sum(v.upper() == "IV" for _, v in known), len(known)),
    }


def labelled_precision(rows: list[dict[str, str]]) -> dict[str, dict[str, Any]]:
    """Precision and CV/IV rates per kind, raw vs filtered (Tables V and VII)."""
    return {
        kind: {
            which: _rates([r for r in rows if r.get("kind") == kind and r.get("set") == which])
            for which in ("raw", "filtered")
        }
        for kind in KINDS
    }


def evaluate(
    run_dir: Path,
    sample: int = 0,
    seed: int = 0,
    sheet: Path | None = None,
    labels: Path | None = None,
) -> dict[str, Any]:
    questions = generated_questions(load_run(run_dir))
    result: dict[str, Any] = {"run_dir": str(run_dir), "per_kind": funnel(questions)}
    if sample:
        sheet = sheet or run_dir / "rq2_labeling.csv"
        rows = sheet_rows(questions, sample, seed)
        write_sheet(sheet, rows, SHEET_COLUMNS)
        result["sheet"] = {"path": str(sheet), "rows": len(rows), "seed": seed}
    if labels:
        result["labels"] = labelled_precision(read_sheet(labels))
    return result


def render(result: dict[str, Any]) -> str:
    rows = []
    for kind, c in result["per_kind"].items():
        checks = ", ".join(f"{k}={v}" for k, v in c["removed_by_checks"].items()) or "-"
        lab = result.get("labels", {}).get(kind, {})
        raw, filtered = lab.get("raw", {}), lab.get("filtered", {})
        rows.append(
            [
                kind,
                c["raw"],
                c["filtered"],
                checks,
                c["inconsistent_answer"],
                raw.get("precision"),
                filtered.get("precision"),
            ]
        )
    header = ["kind", "raw", "filtered", "check rejections", "inconsistent", "P_raw", "P_filt"]
    return table(header, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--sample", type=int, default=0, help="raw and filtered questions per kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sheet", type=Path, default=None)
    parser.add_argument("--labels", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = evaluate(args.run_dir, args.sample, args.seed, args.sheet, args.labels)
    emit(result, render(result), args.json)


if __name__ == "__main__":
    main()
