"""RQ1 (paper IV-B, Table IV): bugs reported per answer kind and their true-positive rate.

Counts tests, verdicts and bugs per answer kind; ``--sample`` writes a labelling sheet of a seeded
bug sample (``label``: 1 true bug, 0 false positive); ``--labels`` reads the filled sheet back and
reports the true-positive rate per kind and the estimated true bugs = bugs x TP rate.

    python -m evals.rq1_bugs RUN_DIR --sample 100 --seed 0 --sheet rq1_sheet.csv --json rq1.json
    python -m evals.rq1_bugs RUN_DIR --labels rq1_sheet.csv --json rq1.json
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from evals.runs import (
    KINDS,
    RunData,
    binary_label,
    emit,
    load_run,
    ratio,
    read_sheet,
    seeded_sample,
    snippet,
    table,
    write_sheet,
)

SHEET_COLUMNS = [
    "id",
    "kind",
    "question",
    "gold_answer",
    "sut_answer",
    "judge_score",
    "context_snippet",
    "label",
    "note",
]


def bugs_per_kind(data: RunData) -> dict[str, dict[str, Any]]:
    """Tests, verdicts, bugs and bug rate (bugs / verdicts) per answer kind."""
    tests = Counter(case.kind.value for case in data.cases)
    verdicts = Counter(verdict.kind.value for verdict in data.verdicts)
    bugs = Counter(bug.kind.value for bug in data.bugs)
    return {
        kind: {
            "tests": tests[kind],
            "verdicts": verdicts[kind],
            "bugs": bugs[kind],
            "bug_rate": ratio(bugs[kind], verdicts[kind]),
        }
        for kind in KINDS
    }


def bug_sheet_rows(data: RunData, n: int, seed: int) -> list[dict[str, Any]]:
    """A seeded sample of ``n`` bugs as labelling rows with an empty ``label`` (IV-B)."""
    contexts = {case.id: case.context for case in data.cases}
    rows = []
    for bug in seeded_sample(data.bugs, n, seed):
        context = bug.context or contexts.get(bug.test_id, "")
        rows.append(
            {
                "id": bug.test_id,
                "kind": bug.kind.value,
                "question": bug.question,
                "gold_answer": bug.gold_answer,
                "sut_answer": bug.sut_answer,
                "judge_score": "" if bug.judge_score is None else bug.judge_score,
                "context_snippet": snippet(context, bug.sentence or bug.gold_answer),
            }
        )
    return rows


def true_positives(
    rows: list[dict[str, str]], counts: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """TP rate per kind from labelled rows, and estimated true bugs = bugs x TP rate (Table IV)."""
    result = {}
    for kind in KINDS:
        labels = [binary_label(row.get("label")) for row in rows if row.get("kind") == kind]
        known = [label for label in labels if label is not None]
        rate = ratio(sum(known), len(known))
        bugs = counts.get(kind, {}).get("bugs", 0)
        result[kind] = {
            "labeled": len(known),
            "true": sum(known),
            "tp_rate": rate,
            "bugs": bugs,
            "estimated_true_bugs": None if rate is None else round(bugs * rate),
        }
    return result


def evaluate(
    run_dir: Path,
    sample: int = 0,
    seed: int = 0,
    sheet: Path | None = None,
    labels: Path | None = None,
) -> dict[str, Any]:
    data = load_run(run_dir)
    result: dict[str, Any] = {"run_dir": str(run_dir), "per_kind": bugs_per_kind(data)}
    if sample:
        sheet = sheet or run_dir / "rq1_labeling.csv"
        rows = bug_sheet_rows(data, sample, seed)
        write_sheet(sheet, rows, SHEET_COLUMNS)
        result["sheet"] = {"path": str(sheet), "rows": len(rows), "seed": seed}
    if labels:
        result["labels"] = true_positives(read_sheet(labels), result["per_kind"])
    return result


def render(result: dict[str, Any]) -> str:
    labelled = result.get("labels", {})
    rows = [
        [
            kind,
            c["tests"],
            c["verdicts"],
            c["bugs"],
            c["bug_rate"],
            labelled.get(kind, {}).get("tp_rate"),
            labelled.get(kind, {}).get("estimated_true_bugs"),
        ]
        for kind, c in result["per_kind"].items()
    ]
    header = ["kind", "tests", "verdicts", "bugs", "bug_rate", "TP", "~true_bugs"]
    return table(header, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--sample", type=int, default=0, help="bugs to put on a labelling sheet")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sheet", type=Path, default=None, help="where to write the sheet")
    parser.add_argument("--labels", type=Path, default=None, help="a filled labelling sheet")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = evaluate(args.run_dir, args.sample, args.seed, args.sheet, args.labels)
    emit(result, render(result), args.json)


if __name__ == "__main__":
    main()
