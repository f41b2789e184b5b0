"""III-C1 constraint checks: each rule with passing and failing cases."""

from cq2a.checks import (
    answer_is_lexically_valid,
    answer_leaks_into_question,
    check_question,
    explanation_is_complete,
    question_length_is_ok,
    question_mentions_both_entities,
    rejection_reasons,
)
from cq2a.models import Answer, AnswerKind, RejectReason, Triple


def make_answer(text, kind=AnswerKind.ENTITY_WORD, **extra):
    return Answer(
        id="c:e0", context_id="c", kind=kind, text=text, sentence="s", sentence_index=0, **extra
    )


def relation_answer():
    triple = Triple(subject="Lucius Harney", relation="becomes", object="Mr. Royall's boarder")
    return make_answer("becomes", AnswerKind.RELATION, lemma="become", upos="VERB", triple=triple)


def test_pronouns_and_demonstratives_are_not_valid_answers():
    assert not answer_is_lexically_valid(make_answer("he", upos="PRON")).passed
    assert not answer_is_lexically_valid(make_answer("that")).passed
    assert answer_is_lexically_valid(make_answer("Normandy", upos="PROPN")).passed


def test_non_lexical_verbs_are_not_valid_answers():
    assert not answer_is_lexically_valid(make_answer("is", upos="AUX")).passed
    assert not answer_is_lexically_valid(make_answer("was", upos="VERB")).passed
    assert answer_is_lexically_valid(make_answer("conquered", upos="VERB")).passed
    # The paper's own relation example is lexical.
    assert answer_is_lexically_valid(relation_answer()).passed


def test_completeness_needs_entity_in_explanation():
    answer = make_answer("Normandy")
    assert explanation_is_complete(answer, "The text says the region is Normandy.").passed
    assert not explanation_is_complete(answer, "The region is in France.").passed


def test_completeness_ignores_punctuation_but_not_words():
    answer = make_answer("Denmark, Iceland and Norway", AnswerKind.ENTITY_PHRASE)
    serial_comma = "They came from Denmark, Iceland, and Norway, the passage says."
    assert explanation_is_complete(answer, serial_comma).passed
    assert not explanation_is_complete(answer, "They came from Denmark, Iceland or Norway.").passed
    assert not explanation_is_complete(answer, "They came from Denmark and Norway.").passed


def test_completeness_needs_whole_triple_for_relations():
    answer = relation_answer()
    full = "Lucius Harney becomes Mr. Royall's boarder, so the relation is becomes."
    assert explanation_is_complete(answer, full).passed
    assert not explanation_is_complete(answer, "Lucius Harney becomes a lodger.").passed


def test_leak_of_the_answer_itself():
    answer = make_answer("Normandy", lemma="Normandy")
    assert not answer_leaks_into_question(answer, "Where is Normandy located in France?").passed
    assert answer_leaks_into_question(answer, "Which region gave the Normans their name?").passed


def test_leak_of_the_lemma_catches_inflections():
    answer = make_answer("conquered", upos="VERB", lemma="conquer")
    assert not answer_leaks_into_question(answer, "Who did the Normans conquer in 1066?").passed
    assert not answer_leaks_into_question(answer, "What happens when a king conquers land?").passed
    assert answer_leaks_into_question(answer, "What did the Normans do to England in 1066?").passed


def test_leak_of_a_phrase_noun():
    answer = make_answer(
        "the Norman conquest of England",
        AnswerKind.ENTITY_PHRASE,
        head_nouns=["conquest", "England"],
    )
    assert not answer_leaks_into_question(answer, "What event in England began in 1066?").passed
    assert answer_leaks_into_question(answer, "What event of 1066 changed the island?").passed


def test_leak_of_the_relation():
    answer = relation_answer()
    assert not answer_leaks_into_question(
        answer, "Who becomes Mr. Royall's boarder, Lucius Harney?"
    ).passed
    assert answer_leaks_into_question(
        answer, "What does Lucius Harney do regarding Mr. Royall's boarder?"
    ).passed


def test_length_bounds():
    assert not question_length_is_ok("Who ruled?", 26, 300).passed
    assert question_length_is_ok("Who ruled Normandy after Rollo died?", 26, 300).passed
    assert not question_length_is_ok("x" * 301, 26, 300).passed


def test_relation_question_mentions_both_entities():
    answer = relation_answer()
    assert question_mentions_both_entities(
        answer, "What does Lucius Harney do with respect to Mr. Royall's boarder?"
    ).passed
    assert not question_mentions_both_entities(answer, "What does Lucius Harney do?").passed


def test_rejection_reasons_map_failures():
    answer = make_answer("Normandy", lemma="Normandy")
    results = check_question(answer, "Normandy?", "no mention", min_chars=26, max_chars=300)
    assert rejection_reasons(results) == [
        RejectReason.INCOMPLETE,
        RejectReason.LEAK,
        RejectReason.TOO_SHORT,
    ]
    good = check_question(
        answer,
        "Which region of France took its name from the Normans?",
        "The Normans gave their name to Normandy.",
        min_chars=26,
        max_chars=300,
    )
    assert rejection_reasons(good) == []


def test_leak_needs_an_inflection_not_a_longer_word():
    answer = make_answer("The Normans", AnswerKind.ENTITY_PHRASE, head_nouns=["Norman"])
    assert answer_leaks_into_question(answer, "Which people gave their name to Normandy?").passed
    assert not answer_leaks_into_question(answer, "Who were the Normans' rivals?").passed
    city = make_answer("city", upos="NOUN", lemma="city")
    assert not answer_leaks_into_question(city, "Which two cities did the river join?").passed
    assert answer_leaks_into_question(city, "Where did the author cite the treaty?").passed
    stop = make_answer("stopped", upos="VERB", lemma="stop")
    assert not answer_leaks_into_question(stop, "Who was stopping the raids in 911?").passed


def test_relation_leak_ignores_function_words_but_not_its_verbs():
    triple = Triple(
        subject="Rollo's contingents",
        relation="raided and ultimately settled",
        object="Normandy and parts of the Atlantic coast",
    )
    answer = make_answer(
        "raided and ultimately settled",
        AnswerKind.RELATION,
        lemma="raid",
        upos="VERB",
        triple=triple,
    )
    asked = "What did Rollo's contingents do in Normandy and parts of the Atlantic coast?"
    assert answer_leaks_into_question(answer, asked).passed
    leaking = "Where did Rollo's contingents raid and settle?"
    assert not answer_leaks_into_question(answer, leaking).passed
