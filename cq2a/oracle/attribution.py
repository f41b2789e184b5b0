"""Whose fault a bug is, for a system that retrieves its own passages: a retrieval miss (the
test's evidence was not among the passages it retrieved) or a reader error (it was, and the
answer is still wrong); unknown when the system named no passages.

The matching rule. Each retrieved passage is located in the test's own passage
(``TestCase.context``) by span overlap, not string equality. Both texts are normalised: case
folded and every run of white space made one space. A retrieved passage found whole in the
test's passage covers the span it was found at; one that contains the test's passage covers
all of it; otherwise the matching blocks of ``difflib.SequenceMatcher`` of at least
``MIN_OVERLAP_CHARS`` characters (a chunk that overlaps the passage's start or end, or one
rewrapped or lightly edited) cover the span from the first such block to the last. Spans are
mapped back to character offsets of the test's passage.

The evidence is the answer's span (``TestCase.start``/``end``), or, for a test with none (an
unanswerable or yes/no question), the span of its sentence; a multi-sentence test adds each of
its ``evidence`` spans. The evidence was retrieved when every evidence span overlaps the span
of some retrieved passage.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from cq2a.adapters.sut.base import SUTAnswer, SUTError
from cq2a.models.records import BugCause, TestCase, Verdict

Span = tuple[int, int]

#: The shortest shared run of normalised characters that counts as the same text (a sentence
#: fragment, longer than the phrases unrelated passages share).
MIN_OVERLAP_CHARS = 40
#: What a verdict keeps of each retrieved passage.
STORED_PASSAGE_CHARS = 500

_SPACE = re.compile(r"\s+")


def normalised(text: str) -> tuple[str, list[int]]:
    """``text`` case folded with each run of white space one space (none at the ends), and for
    each character of it the offset in ``text`` it came from."""
    chars: list[str] = []
    offsets: list[int] = []
    for match in re.finditer(r"\S+", text):
        if chars:
            chars.append(" ")
            offsets.append(match.start() - 1)
        for offset in range(match.start(), match.end()):
            for char in text[offset].lower():  # "İ" lowers to two characters
                chars.append(char)
                offsets.append(offset)
    return "".join(chars), offsets


def located_span(retrieved: str, passage: str) -> Span | None:
    """The character span of ``passage`` that ``retrieved`` covers (the module's rule), or
    None when they share no substantial text."""
    target, offsets = normalised(passage)
    found, _ = normalised(retrieved)
    if not target or not found:
        return None
    if found in target:
        start = target.index(found)
        return offsets[start], offsets[start + len(found) - 1] + 1
    if target in found:
        return offsets[0], offsets[-1] + 1
    matcher = SequenceMatcher(None, target, found, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size >= MIN_OVERLAP_CHARS]
    if not blocks:
        return None
    return offsets[blocks[0].a], offsets[blocks[-1].a + blocks[-1].size - 1] + 1


def evidence_spans(case: TestCase) -> list[Span]:
    """The spans of the test's passage that its answer rests on (the module's rule)."""
    spans = [(e.start, e.end) for e in case.evidence]
    if case.start is not None and case.end is not None:
        return [(case.start, case.end), *spans]
    at = case.context.find(case.sentence) if case.sentence else -1
    if at >= 0:
        spans.append((at, at + len(case.sentence)))
    return spans


def evidence_retrieved(case: TestCase, retrieved: list[str]) -> bool:
    """Whether every evidence span of ``case`` overlaps a span some retrieved passage covers."""
    covered = [span for text in retrieved if (span := located_span(text, case.context))]
    wanted = evidence_spans(case) or [(0, len(case.context))]
    return all(any(s < e_end and e_start < e for s, e in covered) for e_start, e_end in wanted)


def bug_cause(bug: bool, retrieved: bool | None) -> BugCause | None:
    """A bug's cause from whether its evidence was retrieved (None: no passages named)."""
    if not bug:
        return None
    if retrieved is None:
        return "unknown"
    return "reader_error" if retrieved else "retrieval_miss"


def stored_passages(retrieved: list[str]) -> list[str]:
    """The retrieved passages as a verdict keeps them, each cut to ``STORED_PASSAGE_CHARS``."""
    return [
        text if len(text) <= STORED_PASSAGE_CHARS else text[:STORED_PASSAGE_CHARS] + "…"
        for text in retrieved
    ]


def attributed(
    verdict: Verdict, case: TestCase, answer: str | SUTAnswer | SUTError, question_only: bool
) -> Verdict:
    """``verdict`` with the passages the SUT named for ``case`` and its bug's cause; a SUT
    given the passage (``question_only`` false) that names none is left as it was."""
    if isinstance(answer, SUTAnswer):
        found: bool | None = evidence_retrieved(case, answer.contexts)
        stored: list[str] | None = stored_passages(answer.contexts)
    elif question_only:
        found, stored = None, None
    else:
        return verdict
    update = {
        "retrieved_contexts": stored,
        "evidence_retrieved": found,
        "cause": bug_cause(verdict.bug, found),
    }
    return verdict.model_copy(update=update)
