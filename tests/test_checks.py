"""III-C1 constraint checks: each rule with passing and failing cases, on the offline parser's
lemmas, and the paper's leak rule on the human questions of the shipped SQuAD sample."""

import json
from pathlib import Path

import cq2a
from cq2a.answers.entities import answer_is_lexically_valid
from cq2a.checks.rules import (
    answer_leaks_into_question,
    check_question,
    explanation_is_complete,
    question_adds_no_ranking,
    question_length_is_ok,
    question_mentions_both_entities,
    ranks,
    rejection_reasons,
    superlatives,
)
from cq2a.language.parsing import get_parser, lemmatizer
from cq2a.models.records import Answer, AnswerKind, Context, RejectReason, Triple

PARSER = get_parser("spacy")
LEMMAS = lemmatizer(PARSER)
SQUAD = Path(cq2a.__file__).parent / "data" / "squad2_dev_sample.jsonl"


def make_answer(text, kind=AnswerKind.ENTITY_WORD, **extra):
    return Answer(
        id="c:e0", context_id="c", kind=kind, text=text, sentence="s", sentence_index=0, **extra
    )


def relation_answer():
    triple = Triple(subject="Lucius Harney", relation="becomes", object="Mr. Royall's boarder")
    return make_answer("becomes", AnswerKind.RELATION, lemma="become", upos="VERB", triple=triple)


def leaks(answer, question, rule="paper"):
    return not answer_leaks_into_question(answer, question, LEMMAS, rule).passed


def complete(answer, explanation):
    return explanation_is_complete(answer, explanation, LEMMAS).passed


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
    assert complete(answer, "The text says the region is Normandy.")
    assert not complete(answer, "The region is in France.")


def test_completeness_ignores_punctuation_and_inflection_but_not_words():
    answer = make_answer("Denmark, Iceland and Norway", AnswerKind.ENTITY_PHRASE)
    assert complete(answer, "They came from Denmark, Iceland, and Norway, the passage says.")
    assert not complete(answer, "They came from Denmark, Iceland or Norway.")
    assert not complete(answer, "They came from Denmark and Norway.")
    # lemma for lemma: the explanation may inflect the answer
    assert complete(
        make_answer("Norse raider", AnswerKind.ENTITY_PHRASE), "They were Norse raiders."
    )


def test_completeness_needs_whole_triple_for_relations():
    answer = relation_answer()
    assert complete(
        answer, "Lucius Harney becomes Mr. Royall's boarder, so the relation is becomes."
    )
    assert not complete(answer, "Lucius Harney becomes a lodger.")


def test_leak_of_the_answer_itself():
    answer = make_answer("Normandy", lemma="Normandy")
    assert leaks(answer, "Where is Normandy located in France?")
    assert not leaks(answer, "Which region gave the Normans their name?")


def test_leak_of_the_lemma_catches_inflections():
    answer = make_answer("conquered", upos="VERB", lemma="conquer")
    assert leaks(answer, "Who did the Normans conquer in 1066?")
    assert leaks(answer, "What happens when a king conquers land?")
    assert not leaks(answer, "What did the Normans do to England in 1066?")


def test_paper_rule_lets_a_phrase_noun_appear_and_strict_does_not():
    # Both questions were thrown away by the old rule in the demo; the paper's rule keeps them.
    language = make_answer(
        "the Gallo-Romance language", AnswerKind.ENTITY_PHRASE, head_nouns=["language"]
    )
    asked = "What language did the Normans adopt from the Frankish land they settled?"
    assert not leaks(language, asked)
    assert leaks(language, asked, rule="strict")
    dynasty = make_answer(
        "The Norman dynasty",
        AnswerKind.ENTITY_PHRASE,
        lemma="the Norman dynasty",
        head_nouns=["Norman", "dynasty"],
    )
    asked = "What dynasty had a major political, cultural and military impact on medieval Europe?"
    assert not leaks(dynasty, asked)
    assert leaks(dynasty, asked, rule="strict")
    assert leaks(dynasty, "What did the Norman dynasty change in medieval Europe?")


