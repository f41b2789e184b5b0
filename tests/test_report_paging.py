"""A run longer than the page's limits: each list shows its first rows with a note naming the
file beside the page that holds them all; a run under the limits has no note."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from cq2a.app import outputs as out
from cq2a.reporting import paging
from cq2a.reporting.report import write_report
from tests.report_run import CONTEXT_B, answer, write_run

NOTE = re.compile(r'<p class="cut-note">(.*?)</p>', re.S)


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """The hand-made run (two tested contexts, two bugs in ctx-a, two heat-map rows) with two
    more contexts that have answers but no accepted test."""
    directory = write_run(tmp_path / "run")
    extra = [
        answer(
            f"{cid}:e0", cid, CONTEXT_B, "Paris", "Paris is the capital of France.", "entity-word"
        )
        for cid in ("ctx-d", "ctx-c")
    ]
    answers = out.read_jsonl(directory / out.ANSWERS)
    out.write_jsonl(directory / out.ANSWERS, [*answers, *(a.model_dump() for a in extra)])
    return directory


@pytest.fixture
def one_row_each(monkeypatch: pytest.MonkeyPatch) -> None:
    for limit in ("MAX_BUGS", "MAX_CONTEXT_VIEWS", "MAX_UNTESTED", "MAX_HEAT_ROWS"):
        monkeypatch.setattr(paging, limit, 1)


@pytest.mark.usefixtures("one_row_each")
def test_each_long_list_shows_its_limit_and_names_the_complete_file(run_dir: Path) -> None:
    html = write_report(run_dir).read_text(encoding="utf-8")
    notes = [" ".join(note.split()) for note in NOTE.findall(html)]
    assert notes == [
        'Showing 1 of 2 bugs; all of them are in <a href="bugs.csv">bugs.csv</a> beside this '
        "page. The filters search the rows shown only.",
        "Showing 1 of 2 contexts in the heat map; all of them are in "
        '<a href="sentence_coverage.csv">sentence_coverage.csv</a> beside this page.',
        "Showing 1 of 2 contexts with accepted tests (those with bugs first); all of them are in "
        '<a href="context_coverage.csv">context_coverage.csv</a> beside this page.',
        "Showing 1 of 2 contexts without accepted tests; all of them are in "
        '<a href="context_coverage.csv">context_coverage.csv</a> beside this page.',
    ]
    bug_table = html[html.index('<table id="bugs">') :]
    bug_table = bug_table[: bug_table.index("</table>")]
    assert bug_table.count('class="bug-row"') == 1 and "Iceland" not in bug_table
    assert html.count('class="heat"') == 1 and html.count('class="context"') == 1
    assert "No accepted tests: ctx-c</p>" in html
    bugs = csv_rows(run_dir / "bugs.csv")
    assert [bug["test_id"] for bug in bugs] == ["a:e0:q0", "a:e1:q0"]
    assert bugs[1]["sut_answer"] == "Iceland" and bugs[1]["question"].startswith("Who was")
    coverage = {row["context_id"]: row for row in csv_rows(run_dir / "context_coverage.csv")}
    assert list(coverage) == ["ctx-a", "ctx-b", "ctx-c", "ctx-d"]
    assert (coverage["ctx-a"]["tests"], coverage["ctx-a"]["bugs"]) == ("2", "2")
    assert coverage["ctx-b"]["coverage"] == "0.4127" and coverage["ctx-c"]["tests"] == "0"
    heat = csv_rows(run_dir / "sentence_coverage.csv")
    assert [row["context_id"] for row in heat] == ["ctx-a", "ctx-b"]


@pytest.mark.usefixtures("one_row_each")
def test_the_context_views_shown_are_those_with_bugs_first(run_dir: Path) -> None:
    bugs = out.read_jsonl(run_dir / out.BUGS)
    bugs[0] |= {"test_id": "b:e0:q0", "context_id": "ctx-b"}
    out.write_jsonl(run_dir / out.BUGS, bugs[:1])
    html = write_report(run_dir).read_text(encoding="utf-8")
    assert re.findall(r'<div class="context" data-context="([^"]*)"', html) == ["ctx-b"]


def test_a_run_under_the_limits_has_no_note_and_every_row(run_dir: Path) -> None:
    html = write_report(run_dir).read_text(encoding="utf-8")
    assert "cut-note" not in html.replace(".cut-note {", "")
    assert html.count('class="bug-row"') == 2 and html.count('class="context"') == 2
    assert "No accepted tests: ctx-c, ctx-d</p>" in html
    assert len(csv_rows(run_dir / "bugs.csv")) == 2
