"""Passages end on sentence boundaries, stay within their size, and do not overlap."""

from __future__ import annotations

from cq2a.documents.split import passages, sentence_spans

SENTENCES = [
    "The Normans were the people who gave their name to Normandy, a region in France.",
    "Dr. Rollo, their leader, swore fealty to King Charles III of West Francia in 911.",
    "They adopted the Frankish language and converted to Christianity.",
    "In 1066 Duke William of Normandy conquered England at the battle of Hastings!",
    "Was the conquest complete by 1071?",
    "Norman architecture is known for its rounded arches and massive walls.",
]
TEXT = "Introduction\n\n" + " ".join(SENTENCES[:3]) + "\n\n" + " ".join(SENTENCES[3:])


def test_sentences_are_found_by_the_sentencizer_not_at_every_period():
    found = [TEXT[start:end] for start, end in sentence_spans(TEXT)]
    assert found == ["Introduction", *SENTENCES]


def test_passages_end_on_sentence_boundaries_within_the_size_without_overlap():
    limit = 200
    spans = list(passages(TEXT, limit))
    ends = {end for _, end in sentence_spans(TEXT)}
    assert len(spans) >= 3
    for span in spans:
        assert span.end - span.start <= limit
        assert span.end in ends and span.note is None
    for before, after in zip(spans, spans[1:], strict=False):
        assert before.end < after.start
    joined = " ".join(TEXT[s.start : s.end] for s in spans)
    assert " ".join(joined.split()) == " ".join(TEXT.split())


def test_a_sentence_longer_than_the_limit_is_cut_at_a_word_boundary_and_noted():
    long_sentence = "The Normans met " + ", ".join(["the Franks of the north"] * 30) + "."
    text = f"{SENTENCES[0]} {long_sentence} {SENTENCES[1]}"
    spans = list(passages(text, 150))
    cut = [s for s in spans if s.note]
    assert " ".join(text[s.start : s.end] for s in cut) == long_sentence
    for span in cut:
        assert span.end - span.start <= 150
        assert "cut at a word boundary" in span.note
        piece = text[span.start : span.end]
        assert text[span.end : span.end + 1] in {" ", ""} and not piece.endswith(" ")
    assert text[spans[0].start : spans[0].end] == SENTENCES[0]
    assert text[spans[-1].start : spans[-1].end] == SENTENCES[1]
