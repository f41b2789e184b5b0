"""``report.html``: one self-contained page (inline CSS, JS and SVG) that shows a run directory.

It shows the headline numbers, the funnel from extracted answers (III-A) through generated and
checked questions (III-B, III-C) to accepted tests and bugs (III-D), why questions were
rejected, the similarity and judge-score distributions, what each context's tests cover, and
the bugs with their evidence.
"""

from __future__ import annotations

from collections import Counter
from html import escape
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from pydantic import BaseModel

from cq2a.app import outputs as out
from cq2a.models.records import AnswerKind, Attempt, RejectReason, TestCase
from cq2a.reporting.exports import (
    LABELING_SHEET,
    BugRecord,
    RunData,
    export_all,
    has_labels,
    load_run,
    read_labels,
)

REPORT = "report.html"
NO_TESTS = '<p class="empty">No accepted tests.</p>'
KINDS = [kind.value for kind in AnswerKind]
#: The kinds whose answer is a span the context view marks (yes/no and unanswerable are not).
SPAN_KINDS = [k.value for k in AnswerKind if k.question_kind not in ("yesno", "unanswerable")]
STAGES = [
    ("answers", "Extracted answers"),
    ("generated", "Questions generated"),
    ("passed_checks", "Passed checks"),
    ("consistent", "Passed consistency"),
    ("accepted", "Accepted tests"),
    ("bugs", "Bugs"),
]


def e(value: Any) -> str:
    return escape(str(value), quote=True)


def write_report(run_dir: Path) -> Path:
    """Write the exports and ``report.html`` into ``run_dir``; return the report's path."""
    data = load_run(run_dir)
    export_all(run_dir, data)
    sheet = run_dir / LABELING_SHEET
    labels = read_labels(sheet) if has_labels(sheet) else None
    path = run_dir / REPORT
    out.write_atomic(path, render_report(data, labels, run_dir.resolve().name))
    return path


def render_report(data: RunData, labels: dict[str, Any] | None, name: str) -> str:
    template = Template(
        resources.files("cq2a.reporting").joinpath("templates/report.html").read_text()
    )
    parts = [
        header_html(data, name),
        alerts_html(data),
        cards_html(data, labels),
        funnel_html(funnel_rows(data)),
        reasons_html(data),
        charts_html(data),
        bugs_html(data),
        suite_html(data),
        contexts_html(data),
    ]
    return template.substitute(title=e(f"CQ2A report · {name}"), body="\n".join(parts))


# ---- numbers ----


def counts(data: RunData) -> dict[str, Any]:
    return dict(data.run.get("counts") or {})


def n_contexts(data: RunData) -> int:
    found = {a.context_id for a in data.answers} | {c.context_id for c in data.cases}
    return int(counts(data).get("contexts", len(found)))


def n_generated(data: RunData) -> int:
    return sum(row.generated for row in funnel_rows(data) if row.kind == "all")


def bug_rate(data: RunData) -> float | None:
    tested = len(data.verdicts) or len(data.cases)
    return len(data.bugs) / tested if tested else None


def percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes, rest = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {rest:02d}s" if minutes else f"{seconds:.1f}s"


# ---- funnel ----


class FunnelRow(BaseModel):
    kind: str
    answers: int = 0
    generated: int = 0
    passed_checks: int = 0
    consistent: int = 0
    accepted: int = 0
    bugs: int = 0


def passed_checks(attempt: Attempt) -> bool:
    """The question passed every validity check (III-C1)."""
    return bool(attempt.checks) and all(check.passed for check in attempt.checks)


def passed_consistency(attempt: Attempt) -> bool:
    """The re-asked majority answer matched the target (III-C2)."""
    return (
        passed_checks(attempt)
        and attempt.similarity is not None
        and RejectReason.INCONSISTENT not in attempt.reasons
    )


def funnel_rows(data: RunData) -> list[FunnelRow]:
    """One row per answer kind plus an ``all`` row; accepted tests without their candidate
    record count as one attempt that passed everything."""
    rows = {kind: FunnelRow(kind=kind) for kind in [*KINDS, "all"]}
    known = {c.id for c in data.candidates}
    for answer in data.answers:
        rows[answer.kind.value].answers += 1
    for candidate in data.candidates:
        row = rows[candidate.answer.kind.value]
        row.generated += sum(a.generated for a in candidate.attempts)
        row.passed_checks += sum(passed_checks(a) for a in candidate.attempts)
        row.consistent += sum(passed_consistency(a) for a in candidate.attempts)
    for case in data.cases:
        row = rows[case.kind.value]
        row.accepted += 1
        if case.id not in known:
            row.generated += case.attempts
            row.passed_checks += 1
            row.consistent += 1
    for bug in data.bugs:
        rows[bug.kind.value].bugs += 1
    total = rows["all"]
    for name, _ in STAGES:
        setattr(total, name, sum(getattr(rows[kind], name) for kind in KINDS))
    return [row for row in rows.values() if row.kind == "all" or row.answers or row.generated]


