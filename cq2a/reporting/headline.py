"""The top of the report: the header line, the alerts a reader must see first, and the
headline cards (contexts, answers, questions, tests, bugs, bug rate, tokens, time, probe)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from cq2a.reporting.exports import RunData
from cq2a.reporting.formats import duration, percent
from cq2a.reporting.funnel import funnel_rows

#: run.json ``counts`` a reader should be warned of, with what each count means.
COUNT_WARNINGS = {
    "unjudged": "verdicts unjudged (the judge gave no verdict, or the SUT failed the query: not "
    "counted as bugs or passes; --retry-errors judges them)",
    "pending": "slots pending after failed LLM calls (--retry-errors)",
    "judge_low_confidence": "judge verdicts with split votes (some votes on each side of the "
    "threshold): low-confidence, worth a look",
    "sut_inputs_truncated": "tests whose input the SUT cut to fit its window (it never saw the "
    "whole context)",
}


class Header(BaseModel):
    name: str
    meta: str
    models: str


class Alert(BaseModel):
    """A banner above the cards: ``lead`` in bold, then ``text``; ``id`` is unique in the page."""

    tone: Literal["danger", "warn"]
    text: str
    lead: str = ""
    id: str = ""
    classes: str = ""


class Card(BaseModel):
    label: str
    value: str
    tone: Literal["", "ok", "bad"] = ""


def header(data: RunData, name: str) -> Header:
    run = data.run
    models = run.get("models") or {}
    fields = {key: run.get(key) for key in ("run_id", "status", "input", "started")}
    meta = [f"{key.replace('_', ' ')} {value}" for key, value in fields.items() if value]
    return Header(
        name=name,
        meta=" · ".join(meta),
        models=" · ".join(f"{role}: {model}" for role, model in models.items()),
    )


def counts(data: RunData) -> dict[str, Any]:
    return dict(data.run.get("counts") or {})


def probe_alerts(probe: dict[str, Any] | None) -> list[Alert]:
    if not probe:
        return []
    detail = probe.get("detail", "")
    if not probe.get("passed"):
        return [
            Alert(
                tone="danger",
                id="probe-warning",
                lead="⚠ The judge failed its probe.",
                text=f"It did not tell a plainly wrong answer from an equivalent one ({detail}). "
                "Bugs decided by the judge cannot be trusted; use a stronger judge model.",
            )
        ]
    if probe.get("confident") is False:
        return [
            Alert(
                tone="warn",
                id="probe-confidence",
                lead="The judge passed its probe with split votes",
                text=f"({detail}): treat its verdicts as low-confidence.",
            )
        ]
    return []


def alerts(data: RunData) -> list[Alert]:
    """The judge's probe, a run that did not finish, and the counts worth a warning."""
    found = probe_alerts(data.run.get("judge_probe"))
    status = data.run.get("status")
    if status and status != "finished":
        found.append(Alert(tone="warn", lead=f"Run {status}.", text=data.run.get("message") or ""))
    if not data.run:
        found.append(Alert(tone="warn", text="No run.json: the run did not finish."))
    found += [
        Alert(
            tone="warn",
            id=f"counts-{key.replace('_', '-')}",
            classes="counts-warning",
            text=f"{int(count)} {what}.",
        )
        for key, what in COUNT_WARNINGS.items()
        if (count := counts(data).get(key))
    ]
    return found


def n_contexts(data: RunData) -> int:
    found = {a.context_id for a in data.answers} | {c.context_id for c in data.cases}
    return int(counts(data).get("contexts", len(found)))


def n_generated(data: RunData) -> int:
    return sum(row.generated for row in funnel_rows(data) if row.kind == "all")


def bug_rate(data: RunData) -> float | None:
    tested = len(data.verdicts) or len(data.cases)
    return len(data.bugs) / tested if tested else None


def probe_status(data: RunData) -> str:
    probe = data.run.get("judge_probe")
    if not probe:
        return "not run"
    return "passed" if probe.get("passed") else "FAILED"


def cards(data: RunData, labels: dict[str, Any] | None) -> list[Card]:
    """The headline numbers; the labelled rates once the labelling sheet has labels (IV-C)."""
    usage = data.run.get("usage") or {}
    probe = probe_status(data)
    found = [
        Card(label="Contexts", value=str(n_contexts(data))),
        Card(label="Answers", value=str(len(data.answers))),
        Card(label="Questions generated", value=str(n_generated(data))),
        Card(label="Accepted tests", value=str(len(data.cases))),
        Card(label="Bugs", value=str(len(data.bugs)), tone="bad" if data.bugs else ""),
        Card(label="Bug rate", value=percent(bug_rate(data))),
        Card(label="Tokens", value=f"{int(usage.get('total_tokens') or 0):,}"),
        Card(label="Wall time", value=duration(data.run.get("seconds"))),
        Card(
            label="Judge probe", value=probe, tone={"passed": "ok", "FAILED": "bad"}.get(probe, "")
        ),
    ]
    labelled = labels or {}
    for key, label in (
        ("bug_tp_rate", "Bug TP rate (labelled)"),
        ("question_precision", "Question precision"),
    ):
        if labelled.get(key) is not None:
            found.append(Card(label=label, value=percent(labelled[key]), tone="ok"))
    return found
