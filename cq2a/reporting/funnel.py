"""The funnel from extracted answers (III-A) through generated and checked questions (III-B,
III-C) to accepted tests and bugs (III-D), per answer kind, and why questions were rejected."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel

from cq2a.models.records import AnswerKind, Attempt, RejectReason
from cq2a.reporting.exports import RunData
from cq2a.reporting.formats import Bar, bar

KINDS = [kind.value for kind in AnswerKind]
STAGES = [
    ("answers", "Extracted answers"),
    ("generated", "Questions generated"),
    ("passed_checks", "Passed checks"),
    ("consistent", "Passed consistency"),
    ("accepted", "Accepted tests"),
    ("bugs", "Bugs"),
]


class FunnelRow(BaseModel):
    kind: str
    answers: int = 0
    generated: int = 0
    passed_checks: int = 0
    consistent: int = 0
    accepted: int = 0
    bugs: int = 0

    def bars(self) -> list[Bar]:
        """One bar per stage, relative to the row's largest stage."""
        values = [getattr(self, name) for name, _ in STAGES]
        top = max(values) or 1
        return [bar(value, top) for value in values]


class ReasonRow(BaseModel):
    reason: str
    bar: Bar


class Reasons(BaseModel):
    rows: list[ReasonRow]
    rejected_slots: int


def passed_checks(attempt: Attempt) -> bool:
    """The question passed every validity check (III-C1)."""
    return bool(attempt.checks) and all(check.passed for check in attempt.checks)


#: Rejections of the re-ask and comparison (III-C2), over the own passage and the corpus.
CONSISTENCY_REASONS = frozenset({RejectReason.INCONSISTENT, RejectReason.AMBIGUOUS_IN_CORPUS})


def passed_consistency(attempt: Attempt) -> bool:
    """The re-asked majority answer matched the target (III-C2), over its own passage and, for
    a SUT that gets the question alone, over the corpus."""
    return (
        passed_checks(attempt)
        and attempt.similarity is not None
        and not CONSISTENCY_REASONS.intersection(attempt.reasons)
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


def reasons(data: RunData) -> Reasons:
    """Rejection reasons by how many attempts had each, commonest first."""
    counted = Counter(reason.value for c in data.candidates for reason in c.reasons)
    top = max(counted.values(), default=0)
    return Reasons(
        rows=[ReasonRow(reason=r, bar=bar(n, top)) for r, n in counted.most_common()],
        rejected_slots=sum(c.status == "rejected" for c in data.candidates),
    )