def test_leak_of_the_relation():
    answer = relation_answer()
    assert leaks(answer, "Who becomes Mr. Royall's boarder, Lucius Harney?")
    assert not leaks(answer, "What does Lucius Harney do regarding Mr. Royall's boarder?")


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


def check(answer, question, explanation):
    return check_question(
        answer, question, explanation, lemmatize=LEMMAS, min_chars=26, max_chars=300
    )


def test_rejection_reasons_map_failures():
    answer = make_answer("Normandy", lemma="Normandy")
    assert rejection_reasons(check(answer, "Normandy?", "no mention")) == [
        RejectReason.INCOMPLETE,
        RejectReason.LEAK,
        RejectReason.TOO_SHORT,
    ]
    good = check(
        answer,
        "Which region of France took its name from the Normans?",
        "The Normans gave their name to Normandy.",
    )
    assert rejection_reasons(good) == []


def test_a_relation_question_omitting_an_entity_has_its_own_reason():
    answer = relation_answer()
    results = check(
        answer,
        "What happens to Lucius Harney in the story?",
        "Lucius Harney becomes Mr. Royall's boarder.",
    )
    assert rejection_reasons(results) == [RejectReason.MISSING_ENTITY]


def test_leak_needs_an_inflection_not_a_longer_word():
    answer = make_answer("The Normans", AnswerKind.ENTITY_PHRASE, head_nouns=["Norman"])
    assert not leaks(answer, "Which people gave their name to Normandy?")
    assert leaks(answer, "Who were the Normans' rivals?")
    city = make_answer("city", upos="NOUN", lemma="city")
    assert leaks(city, "Which two cities did the river join?")
    assert not leaks(city, "Where did the author cite the treaty?")
    stop = make_answer("stopped", upos="VERB", lemma="stop")
    assert leaks(stop, "Who was stopping the raids in 911?")


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
    assert not leaks(answer, "What did Rollo's contingents do in Normandy and parts of the coast?")
    assert leaks(answer, "Where did Rollo's contingents raid and settle?")
    assert leaks(answer, "Where did Rollo's contingents finally settle?")


def human_questions():
    for line in SQUAD.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for qa in record["qas"]:
            if not qa.get("is_impossible") and qa["answers"]:
                yield qa["question"], qa["answers"][0]


def test_human_squad_questions_rarely_leak_by_the_paper_rule():
    """People do not write the answer into their question: on the 314 answerable questions of
    the sample, the paper's rule flags one ("When did the 1973 oil crisis begin?" for "1973",
    a true leak); the strict rule flags about 6%."""
    paper = strict = total = 0
    for question, text in human_questions():
        words = LEMMAS(text)
        kind = AnswerKind.ENTITY_PHRASE if len(words) > 1 else AnswerKind.ENTITY_WORD
        nouns = [lemma for lemma, upos in words if upos in {"NOUN", "PROPN"}]
        answer = make_answer(text, kind, lemma=" ".join(w for w, _ in words), head_nouns=nouns)
        total += 1
        paper += leaks(answer, question)
        strict += leaks(answer, question, rule="strict")
    assert total == 314
    assert paper <= 3
    assert strict > 5 * paper
    assert leaks(make_answer("1973"), "When did the 1973 oil crisis begin?")


FIEF = (
    "The Duchy of Normandy, which they formed by treaty with the French crown, was a great fief "
    "of medieval France, and under Richard I of Normandy was forged into a cohesive and "
    "formidable principality in feudal tenure."
)


