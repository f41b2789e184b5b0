"""The exports of a run directory: SQuAD v2, UnifiedQA and the labelling sheet's sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cq2a.reporting.exports import LABELING_SHEET, SQUAD, UNIFIEDQA, export_all
from tests.report_run import CONTEXT_B, write_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run")


def test_squad_answer_start_points_at_answer(run_dir: Path) -> None:
    export_all(run_dir)
    squad = json.loads((run_dir / SQUAD).read_text(encoding="utf-8"))
    qas = [
        (paragraph["context"], qa)
        for article in squad["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]
    assert len(qas) == 3
    for context, qa in qas:
        gold = qa["answers"][0]
        assert context[gold["answer_start"] :].startswith(gold["text"])
    assert {article["title"] for article in squad["data"]} == {"ctx-a", "ctx-b"}


def test_unifiedqa_has_literal_newline(run_dir: Path) -> None:
    export_all(run_dir)
    lines = (run_dir / UNIFIEDQA).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    source, target = lines[2].split("\t")
    assert source == "what is the capital of france? \\n " + CONTEXT_B.lower()
    assert target == "paris"


def test_labeling_sample_is_seeded_and_capped(run_dir: Path) -> None:
    export_all(run_dir, per_item=1)
    first = (run_dir / LABELING_SHEET).read_text(encoding="utf-8")
    export_all(run_dir, per_item=1)
    assert (run_dir / LABELING_SHEET).read_text(encoding="utf-8") == first
    assert len(first.strip().splitlines()) == 3
