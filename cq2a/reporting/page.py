"""Everything ``report.html`` shows, as values: ``build_page`` turns a loaded run directory into
a ``Page`` that the templates only lay out. Also the bugs table's rows, the bugs by cause and
the suite figures.

Lists that grow with the run are cut to ``paging``'s limits, each with a ``Cut`` the page notes
when rows are left out: the bugs table keeps the first ``MAX_BUGS`` bugs in ``bugs.jsonl`` order
(the order the run found them), the heat map the first ``MAX_HEAT_ROWS`` contexts. The cards,
funnel, reasons, charts and cause bar are computed over every record."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ValidationError

from cq2a.coverage.diversity import SuiteFigures
from cq2a.coverage.steering import CUT_BACK_AFTER
from cq2a.models.bugs import BugRecord
from cq2a.models.records import BugCause
from cq2a.reporting import paging
from cq2a.reporting.charts import Chart, charts
from cq2a.reporting.contexts import SPAN_KINDS, Contexts, contexts
from cq2a.reporting.exports import CSV_BUGS, RunData
from cq2a.reporting.funnel import STAGES, FunnelRow, Reasons, funnel_rows, reasons
from cq2a.reporting.headline import Alert, Card, Header, alerts, cards, header
from cq2a.reporting.paging import CONTEXT_COVERAGE, SENTENCE_COVERAGE, Cut


class BugRow(BaseModel):
    """A bug as the table shows it; ``search`` is the lower-cased text the filter box matches."""

    bug: BugRecord
    score: str
    search: str


class CauseBar(BaseModel):
    """One segment of the bugs-by-cause bar: a cause, its bugs, and where it lies in the bar
    (SVG user units, ``CAUSE_BAR_WIDTH`` wide)."""

    cause: BugCause
    label: str
    count: int
    x: float
    width: float


CAUSE_BAR_WIDTH = 600
CAUSE_LABELS: dict[BugCause, str] = {
    "retrieval_miss": "retrieval misses",
    "reader_error": "reader errors",
    "unknown": "unknown (no passages named)",
}


def cause_bars(bugs: list[BugRecord]) -> list[CauseBar]:
    """The bugs of a SUT that retrieves its own passages, by cause; none for one that reads
    the test's passage (its bugs have no cause)."""
    counts = Counter(bug.cause for bug in bugs if bug.cause is not None)
    total, bars, x = sum(counts.values()), [], 0.0
    for cause, label in CAUSE_LABELS.items():
        if counts[cause]:
            width = CAUSE_BAR_WIDTH * counts[cause] / total
            bars.append(CauseBar(cause=cause, label=label, count=counts[cause], x=x, width=width))
            x += width
    return bars


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
    bug_causes: list[CauseBar]
    cause_bar_width: int = CAUSE_BAR_WIDTH
    suite: SuiteFigures | None
    #: Question kinds that stopped taking slots, and in how many contexts (run.json counts).
    cut_back: dict[str, int]
    cut_back_after: int = CUT_BACK_AFTER
    contexts: Contexts
    span_kinds: list[str]
    bugs_cut: Cut
    heat_cut: Cut | None
    views_cut: Cut
    untested_cut: Cut


def bug_row(bug: BugRecord) -> BugRow:
    searched = [bug.question, bug.gold_answer, bug.sut_answer, bug.judge_explanation or ""]
    searched += [bug.cause] if bug.cause else []
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


def shown_suite(figures: SuiteFigures | None) -> SuiteFigures | None:
    """The suite figures with the heat map's first ``MAX_HEAT_ROWS`` contexts."""
    if figures is None:
        return None
    spread = figures.diversity
    rows = paging.first(spread.per_context, paging.MAX_HEAT_ROWS)
    return figures.model_copy(update={"diversity": spread.model_copy(update={"per_context": rows})})


def heat_cut(figures: SuiteFigures | None) -> Cut | None:
    if figures is None:
        return None
    total = len(figures.diversity.per_context)
    shown = min(total, paging.MAX_HEAT_ROWS)
    return paging.cut("contexts in the heat map", shown, total, SENTENCE_COVERAGE)


def context_cuts(found: Contexts) -> tuple[Cut, Cut]:
    """The notes of the context views and of the untested contexts' line."""
    views = paging.cut(
        "contexts with accepted tests (those with bugs first)",
        len(found.views),
        found.tested_total,
        CONTEXT_COVERAGE,
    )
    untested = paging.cut(
        "contexts without accepted tests",
        len(found.untested),
        found.untested_total,
        CONTEXT_COVERAGE,
    )
    return views, untested


def build_page(data: RunData, labels: dict[str, Any] | None, name: str) -> Page:
    shown_bugs = [bug_row(bug) for bug in paging.first(data.bugs, paging.MAX_BUGS)]
    figures = suite(data.run)
    found = contexts(data)
    views_cut, untested_cut = context_cuts(found)
    return Page(
        title=f"CQ2A report · {name}",
        header=header(data, name),
        alerts=alerts(data),
        cards=cards(data, labels),
        stages=[label for _, label in STAGES],
        funnel=funnel_rows(data),
        reasons=reasons(data),
        charts=charts(data),
        bugs=shown_bugs,
        bug_kinds=sorted({row.bug.kind.value for row in shown_bugs}),
        bug_causes=cause_bars(data.bugs),
        suite=shown_suite(figures),
        cut_back=(data.run.get("counts") or {}).get("kinds_cut_back") or {},
        contexts=found,
        span_kinds=SPAN_KINDS,
        bugs_cut=paging.cut("bugs", len(shown_bugs), len(data.bugs), CSV_BUGS, filtered=True),
        heat_cut=heat_cut(figures),
        views_cut=views_cut,
        untested_cut=untested_cut,
    )
