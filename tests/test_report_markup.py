"""The rendered report.html, read back with the standard HTML parser: what a browser would see."""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from cq2a.app import outputs as out
from cq2a.reporting.report import write_report


class PageReader(HTMLParser):
    """Every ``id`` of a page, and each chart's title with the classes and titles inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.charts: dict[str, list[str]] = {}
        self.chart: list[str] | None = None
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "id" in found:
            self.ids.append(found["id"] or "")
        if found.get("class") == "chart":
            self.chart = []
        elif self.chart is not None and found.get("class"):
            self.chart.append(f"class {found['class']}")
        self.in_title = tag in ("h3", "title")

    def handle_data(self, data: str) -> None:
        if self.chart is not None and self.in_title:
            self.chart.append(data)

    def handle_endtag(self, tag: str) -> None:
        self.in_title = False
        if tag == "svg" and self.chart:
            self.charts[self.chart[0]] = self.chart[1:]
            self.chart = None


def read_page(run: dict[str, Any], tmp_path: Path) -> PageReader:
    out.write_json(tmp_path / out.RUN, run)
    reader = PageReader()
    reader.feed(write_report(tmp_path).read_text(encoding="utf-8"))
    return reader


def test_every_id_in_the_page_is_unique_with_several_warnings(tmp_path: Path) -> None:
    run = {
        "status": "finished",
        "judge_probe": {"passed": False, "detail": "'Iceland' scored 100"},
        "counts": {
            "unjudged": 2,
            "pending": 1,
            "judge_low_confidence": 3,
            "sut_inputs_truncated": 1,
        },
    }
    ids = read_page(run, tmp_path).ids
    assert {"probe-warning", "headline", "bugs", "visible-count"} <= set(ids)
    assert sorted(i for i, n in Counter(ids).items() if n > 1) == []


def test_charts_draw_the_thresholds_run_json_says_were_applied(tmp_path: Path) -> None:
    run = {
        "status": "finished",
        "settings": {
            "consistency_threshold": None,
            "oracle_threshold": None,
            "judge_threshold": 50,
        },
        "thresholds": {"consistency": 0.8, "oracle": 0.6, "judge": 50},
    }
    charts = read_page(run, tmp_path).charts
    assert "threshold 0.8" in charts["Consistency similarity (accepted tests)"]
    assert "threshold 0.6" in charts["Oracle similarity (SUT vs gold)"]
    assert "threshold 50" in charts["Judge scores"]
    assert all("class threshold" in inside for inside in charts.values())


def test_charts_of_an_older_run_draw_the_thresholds_its_settings_set(tmp_path: Path) -> None:
    run = {"settings": {"consistency_threshold": 0.7, "oracle_threshold": None}}
    charts = read_page(run, tmp_path).charts
    assert "threshold 0.7" in charts["Consistency similarity (accepted tests)"]
    assert "class threshold" not in charts["Oracle similarity (SUT vs gold)"]
