"""Multi-sentence questions: the pivot the generator's question names is replaced by what the
second sentence says of it (``cq2a.generation.bridging``), on real spaCy parses."""

from __future__ import annotations

import pytest

from cq2a.generation.bridging import bridge_questions, bridged
from cq2a.language.parsing import question_parser
from cq2a.models.records import Answer, AnswerKind, Attempt, Candidate

NORSE = "the people who were descended from Norse raiders"
OFFERED = "the treaty that offered Rollo and his men the lands"
RICHEST = "the organization that has the largest university endowment in the world"


@pytest.fixture(scope="module")
def parse(spacy_parser):
    return question_parser(spacy_parser)


@pytest.mark.parametrize(
    ("question", "pivot", "description", "expected"),
    [
        ("Which region of France took its name from the Normans?", "The Normans", NORSE,
         f"Which region of France took its name from {NORSE}?"),
        # the "of" phrase belongs to the pivot's phrase and goes with it
        ("What was established by the treaty of Saint-Clair-sur-Epte in 911?", "treaty",
         OFFERED, f"What was established by {OFFERED} in 911?"),
        # at the start of the question the description takes the capital
        ("The Normans gave their name to which region?", "The Normans", NORSE,
         "The people who were descended from Norse raiders gave their name to which region?"),
        # a possessive: what it possesses, "of" the description
        ("Where is Harvard's main campus centered?", "Harvard", RICHEST,
         f"Where is the main campus of {RICHEST} centered?"),
    ],
)  # fmt: skip
def test_the_pivot_phrase_is_replaced_by_its_description(
    parse, question: str, pivot: str, description: str, expected: str
) -> None:
    assert bridged(question, pivot, description, parse) == expected


@pytest.mark.parametrize(
    "question",
    [
        "Which region of France took its name from the Vikings?",  # does not name it
        "What river did the Normans border cross?",  # a modifier of another noun
        f"Which region of France took its name from {NORSE}?",  # written with it already
        # with it already, without its article (copied from the feedback)
        "Which region of France took its name from people who were descended from Norse raiders?",
    ],
)
def test_no_rewrite_where_no_phrase_can_stand_for_the_pivot(parse, question: str) -> None:
    assert bridged(question, "The Normans", NORSE, parse) is None


def _slot(kind: AnswerKind, question: str) -> Candidate:
    answer = Answer(
        id="c:m0", context_id="c", kind=kind, text="Normandy",
        sentence="The Normans gave their name to Normandy, a region in France.",
        sentence_index=0, start=31, end=39, pivot="The Normans", description=NORSE,
    )  # fmt: skip
    attempt = Attempt(number=1, question=question, explanation="Normandy is named after them.")
    return Candidate(id="c:m0:q0", context_id="c", answer=answer, slot=0, attempts=[attempt])


def test_bridge_questions_rewrites_multi_sentence_questions_and_keeps_the_original(parse) -> None:
    written = "Which region of France took its name from the Normans?"
    multi = _slot(AnswerKind.MULTI_SENTENCE, written)
    entity = _slot(AnswerKind.NAMED_ENTITY, written)
    rewritten, untouched = bridge_questions([multi, entity], parse)
    assert rewritten.current.question == f"Which region of France took its name from {NORSE}?"
    assert rewritten.current.as_generated == written
    assert untouched == entity
    # a question already rewritten is not rewritten again
    assert bridge_questions([rewritten], parse) == [rewritten]
