"""Context coverage: each context's text with the answers its accepted tests ask for marked and
the sentences (or evidence) they rest on shaded, and the share of the text those cover."""

from __future__ import annotations

from pydantic import BaseModel

from cq2a.models.records import AnswerKind, TestCase
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
    views: list[ContextView]
    untested: list[str]


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


def context_view(context_id: str, cases: list[TestCase], bug_ids: set[str]) -> ContextView:
    """Mark answer spans and shade used sentences; the share is of non-space characters inside
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
    segments, start = [], 0
    for i in range(1, len(text) + 1):
        if i == len(text) or (shaded[i], marks[i]) != (shaded[start], marks[start]):
            marked = [cases[number] for number in marks[start]]
            segments.append(segment(text[start:i], shaded[start], marked, bug_ids))
            start = i
    letters = [i for i, ch in enumerate(text) if not ch.isspace()]
    share = sum(shaded[i] for i in letters) / len(letters) if letters else 0.0
    source = cases[0].source.label() if cases[0].source else None
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


def contexts(data: RunData) -> Contexts:
    """A view per context with accepted tests; the contexts with answers but no test."""
    by_context: dict[str, list[TestCase]] = {}
    for case in data.cases:
        by_context.setdefault(case.context_id, []).append(case)
    bug_ids = {bug.test_id for bug in data.bugs}
    return Contexts(
        views=[context_view(cid, cases, bug_ids) for cid, cases in by_context.items()],
        untested=sorted({a.context_id for a in data.answers} - set(by_context)),
    )