# ---- html pieces ----


def kind_badge(kind: str) -> str:
    return f'<span class="kind {e(kind)}">{e(kind)}</span>'


def bar(value: float, top: float, label: str, color: str = "") -> str:
    """A number with a horizontal bar whose length is ``value`` relative to ``top``."""
    width = 100 * value / top if top > 0 else 0
    style = f"width:max(2px, {width:.0f}%)" if value else "width:0"
    style += f";background:{color}" if color else ""
    return (
        f'<div class="bar"><span class="n">{e(label)}</span><span class="track">'
        f'<span class="fill" style="{style}"></span></span></div>'
    )


def header_html(data: RunData, name: str) -> str:
    run = data.run
    models = run.get("models") or {}
    model_text = " · ".join(f"{role}: {model}" for role, model in models.items())
    fields = {key: run.get(key) for key in ("run_id", "status", "input", "started")}
    meta = [f"{key.replace('_', ' ')} {value}" for key, value in fields.items() if value]
    return (
        f"<header><h1>CQ2A report · {e(name)}</h1>"
        f'<div class="meta">{e(" · ".join(meta))}</div>'
        f'<div class="meta">{e(model_text)}</div></header>'
    )


def probe_status(data: RunData) -> str:
    probe = data.run.get("judge_probe")
    if not probe:
        return "not run"
    return "passed" if probe.get("passed") else "FAILED"


def alerts_html(data: RunData) -> str:
    parts = []
    probe = data.run.get("judge_probe")
    if probe and not probe.get("passed"):
        parts.append(
            '<div class="alert danger" id="probe-warning"><strong>⚠ The judge failed its '
            "probe.</strong> It did not tell a plainly wrong answer from an equivalent one "
            f"({e(probe.get('detail', ''))}). Bugs decided by the judge cannot be trusted; "
            "use a stronger judge model.</div>"
        )
    if probe and probe.get("passed") and probe.get("confident") is False:
        parts.append(
            '<div class="alert warn" id="probe-confidence"><strong>The judge passed its probe '
            "with split votes</strong> "
            f"({e(probe.get('detail', ''))}): treat its verdicts as low-confidence.</div>"
        )
    status = data.run.get("status")
    if status and status != "finished":
        message = data.run.get("message") or ""
        parts.append(
            f'<div class="alert warn"><strong>Run {e(status)}.</strong> {e(message)}</div>'
        )
    if not data.run:
        parts.append('<div class="alert warn">No run.json: the run did not finish.</div>')
    counts = data.run.get("counts") or {}
    notes = [
        (
            counts.get("unjudged"),
            "verdicts unjudged (the judge gave no verdict: not counted as "
            "bugs or passes; --retry-errors judges them)",
        ),
        (counts.get("pending"), "slots pending after failed LLM calls (--retry-errors)"),
        (
            counts.get("judge_low_confidence"),
            "judge verdicts with split votes (some votes on each side of the threshold): "
            "low-confidence, worth a look",
        ),
        (
            counts.get("sut_inputs_truncated"),
            "tests whose input the SUT cut to fit its window (it never saw the whole context)",
        ),
    ]
    for count, what in notes:
        if count:
            parts.append(
                f'<div class="alert warn" id="counts-warning">{int(count)} {e(what)}.</div>'
            )
    return "\n".join(parts)


def card(label: str, value: str, tone: str = "") -> str:
    return (
        f'<div class="card {tone}"><div class="value">{e(value)}</div>'
        f'<div class="label">{e(label)}</div></div>'
    )


def cards_html(data: RunData, labels: dict[str, Any] | None) -> str:
    usage = data.run.get("usage") or {}
    probe = probe_status(data)
    items = [
        card("Contexts", str(n_contexts(data))),
        card("Answers", str(len(data.answers))),
        card("Questions generated", str(n_generated(data))),
        card("Accepted tests", str(len(data.cases))),
        card("Bugs", str(len(data.bugs)), "bad" if data.bugs else ""),
        card("Bug rate", percent(bug_rate(data))),
        card("Tokens", f"{int(usage.get('total_tokens') or 0):,}"),
        card("Wall time", duration(data.run.get("seconds"))),
        card("Judge probe", probe, {"passed": "ok", "FAILED": "bad"}.get(probe, "")),
    ]
    if labels and labels.get("bug_tp_rate") is not None:
        items.append(card("Bug TP rate (labelled)", percent(labels["bug_tp_rate"]), "ok"))
    if labels and labels.get("question_precision") is not None:
        items.append(card("Question precision", percent(labels["question_precision"]), "ok"))
    return f'<div class="cards" id="headline">{"".join(items)}</div>'


