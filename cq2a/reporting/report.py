"""``report.html``: one self-contained page (inline CSS, JS and SVG) that shows a run directory.

This module renders: it loads the run, writes the exports beside the page, and lays out the
values of ``page.build_page`` with the Jinja2 templates in ``templates/`` (autoescaped, so no
text from a run reaches the page unescaped).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from cq2a.app import outputs as out
from cq2a.reporting.exports import (
    LABELING_SHEET,
    RunData,
    export_all,
    has_labels,
    load_run,
    read_labels,
)
from cq2a.reporting.formats import percent
from cq2a.reporting.lists import write_lists
from cq2a.reporting.page import build_page

REPORT = "report.html"

TEMPLATES = Environment(
    loader=PackageLoader("cq2a.reporting", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
TEMPLATES.filters["percent"] = percent
TEMPLATES.filters["thousands"] = "{:,}".format


def write_report(run_dir: Path) -> Path:
    """Write the exports, the whole lists the page may cut, and ``report.html`` into
    ``run_dir``; return the report's path."""
    data = load_run(run_dir)
    export_all(run_dir, data)
    write_lists(run_dir, data)
    sheet = run_dir / LABELING_SHEET
    labels = read_labels(sheet) if has_labels(sheet) else None
    path = run_dir / REPORT
    out.write_atomic(path, render_report(data, labels, run_dir.resolve().name))
    return path


def render_report(data: RunData, labels: dict[str, Any] | None, name: str) -> str:
    page = build_page(data, labels, name)
    return TEMPLATES.get_template(REPORT).render(page=page)
