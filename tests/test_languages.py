"""Tests in the passage's language: French parsing from spaCy's UD pipeline, French answers
read by the oracle's rules, the embedder and thresholds per language, and a run mixing English
and French passages through the compiled graph, every LLM role played by the scripted server."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from cq2a.adapters.llm.prompts import load_prompt, render_prompt
from cq2a.answers.plan import select_entities
from cq2a.checks.rules import (
    Grounding,
    check_question,
    is_yes_no_question,
    question_borrows_no_name,
    question_in_passage_language,
    rejection_reasons,
)
from cq2a.generation.questions import example_names
from cq2a.graph import build_graph
from cq2a.language.answers import is_abstention, normalize_yes_no
from cq2a.language.embeddings import MINILM, USEM3, USEM3_THRESHOLD
from cq2a.language.parsing import lemmatizer
from cq2a.models.records import Answer, AnswerKind, Context, RejectReason
from cq2a.runtime.services import release_services, services_for
from cq2a.settings import Settings, SUTSpec
from cq2a.testing.script import field_of, marker, user_text
from cq2a.testing.scripted_server import ChatRequest, ScriptedLLMServer
from tests.test_graph import settings_for

FRENCH = Context(
    id="normands",
    context=(
        "Les Normands ont donné leur nom à la Normandie, une région de France. "
        "Charles III leur a accordé des terres en 911 après le siège de Chartres."
    ),
    language="fr",
)
ENGLISH = Context(
    id="normans",
    context=(
        "The Normans gave their name to Normandy, a region in France. "
        "Charles III granted them lands in 911 after the siege of Chartres."
    ),
    language="en",
)
PROMPTS = ("entity_questions", "reask", "judge")
#: question -> the answer the scripted re-asker and SUT give it
GOLD: dict[str, str] = {}


def tokens_of(parsed, sentence: int = 0) -> list[str]:
    return [t.text for t in parsed.sentences[sentence].tokens]


def phrase_texts(parsed, label: str, sentence: int = 0) -> list[str]:
    words = tokens_of(parsed, sentence)
    spans = parsed.sentences[sentence].phrases
    return [" ".join(words[p.start - 1 : p.end]) for p in spans if p.label == label]


def test_french_is_parsed_with_ud_labels_prepositions_left_out_of_noun_phrases(french_parser):
    parsed = french_parser.parse(FRENCH)
    assert parsed.parser.startswith("spacy:fr_core_news")
    assert len(parsed.sentences) == 2
    tokens = {t.text: t for t in parsed.sentences[0].tokens}
    assert tokens["ont"].deprel.startswith("aux") and tokens["donné"].deprel == "root"
    assert tokens["la"].feature("Definite") == "Def"
    nouns = phrase_texts(parsed, "NP")
    assert "la Normandie" in nouns and not any(p.startswith("à ") for p in nouns)
    verbs = phrase_texts(parsed, "VP")
    assert verbs and all(v.startswith("ont donné") for v in verbs)  # "ont" heads no VP of its own


def test_french_numbers_come_from_the_parse_whole_and_a_quoted_name_stays_in_its_sentence(
    french_parser,
):
    passage = Context(
        id="sport",
        context=(
            "Les ménages représentent plus de 50 % de ces montants, le 7 novembre 1624. "
            "Le ministère estime à 100 000 le nombre de salariés de trois régions. "
            "L’association « Ulis Pêche Passion » y organise des concours de pêche."
        ),
        language="fr",
    )
    parsed = french_parser.parse(passage)
    assert len(parsed.sentences) == 3  # not cut after "Pêche"
    spans = {
        (e.label, " ".join(s.token(i).text for i in range(e.start, e.end + 1)))
        for s in parsed.sentences
        for e in s.entities
    }
    assert {("PERCENT", "50 %"), ("DATE", "7 novembre 1624"), ("CARDINAL", "100 000")} <= spans
    assert ("CARDINAL", "trois") in spans
    assert not {("CARDINAL", "7"), ("CARDINAL", "1624")} & spans  # the date's own numbers
    assert any(text == "Ulis Pêche Passion" for _, text in spans)
    answers = select_entities(parsed, passage, "asked")
    texts = [a.text for a in answers]
    assert {"50 %", "100 000", "Ulis Pêche Passion"} <= set(texts)
    assert "000" not in texts
    assert "Ulis Pêche" not in [a.text for a in answers if a.kind.value == "named-entity"]


def test_french_answers_are_read_by_the_oracle_rules() -> None:
    assert normalize_yes_no("Oui.") == "yes"
    assert normalize_yes_no("Non, il ne l'a pas fait.") == "no"
    assert normalize_yes_no("Normandie") is None
    assert is_abstention("Sans réponse") and is_abstention("Le passage ne le dit pas.")
    assert not is_abstention("la Normandie")
    assert is_yes_no_question("Est-ce que les Normands ont donné leur nom à la Normandie ?")
    assert is_yes_no_question("Les Normands ont-ils donné leur nom à la Normandie ?")
    assert not is_yes_no_question("Quand les Normands sont-ils arrivés en France ?")


def test_each_language_has_its_embedder_and_calibrated_threshold() -> None:
    services = services_for(Settings(cache_path="off"), "languages")
    french, english = services.speaking("fr"), services.speaking("en")
    assert (french.embedding_model, english.embedding_model) == (USEM3, MINILM)
    assert french.consistency_threshold == french.oracle_threshold == USEM3_THRESHOLD
    same, other = french.embedder.similarity_pairs(
        ["la Normandie", "la Normandie"], ["the region of Normandy", "Chartres"]
    )
    assert same >= USEM3_THRESHOLD > other
    release_services("languages")


def mixed_sut(items: list[Any]) -> list[str | None]:
    return [GOLD.get(item.question) for item in items]


def write_questions(request: ChatRequest, index: int) -> dict[str, Any]:
    text = user_text(request)
    answer = field_of(text, "Target answer")
    count = int(re.search(r"Write (\d+) different", text).group(1))  # type: ignore[union-attr]
    french = "Normandie" in text
    made = []
    for _ in range(count):
        number = len(GOLD)
        question = (
            f"Quelle réponse le passage donne-t-il à la question {number} ?"
            if french
            else f"Which answer does the passage give to question {number}?"
        )
        GOLD[question] = answer
        made.append({"question": question, "explanation": f"{answer}."})
    return {"questions": made}


def reask(request: ChatRequest, index: int) -> str:
    return GOLD.get(field_of(user_text(request), "Question"), "no idea")


@pytest.fixture
def server(spacy_parser, french_parser):
    GOLD.clear()
    release_services()
    with ScriptedLLMServer() as scripted:
        scripted.rules.on(marker("entity_questions.system"), write_questions)
        scripted.rules.on(marker("fr/entity_questions.system"), write_questions)
        scripted.rules.on(marker("reask.system"), reask)
        scripted.rules.on(marker("judge.system"), {"score": 100, "explanation": "same"})
        yield scripted
    release_services()


def test_a_mixed_run_gives_each_test_its_passage_language_and_english_prompts_unchanged(server):
    settings = settings_for(
        server,
        sut=SUTSpec(kind="callable", model="tests.test_languages:mixed_sut"),
        answers="asked",
        answers_per_context=2,
        questions_per_entity=1,
    )
    result = build_graph().invoke({"contexts": [ENGLISH, FRENCH]}, context=settings)
    verdicts = result["verdicts"]
    languages = {v.context_id: v.language for v in verdicts}
    assert languages == {"normans": "en", "normands": "fr"}
    assert not any(v.bug for v in verdicts)
    french_questions = [v.question for v in verdicts if v.language == "fr"]
    assert french_questions and all(q.startswith("Quelle") for q in french_questions)
    french_generation = load_prompt("fr/entity_questions.system")
    asked = [r.body["messages"][0]["content"] for r in server.requests]
    assert french_generation in asked and load_prompt("entity_questions.system") in asked
    requirement = render_prompt("language_requirement", language="French")
    assert requirement.startswith("The passage is written in French.")
    for request in server.requests:
        system = request.body["messages"][0]["content"]
        user = json.dumps(request.body["messages"][1:], ensure_ascii=False)
        if system == load_prompt("fr/entity_questions.system"):  # French, where wording matters
            assert "Normandie" in user
            continue
        name = next(n for n in PROMPTS if marker(f"{n}.system") in system)
        if "Normandie" in user:
            assert system == f"{load_prompt(f'{name}.system')}\n\n{requirement}"
        else:  # English: the prompt file, byte for byte
            assert system == load_prompt(f"{name}.system")


def test_a_question_may_not_borrow_a_name_of_the_prompts_example(french_parser):
    lemmatize = lemmatizer(french_parser)
    names = example_names("fr", lemmatize)
    assert {"rollon", "normandie"} <= names and "passage" not in names
    boehme = Grounding(
        "Mais ce régime de travail, combiné aux inquiétudes générées par sa situation "
        "sociale, l'épuise. Il faut le rapatrier d'urgence à Görlitz.",
        names,
    )
    leaked = "Est-ce que le régime de travail a épuisé Rollon ?"
    result = question_borrows_no_name(leaked, boehme, lemmatize)
    assert not result.passed and "rollon" in result.detail.lower()
    assert rejection_reasons([result]) == [RejectReason.UNGROUNDED]
    own = "Est-ce que le régime de travail a épuisé Böhme à Görlitz ?"
    assert question_borrows_no_name(own, boehme, lemmatize).passed
    # the example's names are the passage's own in a passage about the Normans
    normands = Grounding(FRENCH.context, names)
    asked = "Quelle région de la France doit son nom aux Normands ?"
    assert question_borrows_no_name(asked, normands, lemmatize).passed
    assert not question_borrows_no_name("Quel chef est Rollon ?", normands, lemmatize).passed
    assert question_borrows_no_name(
        "À quelle région de France les Normands ont-ils donné leur nom ?", normands, lemmatize
    ).passed


@pytest.mark.parametrize(
    ("question", "language", "written_in"),
    [
        ("Where did Yoweri Kaguta grow up?", "fr", "English"),
        ("Is Tiraspol using the same name in all three official languages?", "fr", "English"),
        ("Quelle région de la France doit son nom aux Normands ?", "en", "French"),
        ("Dans quelle guerre mondiale servit le bataillon du King's African Rifles ?", "fr", None),
        ("Qu'est-ce que l'Ouadia ?", "fr", None),  # a name nearly alone, still French
        ("What did Toyota rebrand its Forte as?", "en", None),
    ],
)
def test_a_question_is_written_in_its_passage_language(question, language, written_in):
    result = question_in_passage_language(question, language)
    assert result.passed is (written_in is None)
    if written_in:
        assert result.detail.startswith(f"written in {written_in}")
        assert rejection_reasons([result]) == [RejectReason.WRONG_FORM]


def test_every_question_of_a_run_is_checked_for_its_passage_language(spacy_parser):
    """``check_question`` reads the passage's language off its ``Grounding``."""
    passage = "Le traité de 911 donne l'Epte comme frontière."
    answer = Answer(
        id="c:e0",
        context_id="c",
        kind=AnswerKind.ENTITY_WORD,
        text="Epte",
        sentence=passage,
        sentence_index=0,
    )
    limits = {"lemmatize": lemmatizer(spacy_parser), "min_chars": 10, "max_chars": 200}
    question = "Which river did the treaty of 911 name as the border?"
    french = Grounding(passage, frozenset(), None, "fr")
    unknown = Grounding(passage, frozenset())
    checked = check_question(answer, question, passage, grounding=french, **limits)
    assert RejectReason.WRONG_FORM in rejection_reasons(checked)
    unchecked = check_question(answer, question, passage, grounding=unknown, **limits)
    assert RejectReason.WRONG_FORM not in rejection_reasons(unchecked)
