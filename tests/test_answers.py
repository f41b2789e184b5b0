"""Answer normalisation, yes/no mapping and the majority vote (III-C2)."""

from __future__ import annotations

import pytest

from cq2a.consistency.voting import answer_key, majority_vote
from cq2a.language.answers import align_to_context, normalize_answer, normalize_yes_no


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("  Normandy  ", "Normandy"),
        ('"Normandy."', "Normandy"),
        ("Answer: Rollo", "Rollo"),
        ('  "Answer:  the  Seine." ', "the Seine"),
        ("U.S.", "U.S."),
        ("Martin Luther King Jr.", "Martin Luther King Jr."),
        ("10th and 11th centuries,", "10th and 11th centuries"),
        ("", ""),
    ],
)
def test_normalize_answer(raw: str, clean: str) -> None:
    assert normalize_answer(raw) == clean


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("Yes.", "yes"),
        ("yes, it is", "yes"),
        ("Yes it is.", "yes"),
        ("True", "yes"),
        ("correct", "yes"),
        ("No", "no"),
        ("no, they did not", "no"),
        ("No it isn't", "no"),
        ("false", "no"),
        ("Answer: FALSE.", "no"),
        ("Nope!", "no"),
        ("Normandy", None),
        ("No one", None),
        ("no evidence", None),
        ("True Blood", None),
        ("Yesterday", None),
        ("Norway", None),
    ],
)
def test_normalize_yes_no(raw: str, label: str | None) -> None:
    assert normalize_yes_no(raw) == label


def test_majority_vote_three_to_two_returns_first_surface_form() -> None:
    votes = ["the Seine", "Epte", "The Seine.", "epte", "the seine"]
    assert majority_vote(votes) == ("the Seine", 3)


def test_majority_vote_tie_goes_to_first_seen() -> None:
    assert majority_vote(["Epte", "Seine", "Seine", "Epte"]) == ("Epte", 2)
    assert majority_vote(["Seine", "Epte"]) == ("Seine", 1)


def test_majority_vote_groups_yes_no_variants() -> None:
    assert majority_vote(["No.", "yes", "True", "Yes, it is", "no"]) == ("yes", 3)


def test_majority_vote_ignores_empty_answers() -> None:
    assert majority_vote(["", "  ", "Rollo"]) == ("Rollo", 1)
    assert majority_vote(["", ""]) == ("", 0)
    assert majority_vote([]) == ("", 0)


CONTEXT = (
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, "
    "a region in France. They were descended from Norse raiders and pirates from Denmark, "
    "Iceland and Norway who, under their leader Rollo, agreed to swear fealty to King Charles III."
)


@pytest.mark.parametrize(
    ("vote", "span"),
    [
        ("denmark, iceland, and norway", "Denmark, Iceland and Norway"),  # serial comma, case
        ("Normandy", "Normandy"),
        ("They came from Denmark, Iceland and Norway.", "from Denmark, Iceland and Norway"),
        ("Rollo the leader", "leader Rollo"),
        ("yes", "yes"),  # yes/no answers are not spans
        ("Paris", "Paris"),  # nothing like it in the context: kept as written
    ],
)
def test_align_to_context_finds_the_span_a_vote_stands_for(vote: str, span: str) -> None:
    assert align_to_context(vote, CONTEXT) == span


def test_votes_that_differ_in_punctuation_and_articles_are_one_answer() -> None:
    votes = ["Denmark, Iceland, and Norway", "Denmark, Iceland and Norway", "the Norse raiders"]
    assert majority_vote(votes) == ("Denmark, Iceland, and Norway", 2)
    assert answer_key("The Seine.") == answer_key("seine")


def test_generation_blanks_the_target_out_of_its_sentence() -> None:
    from cq2a.generation.questions import blank_out

    sentence = "Rollo signed a treaty with King Charles III in 911."
    assert blank_out(sentence, "a treaty") == "Rollo signed _____ with King Charles III in 911."
    assert blank_out(sentence, "Normandy") == sentence


@pytest.mark.parametrize(
    ("vote", "question", "expected"),
    [
        # the re-asker restated the question around the answer: the new words are the answer
        (
            "Heath asked the British to heat only one room in their houses over the winter",
            "Who asked the British to heat only one room in their houses over the winter?",
            "Heath",
        ),
        (
            "Heath asked the British to heat only one room in their houses over the winter",
            "What did Heath ask the British to do over the winter?",
            "heat only one room in their houses",
        ),
        (
            "In 911, Rollo swore fealty to King Charles III of West Francia",
            "To whom did Rollo swear fealty in 911?",
            "King Charles III of West Francia",
        ),
        # a question word right before a new one is part of the answer
        (
            "The energy crisis led to greater interest in renewable energy and nuclear power",
            "What led to greater interest in renewable energy and nuclear power?",
            "energy crisis",
        ),
        # short answers, and answers sharing fewer than three words, stay as they are
        ("Germany", "Which German state banned driving on Sundays?", "Germany"),
        (
            "Normandy, a region in France",
            "Which region of France took its name from the Normans?",
            "Normandy, a region in France",
        ),
    ],
)
def test_a_vote_that_restates_the_question_is_cut_to_its_answer(
    vote: str, question: str, expected: str, spacy_parser
) -> None:
    from cq2a.language.answers import strip_restated_question
    from cq2a.language.parsing import lemmatizer

    assert strip_restated_question(vote, question, lemmatizer(spacy_parser)) == expected


def test_restating_the_question_is_decided_on_the_parsers_lemmas(spacy_parser) -> None:
    # a crude suffix stemmer saw "saw" and "see", "led" and "leading", "children" and "child",
    # "built" and "build" as different words, and "see" as "s"
    from cq2a.language.answers import restates_question, strip_restated_question
    from cq2a.language.parsing import lemmatizer

    lemmas = lemmatizer(spacy_parser)
    assert restates_question("The Normans saw in 911", "What did the Normans see in 911?", lemmas)
    assert restates_question("The Normans were led", "Who was leading the Normans?", lemmas)
    assert not restates_question("Rollo", "Who was leading the Normans?", lemmas)
    vote = "Castles were built by the children of Rollo in Normandy"
    question = "What did the child of Rollo build in Normandy?"
    assert strip_restated_question(vote, question, lemmas) == "Castles"


def test_a_relation_is_blanked_where_its_verb_was_read():
    from cq2a.generation.questions import blank_span
    from cq2a.models.records import Answer, AnswerKind, Evidence

    context = "Rollo signed a treaty. The Normans signed nothing else, and later signed more."
    sentence = "The Normans signed nothing else, and later signed more."
    at = context.index(sentence)
    verb = context.rindex("signed")  # the second "signed" of the sentence
    evidence = [Evidence(start=at, end=at + len(sentence), text=sentence)]
    answer = Answer(id="c:r0", context_id="c", kind=AnswerKind.RELATION, text="signed",
                    sentence=sentence, sentence_index=1, start=verb, end=verb + 6,
                    evidence=evidence)  # fmt: skip
    assert blank_span(answer) == "The Normans signed nothing else, and later _____ more."
    loose = answer.model_copy(update={"evidence": []})
    assert blank_span(loose) == "The Normans _____ nothing else, and later signed more."