def funnel_html(rows: list[FunnelRow]) -> str:
    head = "".join(f"<th>{e(label)}</th>" for _, label in STAGES)
    body = []
    for row in rows:
        values = [getattr(row, name) for name, _ in STAGES]
        top = max(values) or 1
        cells = "".join(f'<td class="bar-cell">{bar(v, top, str(v))}</td>' for v in values)
        body.append(f"<tr><td>{kind_badge(row.kind)}</td>{cells}</tr>")
    return (
        '<section id="funnel"><h2>Funnel</h2><p class="hint">Each answer gets question slots; '
        "each slot may take several attempts. Bars are relative to the largest stage of the "
        f"row.</p><table><thead><tr><th>Kind</th>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></section>"
    )


def reasons_html(data: RunData) -> str:
    reasons = Counter(reason.value for c in data.candidates for reason in c.reasons)
    if not reasons:
        return (
            '<section id="reasons"><h2>Rejection reasons</h2><p class="empty">None.</p></section>'
        )
    top = max(reasons.values())
    rows = "".join(
        f'<tr><td>{e(reason)}</td><td class="bar-cell">{bar(n, top, str(n), "#c62828")}</td></tr>'
        for reason, n in reasons.most_common()
    )
    rejected = sum(c.status == "rejected" for c in data.candidates)
    return (
        '<section id="reasons"><h2>Rejection reasons</h2><p class="hint">'
        f"{rejected} question slots rejected; an attempt can have several reasons.</p>"
        f"<table><thead><tr><th>Reason</th><th>Attempts</th></tr></thead><tbody>{rows}"
        "</tbody></table></section>"
    )


def histogram_svg(values: list[float], low: float, high: float, threshold: float | None) -> str:
    """An inline SVG histogram with ten bins over [low, high]."""
    bins = [0] * 10
    for value in values:
        index = int((value - low) / (high - low) * 10) if high > low else 0
        bins[min(max(index, 0), 9)] += 1
    width, height, pad = 300, 150, 20
    top = max(bins) or 1
    step = (width - 2 * pad) / 10
    shapes = []
    for i, count in enumerate(bins):
        h = (height - 2 * pad) * count / top
        x, y = pad + i * step, height - pad - h
        lo, hi = low + (high - low) * i / 10, low + (high - low) * (i + 1) / 10
        shapes.append(
            f'<rect class="hbar" x="{x + 1:.1f}" y="{y:.1f}" width="{step - 2:.1f}" '
            f'height="{h:.1f}" rx="2"><title>{lo:g}–{hi:g}: {count}</title></rect>'
        )
        if count:
            shapes.append(
                f'<text x="{x + step / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle">{count}</text>'
            )
    for value, anchor in ((low, "start"), ((low + high) / 2, "middle"), (high, "end")):
        x = pad + (width - 2 * pad) * (value - low) / (high - low)
        shapes.append(f'<text x="{x:.1f}" y="{height - 5}" text-anchor="{anchor}">{value:g}</text>')
    if threshold is not None and low <= threshold <= high:
        x = pad + (width - 2 * pad) * (threshold - low) / (high - low)
        shapes.append(
            f'<line class="threshold" x1="{x:.1f}" x2="{x:.1f}" y1="{pad / 2}" '
            f'y2="{height - pad}"><title>threshold {threshold:g}</title></line>'
        )
    base = height - pad
    axis = f'<line class="axis" x1="{pad}" x2="{width - pad}" y1="{base}" y2="{base}"/>'
    return (
        f'<svg viewBox="0 0 {width} {height}" role="img" xmlns="http://www.w3.org/2000/svg">'
        f"{axis}{''.join(shapes)}</svg>"
    )


def chart(title: str, values: list[float], low: float, high: float, threshold: Any) -> str:
    limit = float(threshold) if isinstance(threshold, int | float) else None
    sub = (
        f"{len(values)} value"
        + ("" if len(values) == 1 else "s")
        + (f" · dashed line: threshold {limit:g}" if limit else "")
    )
    return (
        f'<div class="chart"><h3>{e(title)}</h3><div class="sub">{e(sub)}</div>'
        f"{histogram_svg(values, low, high, limit)}</div>"
    )