def test_a_ranking_word_its_sentence_lacks_is_a_false_premise():
    answer = make_answer("Duchy of Normandy", AnswerKind.NAMED_ENTITY).model_copy(
        update={"sentence": FIEF}
    )
    explanation = "The Duchy of Normandy was a great fief of medieval France."
    # an accepted demo test: the passage calls it "a great fief", never the first
    bad = check(answer, "What was the first fief formed by the Normans and the French crown?",
                explanation)  # fmt: skip
    assert rejection_reasons(bad) == [RejectReason.FALSE_PREMISE]
    assert '"first"' in next(r.detail for r in bad if not r.passed)
    good = check(answer, "What great fief of medieval France did the Normans form by treaty?",
                 explanation)  # fmt: skip
    assert rejection_reasons(good) == []
    # a word the sentence (or a multi-sentence question's second one) does say is no premise
    assert question_adds_no_ranking(answer.model_copy(update={"bridge": "Its first duke."}),
                                    "Who was the first duke of the Duchy?").passed  # fmt: skip
    # inside a hyphenated word too, in the sentence ("first-ever") or in the question
    stadium = "In 1903, Harvard Stadium was the first-ever reinforced concrete stadium."
    dated = make_answer("1903", AnswerKind.NUMBER).model_copy(update={"sentence": stadium})
    assert question_adds_no_ranking(dated, "When did Harvard Stadium become the first one?").passed
    assert not question_adds_no_ranking(answer, "What was the first-ever fief of France?").passed
    # a yes/no question may rank only where its sentence ranks: "the first fief" of a sentence
    # that never ranks the fief is a statement the passage is silent on, neither yes nor no
    yes_no = make_answer("no", AnswerKind.YES_NO).model_copy(update={"sentence": FIEF})
    asked = check(yes_no, "Was the Duchy of Normandy the first fief of medieval France?",
                  "The Duchy of Normandy was a great fief of medieval France.")  # fmt: skip
    assert RejectReason.FALSE_PREMISE in rejection_reasons(asked)
    # the demo's accepted "no" (issue: "only people"), on the sentence it was written for
    normans = ("The Normans were the people who in the 10th and 11th centuries gave their name "
               "to Normandy, a region in France.")  # fmt: skip
    only = make_answer("no", AnswerKind.YES_NO).model_copy(update={"sentence": normans})
    assert not question_adds_no_ranking(
        only, "Was the Normans the only people who gave their name to Normandy?"
    ).passed
    # the same question without the word "only" (a later demo's accepted "no")
    besides = "Were there any other groups that gave their name to Normandy besides the Normans?"
    assert not question_adds_no_ranking(only, besides).passed
    assert not question_adds_no_ranking(only, "Did anyone else give their name to it?").passed
    # a sentence that says it makes it stated; a span question is not read for it
    alone = only.model_copy(update={"sentence": "No other people gave their name to Normandy."})
    assert question_adds_no_ranking(alone, besides).passed
    region = make_answer("Normandy", AnswerKind.NAMED_ENTITY).model_copy(
        update={"sentence": normans}
    )
    assert question_adds_no_ranking(region, "What region besides France did they name?").passed
    # a rank the sentence gives, changed, is how a "no" question is made
    ruler = make_answer("no", AnswerKind.YES_NO).model_copy(
        update={"sentence": "Rollo was their first ruler."}
    )
    assert question_adds_no_ranking(ruler, "Was Rollo the last ruler of the Normans?").passed
    # but a sentence that says "first" of something else does not make "only" stated
    assert not question_adds_no_ranking(ruler, "Was Rollo the only ruler of the Normans?").passed
    # a superlative too: the passage names Vistaril among the pamoate preparations, no more
    drug = make_answer("no", AnswerKind.YES_NO).model_copy(
        update={"sentence": "Vistaril, Equipose, Masmoran, and Paxistil are preparations of the "
                "pamoate salt."}
    )  # fmt: skip
    most = "Is Vistaril the most prescribed preparation of the pamoate salt?"
    assert RejectReason.FALSE_PREMISE in rejection_reasons(
        check(drug, most, "Vistaril, Equipose, Masmoran, and Paxistil are preparations.")
    )
    assert question_adds_no_ranking(drug, most).passed  # superlatives need the lemmatizer
    assert not question_adds_no_ranking(drug, "Is Vistaril the cheapest one?", LEMMAS).passed
    largest = drug.model_copy(update={"sentence": "Harvard has the largest library system."})
    assert question_adds_no_ranking(largest, "Is it the smallest library system?", LEMMAS).passed
    assert superlatives("Did at least 5 come, most of them late?", LEMMAS) == set()
    assert superlatives("Was it the best and happiest day?", LEMMAS) == {"best", "happiest"}
    # "all" or "always" where the sentence says nothing of how many: silent, neither yes nor no
    down = make_answer("no", AnswerKind.YES_NO).model_copy(
        update={"sentence": "Filoplumes and down may arise from the apterylae."}
    )
    assert not question_adds_no_ranking(down, "Are filoplumes present on all birds?").passed
    assert not question_adds_no_ranking(down, "Do filoplumes always arise there?").passed
    assert question_adds_no_ranking(down, "Do filoplumes arise from the pterylae?").passed
    # the demo's accepted "no" of earlier runs: the passage says "gradually", not "not always"
    merge = down.model_copy(
        update={"sentence": "Through generations of assimilation and mixing with the native "
                "Frankish and Roman-Gaulish populations, their descendants would gradually merge "
                "with the Carolingian-based cultures of West Francia."}
    )  # fmt: skip
    always_merge = "Did the Normans' descendants always merge with the Carolingian-based cultures?"
    assert not question_adds_no_ranking(merge, always_merge).passed
    # a sentence that says how many its statement holds for makes the "no" stated
    feathers = down.model_copy(
        update={"sentence": "Contour feathers are not uniformly distributed on the skin of the "
                "bird except in some groups such as the penguins."}
    )  # fmt: skip
    always = "Are contour feathers always distributed uniformly across the skin of all birds?"
    assert question_adds_no_ranking(feathers, always).passed
    # a span question is not read for it
    span = make_answer("apterylae", AnswerKind.NAMED_ENTITY).model_copy(
        update={"sentence": down.sentence}
    )
    assert question_adds_no_ranking(span, "Where do all filoplumes arise?").passed


