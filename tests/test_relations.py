"""III-A2 relation filters on real spaCy parses, with the paper's own example."""

import pytest

from cq2a.answers.relations import (
    ProposedTriple,
    entities_are_grounded,
    entity_is_nominal,
    relation_answers,
    relation_verb,
    triple_rejection,
)
from cq2a.language.parsing import get_parser, lemmatizer
from cq2a.models.records import AnswerKind, Context

PAPER = "Lucius Harney becomes Mr. Royall's boarder."
NORMANS = (
    "Rollo signed a treaty with King Charles III of West Francia in 911. "
    "The Normans later conquered England in 1066. He was a great leader."
)


@pytest.fixture(scope="module")
def lemmatize():
    return lemmatizer(get_parser("spacy"))


@pytest.fixture(scope="module")
def parsed():
    parser = get_parser("spacy")
    return {text: parser.parse(Context(id="c", context=text)) for text in (PAPER, NORMANS)}


def triple(subject, relation, obj, explanation=None):
    explanation = explanation or f"The text says {subject} {relation} {obj}."
    return ProposedTriple(subject=subject, relation=relation, object=obj, explanation=explanation)


def test_paper_example_passes_every_filter(parsed, lemmatize):
    proposed = triple("Lucius Harney", "becomes", "Mr. Royall's boarder")
    assert triple_rejection(proposed, PAPER, parsed[PAPER], lemmatize) is None
    answers, dropped = relation_answers([proposed], "c", PAPER, parsed[PAPER], lemmatize)
    assert dropped == []
    (answer,) = answers
    assert answer.kind is AnswerKind.RELATION and answer.text == "becomes"
    assert PAPER[answer.start : answer.end] == "becomes"


def test_entities_must_be_in_context_and_explanation():
    inside = triple("Rollo", "signed", "a treaty")
    assert entities_are_grounded(inside, NORMANS)
    invented = triple("Rollo", "signed", "a peace accord")
    assert not entities_are_grounded(invented, NORMANS)
    unexplained = triple("Rollo", "signed", "a treaty", explanation="Rollo made a deal.")
    assert not entities_are_grounded(unexplained, NORMANS)


def test_entities_must_be_nominal(parsed):
    assert entity_is_nominal("King Charles III", NORMANS, parsed[NORMANS])
    assert not entity_is_nominal("He", NORMANS, parsed[NORMANS])
    assert not entity_is_nominal("later", NORMANS, parsed[NORMANS])


def test_relation_must_be_a_lexical_verb_of_the_context(parsed, lemmatize):
    assert relation_verb("conquered", parsed[NORMANS], lemmatize) is not None
    assert relation_verb("conquer", parsed[NORMANS], lemmatize) is not None  # lemma match
    assert relation_verb("was", parsed[NORMANS], lemmatize) is None  # linking verb
    assert relation_verb("invaded", parsed[NORMANS], lemmatize) is None  # not in the context
    assert relation_verb("became", parsed[PAPER], lemmatize) is not None  # irregular: the lemmas


def test_rejections_are_named_and_duplicates_dropped(parsed, lemmatize):
    proposals = [
        triple("The Normans", "conquered", "England"),
        triple("The Normans", "conquered", "England"),
        triple("He", "was", "a great leader"),
        triple("Rollo", "signed", "Rollo"),
    ]
    answers, dropped = relation_answers(proposals, "c", NORMANS, parsed[NORMANS], lemmatize)
    assert [a.triple.object for a in answers] == ["England"]
    assert [reason for _, reason in dropped] == [
        "duplicate triple",
        "entity is not a noun phrase",
        "identical entities",
    ]
