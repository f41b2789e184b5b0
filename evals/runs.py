"""Shared reading of a run directory for the RQ harnesses (paper section IV).

A run directory is read with ``cq2a.reporting.exports.load_run``; this module adds the views the
research
questions need (every generated question, raw or accepted), labelling sheets with a ``label``
column for a person to fill in, and the JSON/table output every harness shares.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from cq2a.models.records import AnswerKind
from cq2a.reporting.exports import RunData, load_run

__all__ = ["RunData", "load_run"]

T = TypeVar("T")
KINDS = [kind.value for kind in AnswerKind]


class GeneratedQuestion(BaseModel):
    """One generated question (one attempt at a slot) and what filtering did with it."""

    id: str
    context_id: str
    kind: AnswerKind
    question: str
    answer: str
    sentence: str
    accepted: bool
    reasons: list[str]


def generated_questions(data: RunData) -> list[GeneratedQuestion]:
    """Every attempt of every candidate (raw), each marked accepted or with its reasons; accepted
    test cases whose candidate history is missing count as one accepted attempt."""
    found: list[GeneratedQuestion] = []
    for candidate in data.candidates:
        for attempt in candidate.attempts:
            accepted = candidate.status == "accepted" and attempt is candidate.current
            found.append(
                GeneratedQuestion(
                    id=f"{candidate.id}#{attempt.number}",
                    context_id=candidate.context_id,
                    kind=candidate.answer.kind,
                    question=attempt.question,
                    answer=candidate.answer.text,
                    sentence=candidate.answer.sentence,
                    accepted=accepted,
                    reasons=[reason.value for reason in attempt.reasons],
                )
            )
    known = {c.id for c in data.candidates if c.status == "accepted"}
    for case in data.cases:
        if case.id not in known:
            found.append(
                GeneratedQuestion(
                    id=f"{case.id}#{case.attempts}",
                    context_id=case.context_id,
                    kind=case.kind,
                    question=case.question,
                    answer=case.answer,
                    sentence=case.sentence,
                    accepted=True,
                    reasons=[],
                )
            )
    return found


def seeded_sample(items: Sequence[T], n: int, seed: int) -> list[T]:
    """Up to ``n`` items drawn without replacement, reproducibly."""
    return random.Random(seed).sample(list(items), min(n, len(items)))


def snippet(context: str, focus: str, width: int = 200) -> str:
    """``width`` characters of ``context`` either side of ``focus`` (its first occurrence)."""
    at = context.find(focus) if focus else -1
    if at < 0:
        return context[: 2 * width]
    start, end = max(0, at - width), min(len(context), at + len(focus) + width)
    return ("..." if start else "") + context[start:end] + ("..." if end < len(context) else "")


def write_sheet(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    """A CSV labelling sheet; columns missing from a row are left empty."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({column: row.get(column, "") for column in columns} for row in rows)


def read_sheet(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def binary_label(value: str | None) -> bool | None:
    """``1`` -> True, ``0`` -> False, anything else (not labelled yet) -> None."""
    text = (value or "").strip()
    return {"1": True, "0": False}.get(text)


def ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def emit(result: dict[str, Any], table: str, json_path: Path | None) -> None:
    """Print the table; write the result as JSON when asked."""
    print(table)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A plain fixed-width text table."""
    cells = [header] + [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)
