"""The self-containedness check (a SUT that gets the question alone), read off the offline
parser's UD parse, and its wiring: applied only when ``sut.input`` is ``question``."""

from dataclasses import replace

import pytest

from cq2a.checks.rules import check_question, question_stands_alone, rejection_reasons
from cq2a.language.deixis import ENGLISH, DeixisLexicon
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
        "What did Rollo do with his land after the treaty?",
        "When did Saudi Arabia join the embargo?",
        "Who founded the school in 1636?",
        "What was the naval base called?",
        "What is the total cost of attendance in 2012-13?",
        "How many courses must undergraduates take each year?",
        "In the war, Britain lost which colonies?",
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
        "Which country is the company that built the Sinai pipeline from?",
        "What organization did Harvard found in 1900?",
        "In what year was Harvard renamed after John Harvard?",
        "When did the 1973 oil crisis begin?",
        "Who was the duke in the Battle of Hastings?",
        "What is the capital of France?",
        "What continent are the Canary Islands off the coast of?",
        "Who defeated Anglo-Norman forces during the third Crusade?",
        "What is the Norman architecture idiom?",
        "Why was old oil withdrawn from the market?",
        "What was the name of the castle built by William in 1066?",
        "What does the word 'float' mean for a currency?",
        "What is the world's largest academic library system?",
        "Which group benefited from the funds distributed by the religious charity, "
        "al-Haramain Foundation?",
        "Who kicked Ethelred out?",  # a rare name the tagger reads as a verb
    ],
)
def test_questions_that_name_their_subject_pass(question):
    assert stands_alone(question)


def test_the_lexicon_is_a_parameter():
    """Another language's closed classes come in as a lexicon: with no text nouns and no
    articles, "the passage" is only a noun."""
    empty = DeixisLexicon(
        text_nouns=frozenset(),
        demonstratives=frozenset(),
        anaphoric_pronouns=frozenset(),
        expletives=frozenset(),
        definite_articles=frozenset(),
        unique_nouns=frozenset(),
        interrogatives=frozenset(),
    )
    question = "According to the passage, when did the Normans reach Italy?"
    assert question_stands_alone(PARSE(question), empty).passed


def test_nouns_with_one_referent_come_from_the_lexicon():
    """ "the market" is the same market in any passage; without it in the lexicon, it is a
    definite noun nothing identifies."""
    question = PARSE("Why was old oil withdrawn from the market?")
    assert question_stands_alone(question, ENGLISH).passed
    assert not question_stands_alone(question, replace(ENGLISH, unique_nouns=frozenset())).passed


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
