"""The lists the page may show only part of, written whole beside it: ``context_coverage.csv``
(every context's tests, bugs and covered share) and, for a run with suite figures,
``sentence_coverage.csv`` (the heat map's rows). Every bug is in ``bugs.csv`` (``exports``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cq2a.app import outputs as out
from cq2a.reporting.contexts import COVERAGE_COLUMNS, coverage_rows
from cq2a.reporting.exports import RunData, csv_text
from cq2a.reporting.page import suite
from cq2a.reporting.paging import CONTEXT_COVERAGE, SENTENCE_COVERAGE

SENTENCE_COLUMNS = ["context_id", "tests", "sentences", "covered_sentences", "coverage"]


def sentence_rows(run: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The heat map's rows: each context's sentences and the covered ones (numbered from 1, as
    the page's cells are); none for a run without suite figures."""
    figures = suite(run)
    if figures is None:
        return None
    return [
        {
            "context_id": row.context_id,
            "tests": row.tests,
            "sentences": row.sentences,
            "covered_sentences": " ".join(str(i + 1) for i in row.covered_sentences),
            "coverage": row.coverage,
        }
        for row in figures.diversity.per_context
    ]


def write_lists(run_dir: Path, data: RunData) -> list[Path]:
    """Write the whole lists beside the page; return their paths."""
    files = {CONTEXT_COVERAGE: csv_text(coverage_rows(data), COVERAGE_COLUMNS)}
    heat = sentence_rows(data.run)
    if heat is not None:
        files[SENTENCE_COVERAGE] = csv_text(heat, SENTENCE_COLUMNS)
    for name, text in files.items():
        out.write_atomic(run_dir / name, text)
    return [run_dir / name for name in files]