def charts_html(data: RunData) -> str:
    settings = data.run.get("settings") or {}
    judged = [float(v.judge_score) for v in data.verdicts if v.judge_score is not None]
    charts = [
        chart(
            "Consistency similarity (accepted tests)",
            [case.similarity for case in data.cases],
            0,
            1,
            settings.get("consistency_threshold"),
        ),
        chart(
            "Oracle similarity (SUT vs gold)",
            [v.similarity for v in data.verdicts],
            0,
            1,
            settings.get("oracle_threshold"),
        ),
        chart("Judge scores", judged, 0, 100, settings.get("judge_threshold")),
    ]
    return (
        '<section id="charts"><h2>Distributions</h2>'
        f'<div class="charts">{"".join(charts)}</div></section>'
    )


def bug_row(bug: BugRecord) -> str:
    search_text = " ".join(
        [bug.question, bug.gold_answer, bug.sut_answer, bug.judge_explanation or "", bug.context_id]
    ).lower()
    score = "–" if bug.judge_score is None else str(bug.judge_score)
    source = f'<div class="src">from: {e(bug.sentence)}</div>' if bug.sentence else ""
    return (
        f'<tr class="bug-row" data-kind="{e(bug.kind.value)}" data-text="{e(search_text)}">'
        f"<td>{kind_badge(bug.kind.value)}</td>"
        f'<td><div class="q">{e(bug.question)}</div>{source}</td>'
        f'<td class="gold">{e(bug.gold_answer)}</td><td class="sut">{e(bug.sut_answer)}</td>'
        f'<td class="num">{bug.similarity:.2f}</td><td class="num">{e(score)}</td>'
        f'<td class="why">{e(bug.judge_explanation or "")}</td><td>{e(bug.context_id)}</td></tr>'
    )


def bugs_html(data: RunData) -> str:
    kinds = sorted({bug.kind.value for bug in data.bugs})
    options = '<option value="">all kinds</option>' + "".join(
        f'<option value="{e(k)}">{e(k)}</option>' for k in kinds
    )
    columns = [
        "Kind",
        "Question",
        "Gold",
        "SUT answer",
        "Sim.",
        "Judge",
        "Judge's reason",
        "Context",
    ]
    head = "".join(f"<th>{e(c)}</th>" for c in columns)
    rows = "".join(bug_row(bug) for bug in data.bugs)
    empty = "" if data.bugs else '<p class="empty">No bugs found.</p>'
    return (
        '<section id="bug-section"><h2>Bugs</h2><div class="filters">'
        f'<select id="kind-filter" aria-label="kind">{options}</select>'
        '<input id="bug-search" type="search" placeholder="search question, answers, reason…">'
        f'<span class="count"><span id="visible-count">{len(data.bugs)}</span> of '
        f"{len(data.bugs)} shown</span></div>"
        f'<table id="bugs"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
        f"{empty}</section>"
    )


# ---- the suite: question kinds and diversity ----


def suite_html(data: RunData) -> str:
    """The question mix chosen against achieved, and the suite's diversity (run.json
    ``figures``); nothing for a run that has none (an older run, or ``cq2a test``)."""
    figures = data.run.get("figures") or {}
    mix, spread = figures.get("mix"), figures.get("diversity")
    if not mix or not spread:
        return ""
    rows = "".join(
        f"<tr><td>{e(kind)}</td><td>{percent(row['chosen'])}</td>"
        f"<td>{percent(row['achieved'])}</td><td>{row['accepted']}</td></tr>"
        for kind, row in mix["kinds"].items()
    )
    verdict = "honoured" if mix["honoured"] else "not honoured"
    openings = ", ".join(f"{e(k)} {percent(v)}" for k, v in spread["top_openings"].items())
    similarity = spread.get("mean_question_similarity")
    heat = "".join(
        f'<div class="heat" data-context="{e(c["context_id"])}"><span>{e(c["context_id"])}</span>'
        + "".join(
            f'<span class="cell{" on" if i in c["covered_sentences"] else ""}" '
            f'title="sentence {i + 1}"></span>'
            for i in range(c["sentences"])
        )
        + f" {percent(c['coverage'])}</div>"
        for c in spread["per_context"]
    )
    return (
        '<section id="suite"><h2>The suite</h2>'
        f"<p>Question mix {verdict} (within ±{percent(mix['tolerance'])} of each share):</p>"
        "<table><tr><th>kind</th><th>chosen</th><th>achieved</th><th>accepted</th></tr>"
        f"{rows}</table>"
        f"<p>Distinct answers per context {spread['distinct_answers_per_context']}; sentence "
        f"coverage {percent(spread['coverage'])}; commonest openings {openings or '-'}; mean "
        f"similarity of a context's questions {similarity if similarity is not None else '-'}"
        '</p><p class="hint">Sentences with an accepted test, per context:</p>'
        f"{heat}</section>"
    )


