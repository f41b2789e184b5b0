"""Everything ``report.html`` shows, as values: ``build_page`` turns a loaded run directory into
a ``Page`` that the templates only lay out. Also the bugs table's rows and the suite figures."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from cq2a.coverage.diversity import SuiteFigures
from cq2a.models.bugs import BugRecord
from cq2a.reporting.charts import Chart, charts
from cq2a.reporting.contexts import SPAN_KINDS, Contexts, contexts
from cq2a.reporting.exports import RunData
from cq2a.reporting.funnel import STAGES, FunnelRow, Reasons, funnel_rows, reasons
from cq2a.reporting.headline import Alert, Card, Header, alerts, cards, header


class BugRow(BaseModel):
    """A bug as the table shows it; ``search`` is the lower-cased text the filter box matches."""

    bug: BugRecord
    score: str
    search: str


class Page(BaseModel):
    title: str
    header: Header
    alerts: list[Alert]
    cards: list[Card]
    stages: list[str]
    funnel: list[FunnelRow]
    reasons: Reasons
    charts: list[Chart]
    bugs: list[BugRow]
    bug_kinds: list[str]
    suite: SuiteFigures | None
    contexts: Contexts
    span_kinds: list[str]


def bug_row(bug: BugRecord) -> BugRow:
    searched = [bug.question, bug.gold_answer, bug.sut_answer, bug.judge_explanation or ""]
    source = bug.source.label() if bug.source else ""
    return BugRow(
        bug=bug,
        score="–" if bug.judge_score is None else str(bug.judge_score),
        search=" ".join([*searched, bug.context_id, source]).lower(),
    )


def suite(run: dict[str, Any]) -> SuiteFigures | None:
    """The question mix chosen against achieved, and the suite's diversity (run.json
    ``figures``); none for a run without them (an older run, or ``cq2a test``) or whose figures
    have an older layout."""
    figures = run.get("figures") or {}
    if not figures.get("mix") or not figures.get("diversity"):
        return None
    try:
        return SuiteFigures.model_validate(figures)
    except ValidationError:
        return None


def build_page(data: RunData, labels: dict[str, Any] | None, name: str) -> Page:
    return Page(
        title=f"CQ2A report · {name}",
        header=header(data, name),
        alerts=alerts(data),
        cards=cards(data, labels),
        stages=[label for _, label in STAGES],
        funnel=funnel_rows(data),
        reasons=reasons(data),
        charts=charts(data),
        bugs=[bug_row(bug) for bug in data.bugs],
        bug_kinds=sorted({bug.kind.value for bug in data.bugs}),
        suite=suite(data.run),
        contexts=contexts(data),
        span_kinds=SPAN_KINDS,
    )
