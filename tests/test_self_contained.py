"""The self-containedness check (a SUT that gets the question alone), read off the offline
parser's UD parse, and its wiring: applied only when ``sut.input`` is ``question``."""

from dataclasses import replace

import pytest

from cq2a.checks.rules import (
    Grounding,
    check_question,
    passage_names,
    question_stands_alone,
    rejection_reasons,
)
from cq2a.language.deixis import ENGLISH, FRENCH, DeixisLexicon
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
        "When did Harvard open the main campus?",  # "main" places, it does not classify
        "Whom did Conant hire at the first school?",
        "How was the school able to bring aboard talented students?",  # "able" is a predicate
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
        "Who replaced the Normans as the ruling class?",  # an adjective saying what kind
        "How did the Nixon administration negotiate with the uncooperative countries?",
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


def test_adjectives_that_place_a_noun_come_from_the_lexicon():
    """ "the main campus" needs its passage to say which campus; read with no relative
    adjectives, "main" says what kind of campus, as "financial" does in "the financial
    crisis"."""
    question = PARSE("When did Harvard open the main campus?")
    assert not question_stands_alone(question, ENGLISH).passed
    no_relatives = replace(ENGLISH, relative_adjectives=frozenset())
    assert question_stands_alone(question, no_relatives).passed


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


def test_a_french_passage_is_asked_for_standalone_questions_in_french():
    """The requirement comes in the passage's language where it has its own wording (French
    examples and pronouns), not in English after a French prompt."""
    from cq2a.adapters.llm.prompts import load_prompt
    from cq2a.generation.questions import generation_messages
    from cq2a.models.records import Context

    french = Context(id="f", context="Harvard fut fondée en 1636.", language="fr")
    alone, _ = generation_messages(answer(), french, 5, "", standalone=True)
    assert alone.endswith(load_prompt("fr/standalone_requirement"))
    assert "se suffire à elle-même" in alone and "stand on its own" not in alone
    german = Context(id="d", context="Harvard wurde 1636 gegründet.", language="de")
    alone, _ = generation_messages(answer(), german, 5, "", standalone=True)
    assert alone.endswith(load_prompt("standalone_requirement"))


CUISINE = (
    "La cuisine algérienne est riche. Les ingrédients de l'Algérie viennent de la Méditerranée, "
    "et les bijoux de Kabylie sont connus."
)


def test_a_passage_names_what_it_writes_capitalised_inside_a_sentence():
    names = passage_names(CUISINE, title="Algérie")
    assert {"algerie", "mediterranee", "kabylie"} <= names
    assert "la" not in names and "les" not in names  # capitalised only where a sentence opens


@pytest.mark.parametrize(
    ("question", "alone"),
    [
        ("Quelles sont les influences présentes dans la cuisine algérienne ?", True),
        ("Comment sont décorés les bijoux kabyles ?", True),
        ("Quelle est la capitale de l'état des zirides ?", False),  # not a name of this passage
        ("Quels ingrédients la cuisine utilise-t-elle ?", False),
        ("Combien de navires furent employés pour l'opération ?", False),
    ],
)
def test_french_adjectives_made_from_a_name_identify_their_noun(question, alone, french_parser):
    """French writes "algérienne" in lower case where English writes "Algerian": an adjective
    whose first letters open a name of the passage identifies its noun, as a capitalised one
    does in English."""
    parse = question_parser(french_parser)
    names = passage_names(CUISINE, title="Algérie")
    assert question_stands_alone(parse(question), FRENCH, names).passed is alone
    assert not question_stands_alone(parse(question), FRENCH).passed  # no names: nothing to match


def test_a_noun_the_passage_writes_as_a_name_is_one_in_lower_case(french_parser):
    parse = question_parser(french_parser)
    question = parse("Quelle est la capitale de l'état des zirides ?")
    names = passage_names("Le royaume des Zirides s'étend vers l'est.")
    assert question_stands_alone(question, FRENCH, names).passed
    assert not question_stands_alone(question, FRENCH).passed


def test_english_reads_no_passage_names():
    """English capitalises a name's adjective, so its check ignores the passage's names: "the
    normal route" is not made from "Normandy"."""
    question = PARSE("What was the normal route?")
    names = passage_names("Rollo ruled in Normandy.")
    assert not question_stands_alone(question, ENGLISH, names).passed


def test_a_run_checks_with_its_passage_names(french_parser):
    """``check_question`` reads the names off its ``Grounding`` (the passage and its title)."""
    question = "Quelles sont les influences présentes dans la cuisine algérienne en 1636 ?"
    limits = {"lemmatize": LEMMAS, "min_chars": 10, "max_chars": 200}
    alone = {"parse_question": question_parser(french_parser), "deixis": FRENCH}
    grounded = Grounding(CUISINE, frozenset(), title="Algérie")
    unnamed = Grounding("Une cuisine riche.", frozenset())
    with_names = check_question(answer(), question, "1636", grounding=grounded, **alone, **limits)
    without = check_question(answer(), question, "1636", grounding=unnamed, **alone, **limits)
    assert RejectReason.NOT_SELF_CONTAINED not in rejection_reasons(with_names)
    assert RejectReason.NOT_SELF_CONTAINED in rejection_reasons(without)