# ---- context coverage ----


def answer_span(case: TestCase, sentence: tuple[int, int] | None) -> tuple[int, int] | None:
    """Where the test's answer stands; none for a yes/no or unanswerable test, whose answer is
    not a span (its evidence is shaded instead)."""
    if case.kind.question_kind in ("yesno", "unanswerable"):
        return None
    text = case.context
    if case.start is not None and case.end is not None and 0 <= case.start < case.end <= len(text):
        return case.start, case.end
    begin = sentence[0] if sentence else 0
    found = text.find(case.answer, begin)
    return (found, found + len(case.answer)) if found >= 0 and case.answer else None


def sentence_span(case: TestCase) -> tuple[int, int] | None:
    """Where the test's sentence sits: the occurrence holding the answer offset, else the first."""
    text, sentence = case.context, case.sentence.strip()
    spans, found = [], text.find(sentence) if sentence else -1
    while found >= 0:
        spans.append((found, found + len(sentence)))
        found = text.find(sentence, found + 1)
    for span in spans:
        if case.start is not None and span[0] <= case.start < span[1]:
            return span
    return spans[0] if spans else None


class Coverage(BaseModel):
    html: str
    share: float


def coverage(cases: list[TestCase], bug_ids: set[str]) -> Coverage:
    """Highlight answer spans and shade used sentences; the share of non-space characters inside
    a used sentence."""
    text = cases[0].context
    shaded = [False] * len(text)
    marks: list[list[int]] = [[] for _ in text]
    for number, case in enumerate(cases):
        sentence = sentence_span(case)
        used = [(e.start, e.end) for e in case.evidence if e.found_in(text)]
        for start, end in used or ([sentence] if sentence else []):
            for i in range(start, end):
                shaded[i] = True
        span = answer_span(case, sentence)
        if span:
            for i in range(*span):
                marks[i].append(number)
    runs, start = [], 0
    for i in range(1, len(text) + 1):
        if i == len(text) or (shaded[i], marks[i]) != (shaded[start], marks[start]):
            marked = [cases[number] for number in marks[start]]
            runs.append(segment_html(text[start:i], shaded[start], marked, bug_ids))
            start = i
    letters = [i for i, ch in enumerate(text) if not ch.isspace()]
    share = sum(shaded[i] for i in letters) / len(letters) if letters else 0.0
    return Coverage(html="".join(runs), share=share)


def segment_html(piece: str, shaded: bool, cases: list[TestCase], bug_ids: set[str]) -> str:
    if cases:
        bug = " bug" if any(c.id in bug_ids for c in cases) else ""
        title = "\n".join(f"{c.kind.value}: {c.question}" for c in cases)
        return (
            f'<mark class="ans {e(cases[0].kind.value)}{bug}" title="{e(title)}">{e(piece)}</mark>'
        )
    return f'<span class="sent">{e(piece)}</span>' if shaded else e(piece)


def contexts_html(data: RunData) -> str:
    by_context: dict[str, list[TestCase]] = {}
    for case in data.cases:
        by_context.setdefault(case.context_id, []).append(case)
    bug_ids = {bug.test_id for bug in data.bugs}
    blocks = []
    for context_id, cases in by_context.items():
        result = coverage(cases, bug_ids)
        blocks.append(
            f'<div class="context" data-context="{e(context_id)}"><h3>{e(context_id)}'
            f'<span class="cov"><span class="meter"><span style="width:{100 * result.share:.0f}%">'
            f'</span></span> <span class="coverage">{percent(result.share)}</span> covered · '
            f"{len(cases)} test{'' if len(cases) == 1 else 's'}</span></h3>"
            f'<div class="text">{result.html}</div></div>'
        )
    untested = sorted({a.context_id for a in data.answers} - set(by_context))
    if untested:
        blocks.append(f'<p class="muted">No accepted tests: {e(", ".join(untested))}</p>')
    legend = (
        '<div class="legend"><span class="sent">sentence used</span>'
        + "".join(f'<mark class="ans {k}">{k}</mark>' for k in SPAN_KINDS)
        + '<mark class="ans bug">answer with a bug</mark></div>'
    )
    return (
        '<section id="contexts"><h2>Context coverage</h2><p class="hint">Highlighted: answers '
        "that accepted tests ask for (hover for the questions); shaded: their sentences.</p>"
        f"{legend}{''.join(blocks) or NO_TESTS}</section>"
    )
