"""Bug attribution for a SUT that retrieves its own passages: locating a retrieved passage in
the test's passage by span overlap, and the cause a bug gets from it."""

from __future__ import annotations

from cq2a.adapters.sut.base import SUTAnswer, SUTError
from cq2a.models.records import AnswerKind, TestCase, Verdict
from cq2a.oracle.attribution import (
    STORED_PASSAGE_CHARS,
    attributed,
    bug_cause,
    evidence_retrieved,
    evidence_spans,
    located_span,
    normalised,
)

PASSAGE = (
    "The Normans were the people who in the 10th and 11th centuries gave their name to "
    "Normandy, a region in France. They were descended from Norse raiders and pirates from "
    "Denmark, Iceland and Norway who, under their leader Rollo, agreed to swear fealty to King "
    "Charles III of West Francia."
)
FIRST, SECOND = PASSAGE.split(". ", 1)
UNRELATED = "Harvard University is a private research university in Cambridge, Massachusetts."


def case(answer: str = "Rollo", **fields: object) -> TestCase:
    start = PASSAGE.find(answer)
    values: dict = {
        "id": "t1",
        "context_id": "c1",
        "context": PASSAGE,
        "question": "Who led the Norse raiders?",
        "answer": answer,
        "kind": AnswerKind.NAMED_ENTITY,
        "sentence": SECOND,
        "start": start,
        "end": start + len(answer),
        "explanation": "",
        "attempts": 1,
        "votes": [],
        "similarity": 1.0,
    }
    return TestCase(**(values | fields))


def verdict(bug: bool) -> Verdict:
    return Verdict(
        test_id="t1",
        context_id="c1",
        question="Who led the Norse raiders?",
        gold_answer="Rollo",
        sut_answer="Charles" if bug else "Rollo",
        similarity=0.1 if bug else 1.0,
        stage="judge" if bug else "similarity",
        bug=bug,
        kind=AnswerKind.NAMED_ENTITY,
    )


def test_normalised_folds_case_and_white_space_and_maps_back() -> None:
    text, offsets = normalised("  The\n\tNormans  WERE ")
    assert text == "the normans were"
    assert [offsets[0], offsets[4], offsets[-1]] == [2, 7, 19]


def test_an_exact_passage_covers_its_own_span() -> None:
    at = PASSAGE.index(SECOND)
    assert located_span(SECOND, PASSAGE) == (at, at + len(SECOND))
    assert located_span(PASSAGE, PASSAGE) == (0, len(PASSAGE))


def test_a_passage_with_other_white_space_and_case_is_found() -> None:
    rewrapped = SECOND.upper().replace(" ", "\n  ", 5)
    at = PASSAGE.index(SECOND)
    assert located_span(rewrapped, PASSAGE) == (at, at + len(SECOND))


def test_a_chunk_holding_the_passage_covers_all_of_it() -> None:
    assert located_span(f"{UNRELATED} {PASSAGE} {UNRELATED}", PASSAGE) == (0, len(PASSAGE))


def test_a_chunk_covering_half_the_passage_covers_that_half() -> None:
    # the chunk starts inside the passage and runs on into the next document
    chunk = f"{SECOND} {UNRELATED}"
    span = located_span(chunk, PASSAGE)
    assert span == (PASSAGE.index(SECOND), len(PASSAGE))
    assert evidence_retrieved(case("Rollo"), [chunk])
    assert not evidence_retrieved(case("Normandy", sentence=FIRST), [chunk])


def test_an_unrelated_passage_covers_nothing() -> None:
    assert located_span(UNRELATED, PASSAGE) is None
    assert not evidence_retrieved(case(), [UNRELATED])
    assert not evidence_retrieved(case(), [])


def test_the_evidence_is_the_answer_span_else_the_sentence() -> None:
    start = PASSAGE.index("Rollo")
    assert evidence_spans(case()) == [(start, start + 5)]
    unanswerable = case(answer="unanswerable", start=None, end=None)
    at = PASSAGE.index(SECOND)
    assert evidence_spans(unanswerable) == [(at, at + len(SECOND))]
    assert evidence_retrieved(unanswerable, [SECOND])
    assert not evidence_retrieved(unanswerable, [FIRST + "."])


def test_bug_causes() -> None:
    assert bug_cause(True, True) == "reader_error"
    assert bug_cause(True, False) == "retrieval_miss"
    assert bug_cause(True, None) == "unknown"
    assert bug_cause(False, True) is None


def test_a_verdict_records_the_passages_and_the_cause() -> None:
    long = SECOND * 10
    missed = attributed(
        verdict(True), case(), SUTAnswer(answer="Charles", contexts=[UNRELATED]), True
    )
    assert (missed.cause, missed.evidence_retrieved) == ("retrieval_miss", False)
    assert missed.retrieved_contexts == [UNRELATED]
    read = attributed(verdict(True), case(), SUTAnswer(answer="Charles", contexts=[long]), True)
    assert (read.cause, read.evidence_retrieved) == ("reader_error", True)
    assert read.retrieved_contexts and len(read.retrieved_contexts[0]) == STORED_PASSAGE_CHARS + 1
    passed = attributed(verdict(False), case(), SUTAnswer(answer="Rollo", contexts=[SECOND]), True)
    assert passed.cause is None and passed.evidence_retrieved is True
    unknown = attributed(verdict(True), case(), "Charles", True)
    assert unknown.cause == "unknown" and unknown.retrieved_contexts is None
    # given the passage, a SUT that names none is not a retrieval system: nothing to attribute
    assert attributed(verdict(True), case(), "Charles", False) == verdict(True)
    failed = attributed(verdict(False), case(), SUTError("down"), True)
    assert failed.cause is None


def test_a_character_that_lowers_to_two_keeps_the_offsets_in_step() -> None:
    passage = "İstanbul is big. The bridge opened in 1973 and spans the Bosphorus strait."
    retrieved = "The bridge opened in 1973 and spans the Bosphorus strait."
    start, end = located_span(retrieved, passage)  # raised IndexError: "İ" lowers to "i̇"
    assert passage[start:end] == retrieved