def test_human_squad_questions_seldom_rank_beyond_their_sentence():
    """Of the 314 answerable human questions, a handful use "first", "last", "only" or "sole";
    two of those rank where no sentence holding the answer does ("What was the first year that
    Yale and Harvard played football?")."""
    ranking = flagged = 0
    for line in SQUAD.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        parsed = PARSER.parse(Context(id=record["id"], context=record["context"]))
        for qa in record["qas"]:
            if qa.get("is_impossible") or not qa["answers"]:
                continue
            text = qa["answers"][0]
            sentences = [s.text for s in parsed.sentences if text in s.text] or [""]
            answers = [make_answer(text).model_copy(update={"sentence": s}) for s in sentences]
            results = [question_adds_no_ranking(a, qa["question"]) for a in answers]
            ranking += bool(ranks(qa["question"]))
            flagged += not any(r.passed for r in results)
    assert ranking >= 5
    assert 1 <= flagged <= 3


def test_the_blank_check_catches_the_blank_the_prompts_show():
    from cq2a.adapters.llm.prompts import load_prompt
    from cq2a.checks.rules import question_has_its_form
    from cq2a.generation.questions import blank_out
    from cq2a.language.lexicon import BLANK

    cloze = blank_out("Rollo signed a treaty with King Charles III in 911.", "a treaty")
    shown = cloze.split()[2]  # the blank exactly as the user prompt shows it
    assert shown == BLANK and BLANK in load_prompt("entity_questions.system")
    target = make_answer("a treaty")
    for blank in (shown, "___"):  # as shown, and as a model shortens it
        question = f"What did Rollo sign {blank} with King Charles III in 911?"
        assert not question_has_its_form(target, question).passed
    assert question_has_its_form(target, "What did Rollo sign with King Charles III?").passed
