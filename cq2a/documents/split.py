"""A document cut into passages that end on sentence boundaries (spaCy's rule-based
sentencizer), each at most ``max_chars`` long, with no overlap. A sentence longer than that
is cut at a word boundary, and the passage says so."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import spacy
from spacy.language import Language

_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
#: The sentencizer reads paragraphs; a longer one is fed in pieces cut at a line end.
_MAX_PIECE = 100_000


@dataclass(frozen=True)
class Span:
    """A passage's character offsets in its document, and a note when a sentence was cut."""

    start: int
    end: int
    note: str | None = None


@cache
def sentencizer() -> Language:
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def paragraphs(text: str) -> Iterator[tuple[int, int]]:
    """Offsets of the paragraphs (blank-line separated): a sentence never crosses one."""
    start = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        yield start, match.start()
        start = match.end()
    yield start, len(text)


def _pieces(text: str) -> Iterator[tuple[int, int]]:
    for start, end in paragraphs(text):
        while end - start > _MAX_PIECE:
            cut = text.rfind("\n", start, start + _MAX_PIECE)
            cut = cut if cut > start else start + _MAX_PIECE
            yield start, cut
            start = cut
        yield start, end


def sentence_spans(text: str) -> Iterator[tuple[int, int]]:
    """Offsets of the sentences of ``text``, whitespace trimmed."""
    pieces = [(s, e) for s, e in _pieces(text) if text[s:e].strip()]
    docs = sentencizer().pipe(text[s:e] for s, e in pieces)
    for (offset, _), doc in zip(pieces, docs, strict=True):
        for sentence in doc.sents:
            start, end = _trimmed(text, offset + sentence.start_char, offset + sentence.end_char)
            if end > start:
                yield start, end


def word_cuts(text: str, start: int, end: int, max_chars: int) -> Iterator[tuple[int, int]]:
    """A too-long sentence as pieces of at most ``max_chars``, cut at the last space."""
    while end - start > max_chars:
        cut = text.rfind(" ", start + 1, start + max_chars + 1)
        cut = cut if cut > start else start + max_chars
        piece = _trimmed(text, start, cut)
        yield piece
        start = _trimmed(text, cut, end)[0]
    if end > start:
        yield start, end


def passages(text: str, max_chars: int) -> Iterator[Span]:
    """Consecutive sentences packed into passages of at most ``max_chars``."""
    first: int | None = None
    last = 0
    for start, end in sentence_spans(text):
        if first is not None and end - first > max_chars:
            yield Span(first, last)
            first = None
        if end - start > max_chars:
            note = f"a sentence of {end - start} characters cut at a word boundary"
            for cut_start, cut_end in word_cuts(text, start, end, max_chars):
                yield Span(cut_start, cut_end, note)
            continue
        first = start if first is None else first
        last = end
    if first is not None:
        yield Span(first, last)
