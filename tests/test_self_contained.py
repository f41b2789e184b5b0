"""The self-containedness check (a SUT that gets the question alone), read off the offline
parser's UD parse, and its wiring: applied only when ``sut.input`` is ``question``."""

import pytest

from cq2a.checks.rules import check_question, question_stands_alone, rejection_reasons
from cq2a.language.deixis import DeixisLexicon
from cq2a.language.parsing import get_parser, lemmatizer, question_parser
from cq2a.models.records import Answer, AnswerKind, RejectReason

PARSER = get_parser("spacy")
PARSE = question_parser(PARSER)
LEMMAS = lemmatizer(PARSER)


def stands_alone(question: str) -> bool:
    return question_stands_alone(PARSE(question)).passed


@pytest.mark.parametrize(
    "question",
    [
        "According to the passage, when did the Normans reach Italy?",
        "What did the author say about Rollo's treaty with Charles III?",
        "Why did European nations turn away from the US for this reason?",
        "What was Iran's relationship with the US at that time?",
        "What did he do after the treaty of 911?",
        "When did they raise the price of oil to $5.11?",
        "In what year was the school founded?",
        "What came after this oil crisis?",
    ],
)
def test_questions_that_lean_on_their_passage_fail(question):
    result = question_stands_alone(PARSE(question))
    assert not result.passed
    assert result.detail.startswith("leans on its passage")


@pytest.mark.parametrize(
    "question",
    [
        "What document did Harvard publish in 1945?",
        "Who is the author of the Gesta Normannorum Ducum?",
        "Who gave their name to Normandy in the 10th century?",
        "How long did it take to build Harvard Stadium?",
        "What did Rollo do with his land after the treaty?",
        "Which country is the company that built the Sinai pipeline from?",
        "What organization did Harvard found in 1900?",
        "In what year was Harvard renamed after John Harvard?",
    ],
)
def test_questions_that_name_their_subject_pass(question):
    assert stands_alone(question)


def test_the_lexicon_is_a_parameter():
    """Another language's closed classes come in as a lexicon: with no text nouns, "the
    passage" is only a definite noun, which a proper noun anchors."""
    empty = DeixisLexicon(
        text_nouns=frozenset(),
        demonstratives=frozenset(),
        anaphoric_pronouns=frozenset(),
        expletives=frozenset(),
        definite_articles=frozenset(),
        interrogatives=frozenset(),
    )
    question = "According to the passage, when did the Normans reach Italy?"
    assert question_stands_alone(PARSE(question), empty).passed


def answer() -> Answer:
    return Answer(
        id="c:e0",
        context_id="c",
        kind=AnswerKind.ENTITY_WORD,
        text="1636",
        sentence="Harvard was founded in 1636.",
        sentence_index=0,
    )


def test_checked_only_given_a_question_parser():
    question = "In what year was the school founded?"
    explanation = "The passage says it was founded in 1636."
    limits = {"lemmatize": LEMMAS, "min_chars": 10, "max_chars": 200}
    default = check_question(answer(), question, explanation, **limits)
    assert not rejection_reasons(default)
    alone = check_question(answer(), question, explanation, parse_question=PARSE, **limits)
    assert rejection_reasons(alone) == [RejectReason.NOT_SELF_CONTAINED]


def test_generation_asks_for_standalone_questions_only_in_question_mode():
    from cq2a.generation.questions import generation_messages
    from cq2a.models.records import Context
    from cq2a.runtime.steps import generation_limits
    from cq2a.settings import Settings

    context = Context(id="c", context="Harvard was founded in 1636.")
    default, _ = generation_messages(answer(), context, 5, "")
    alone, _ = generation_messages(answer(), context, 5, "", standalone=True)
    assert alone.startswith(default) and "stand on its own" in alone
    assert "stand on its own" not in default
    assert not generation_limits(Settings()).standalone_questions
    question_only = Settings().with_overrides(**{"sut.input": "question"})
    assert generation_limits(question_only).standalone_questions
