"""Context coverage: each context's text with the answers its accepted tests ask for marked and
the sentences (or evidence) they rest on shaded, and the share of the text those cover.

The page inlines the views of at most ``paging.MAX_CONTEXT_VIEWS`` contexts: the contexts with a
bug first (a reader opens a context to see why its test failed), then the others, each group in
run order; the views keep run order. Every context's share is in ``context_coverage.csv``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from cq2a.models.records import AnswerKind, TestCase
from cq2a.reporting import paging
from cq2a.reporting.exports import RunData

#: The kinds whose answer is a span the context view marks (yes/no and unanswerable are not).
SPAN_KINDS = [k.value for k in AnswerKind if k.question_kind not in ("yesno", "unanswerable")]


class Segment(BaseModel):
    """A run of the context's text that is marked and shaded alike. ``kind`` is set where the
    text is an answer some test asks for; ``questions`` are those tests' questions."""

    text: str
    shaded: bool
    kind: str = ""
    bug: bool = False
    questions: list[str] = []


class ContextView(BaseModel):
    context_id: str
    segments: list[Segment]
    share: float
    tests: int
    source: str | None = None


class Contexts(BaseModel):
    """The views and untested contexts the page shows, and how many of each the run has."""

    views: list[ContextView]
    untested: list[str]
    tested_total: int = 0
    untested_total: int = 0


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


def used_spans(case: TestCase, sentence: tuple[int, int] | None) -> list[tuple[int, int]]:
    """What the test rests on: its evidence found in the text, else its sentence."""
    used = [(e.start, e.end) for e in case.evidence if e.found_in(case.context)]
    return used or ([sentence] if sentence else [])


def shaded_mask(text: str, cases: list[TestCase]) -> list[bool]:
    """Per character of ``text``, whether some test rests on it."""
    shaded = [False] * len(text)
    for case in cases:
        for start, end in used_spans(case, sentence_span(case)):
            end = min(end, len(text))
            shaded[start:end] = [True] * (end - start)
    return shaded


def covered_share(text: str, shaded: list[bool]) -> float:
    """The share of non-space characters that are shaded."""
    letters = [i for i, ch in enumerate(text) if not ch.isspace()]
    return sum(shaded[i] for i in letters) / len(letters) if letters else 0.0


def context_view(context_id: str, cases: list[TestCase], bug_ids: set[str]) -> ContextView:
    """Mark answer spans and shade used sentences; the share is of non-space characters inside
    a used sentence."""
    text = cases[0].context
    shaded = shaded_mask(text, cases)
    marks: list[list[int]] = [[] for _ in text]
    for number, case in enumerate(cases):
        span = answer_span(case, sentence_span(case))
        if span:
            for i in range(*span):
                marks[i].append(number)
    segments, start = [], 0
    for i in range(1, len(text) + 1):
        if i == len(text) or (shaded[i], marks[i]) != (shaded[start], marks[start]):
            marked = [cases[number] for number in marks[start]]
            segments.append(segment(text[start:i], shaded[start], marked, bug_ids))
            start = i
    source = cases[0].source.label() if cases[0].source else None
    share = covered_share(text, shaded)
    return ContextView(
        context_id=context_id, segments=segments, share=share, tests=len(cases), source=source
    )


def segment(piece: str, shaded: bool, cases: list[TestCase], bug_ids: set[str]) -> Segment:
    if not cases:
        return Segment(text=piece, shaded=shaded)
    return Segment(
        text=piece,
        shaded=shaded,
        kind=cases[0].kind.value,
        bug=any(c.id in bug_ids for c in cases),
        questions=[f"{c.kind.value}: {c.question}" for c in cases],
    )


def by_context(data: RunData) -> dict[str, list[TestCase]]:
    """The accepted tests of each context, contexts in run order."""
    grouped: dict[str, list[TestCase]] = {}
    for case in data.cases:
        grouped.setdefault(case.context_id, []).append(case)
    return grouped


def untested(data: RunData, tested: dict[str, list[TestCase]]) -> list[str]:
    """The contexts with extracted answers but no accepted test, sorted."""
    return sorted({a.context_id for a in data.answers} - set(tested))


def shown_contexts(grouped: dict[str, list[TestCase]], bug_contexts: set[str]) -> list[str]:
    """The contexts whose views the page inlines: the first ``MAX_CONTEXT_VIEWS`` of those with
    a bug then the others, listed in run order (all of them, in run order, for a small run)."""
    ranked = [c for c in grouped if c in bug_contexts] + [
        c for c in grouped if c not in bug_contexts
    ]
    chosen = set(ranked[: paging.MAX_CONTEXT_VIEWS])
    return [c for c in grouped if c in chosen]


def contexts(data: RunData) -> Contexts:
    """A view per shown context with accepted tests; the contexts with answers but no test (the
    first ``MAX_UNTESTED``). Views are built only for the shown contexts."""
    grouped = by_context(data)
    bug_ids = {bug.test_id for bug in data.bugs}
    shown = shown_contexts(grouped, {bug.context_id for bug in data.bugs})
    without = untested(data, grouped)
    return Contexts(
        views=[context_view(cid, grouped[cid], bug_ids) for cid in shown],
        untested=paging.first(without, paging.MAX_UNTESTED),
        tested_total=len(grouped),
        untested_total=len(without),
    )


COVERAGE_COLUMNS = ["context_id", "source", "tests", "bugs", "coverage"]


def coverage_rows(data: RunData) -> list[dict[str, Any]]:
    """Every context with answers: its source, accepted tests, bugs and covered share (empty for
    a context without tests), tested contexts in run order then the others."""
    grouped = by_context(data)
    bugs: dict[str, int] = {}
    for bug in data.bugs:
        bugs[bug.context_id] = bugs.get(bug.context_id, 0) + 1
    rows = []
    for context_id, cases in grouped.items():
        text = cases[0].context
        rows.append(
            {
                "context_id": context_id,
                "source": cases[0].source.label() if cases[0].source else "",
                "tests": len(cases),
                "bugs": bugs.get(context_id, 0),
                "coverage": round(covered_share(text, shaded_mask(text, cases)), 4),
            }
        )
    empty = {"source": "", "tests": 0, "bugs": 0, "coverage": ""}
    return rows + [{"context_id": cid} | empty for cid in untested(data, grouped)]
