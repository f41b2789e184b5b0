"""Entity extraction rules (III-A1), each with passing and failing cases, and real-parse runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cq2a
from cq2a.answers.entities import (
    brackets_are_balanced,
    drop_duplicate_phrases,
    extract_entities,
    is_infinitive,
    is_modifier,
    is_valid_noun,
    is_valid_verb,
    kept_phrases,
    phrase_has_content_word,
    phrase_is_long_enough,
    strip_clause_tokens,
    surface_text,
    word_inside_phrase,
)
from cq2a.answers.plan import sentence_spans
from cq2a.language.parsing import get_parser, parser_available
from cq2a.models.records import Answer, AnswerKind, Context, ParsedContext, Phrase, Sentence, Token

SQUAD = Path(cq2a.__file__).parent / "data" / "squad2_dev_sample.jsonl"
PRONOUNS = {"he", "she", "it", "they", "them", "their", "his", "her", "this", "that", "who"}
AUXILIARIES = {"is", "are", "was", "were", "be", "been", "has", "have", "had", "do", "did"}

Row = tuple[str, str, str, int, str]  # text, lemma, upos, head, deprel


def sentence_of(rows: list[Row], phrases: list[Phrase] | None = None, index: int = 0) -> Sentence:
    tokens, text = [], ""
    for n, (word, lemma, upos, head, deprel) in enumerate(rows, start=1):
        text += "" if not text or word in {".", ",", "'s"} else " "
        tokens.append(
            Token(index=n, text=word, lemma=lemma, upos=upos, head=head, deprel=deprel,
                  start=len(text), end=len(text) + len(word))
        )  # fmt: skip
        text += word
    return Sentence(index=index, text=text, start=0, end=len(text), tokens=tokens,
                    phrases=phrases or [])  # fmt: skip


LUCIUS: list[Row] = [
    ("Lucius", "Lucius", "PROPN", 2, "compound"),
    ("Harney", "Harney", "PROPN", 3, "nsubj"),
    ("becomes", "become", "VERB", 0, "root"),
    ("Mr.", "Mr.", "PROPN", 5, "compound"),
    ("Royall", "Royall", "PROPN", 7, "nmod:poss"),
    ("'s", "'s", "PART", 5, "case"),
    ("boarder", "boarder", "NOUN", 3, "xcomp"),
    (".", ".", "PUNCT", 3, "punct"),
]
LUCIUS_PHRASES = [
    Phrase(label="NP", start=1, end=2),
    Phrase(label="VP", start=3, end=7),
    Phrase(label="NP", start=4, end=7),
    Phrase(label="NP", start=4, end=6),
]
# "The people, who came from Denmark, settled."
PEOPLE: list[Row] = [
    ("The", "the", "DET", 2, "det"),
    ("people", "people", "NOUN", 8, "nsubj"),
    (",", ",", "PUNCT", 5, "punct"),
    ("who", "who", "PRON", 5, "nsubj"),
    ("came", "come", "VERB", 2, "acl:relcl"),
    ("from", "from", "ADP", 7, "case"),
    ("Denmark", "Denmark", "PROPN", 5, "obl"),
    ("settled", "settle", "VERB", 0, "root"),
    (".", ".", "PUNCT", 8, "punct"),
]
# "He is eating the conquered lands to survive."
EATING: list[Row] = [
    ("He", "he", "PRON", 3, "nsubj"),
    ("is", "be", "AUX", 3, "aux"),
    ("eating", "eat", "VERB", 0, "root"),
    ("the", "the", "DET", 6, "det"),
    ("conquered", "conquer", "VERB", 6, "amod"),
    ("lands", "land", "NOUN", 3, "obj"),
    ("to", "to", "PART", 8, "mark"),
    ("survive", "survive", "VERB", 3, "advcl"),
    (".", ".", "PUNCT", 3, "punct"),
]


def context_for(*sentences: Sentence) -> tuple[ParsedContext, Context]:
    text = " ".join(s.text for s in sentences)
    offset, shifted = 0, []
    for s in sentences:
        tokens = [t.model_copy(update={"start": t.start + offset, "end": t.end + offset})
                  for t in s.tokens]  # fmt: skip
        shifted.append(s.model_copy(update={"tokens": tokens, "start": offset,
                                            "end": offset + len(s.text)}))  # fmt: skip
        offset += len(s.text) + 1
    parsed = ParsedContext(context_id="c", parser="test", sentences=shifted)
    return parsed, Context(id="c", context=text)


# ---- phrase rules ----


def test_phrase_is_long_enough_needs_two_words() -> None:
    tokens = sentence_of(LUCIUS).tokens
    assert phrase_is_long_enough(tokens[0:2])  # Lucius Harney
    assert not phrase_is_long_enough(tokens[6:8])  # "boarder ." : punctuation is no word
    assert not phrase_is_long_enough(tokens[2:3])


def test_strip_clause_tokens_removes_the_clause_and_dangling_commas() -> None:
    sentence = sentence_of(PEOPLE)
    with_clause = Phrase(label="NP", start=1, end=7, clause_tokens=[4, 5, 6, 7])
    assert [t.text for t in strip_clause_tokens(sentence, with_clause)] == ["The", "people"]
    without = Phrase(label="NP", start=1, end=2)
    assert [t.text for t in strip_clause_tokens(sentence, without)] == ["The", "people"]
    middle = Phrase(label="VP", start=1, end=8, clause_tokens=[3, 4, 5, 6, 7])
    kept = strip_clause_tokens(sentence, middle)
    assert surface_text(sentence.text, kept) == "The people settled"


def test_drop_duplicate_phrases_keeps_the_first_case_insensitively() -> None:
    def answer(text: str, n: int) -> Answer:
        return Answer(id=str(n), context_id="c", kind=AnswerKind.ENTITY_PHRASE, text=text,
                      sentence="s", sentence_index=n)  # fmt: skip

    kept = drop_duplicate_phrases(
        [answer("The Normans", 0), answer("the  normans", 1), answer("West Francia", 2)]
    )
    assert [a.id for a in kept] == ["0", "2"]


def test_phrase_has_content_word_rejects_pronoun_only_phrases() -> None:
    sentence = sentence_of([("all", "all", "DET", 2, "det"), ("them", "they", "PRON", 0, "root")])
    assert not phrase_has_content_word(sentence.tokens)
    assert phrase_has_content_word(sentence_of(LUCIUS).tokens[:2])


def test_brackets_are_balanced() -> None:
    assert brackets_are_balanced('The Normans (Norman: "Nourmands")')
    assert not brackets_are_balanced('Norseman") raiders')
    assert not brackets_are_balanced("The Normans (Norman")


# ---- word rules ----


def test_is_valid_noun_accepts_nouns_and_rejects_pronouns() -> None:
    lucius = sentence_of(LUCIUS)
    assert is_valid_noun(lucius.token(7))  # boarder
    assert is_valid_noun(lucius.token(2))  # Harney (PROPN)
    eating = sentence_of(EATING)
    assert not is_valid_noun(eating.token(1))  # He
    assert not is_valid_noun(eating.token(3))  # a verb


def test_is_valid_verb_requires_a_lexical_verb() -> None:
    eating = sentence_of(EATING)
    assert is_valid_verb(eating.token(3), eating)  # eating
    assert not is_valid_verb(eating.token(2), eating)  # is: AUX
    have = sentence_of([("They", "they", "PRON", 2, "nsubj"), ("had", "have", "VERB", 0, "root"),
                        ("ships", "ship", "NOUN", 2, "obj")])  # fmt: skip
    assert not is_valid_verb(have.token(2), have)  # light verb "have"


def test_verbs_functioning_as_modifiers_are_rejected() -> None:
    eating = sentence_of(EATING)
    assert is_modifier(eating.token(5)) and not is_valid_verb(eating.token(5), eating)
    people = sentence_of(PEOPLE)
    assert not is_modifier(people.token(5))  # a relative clause's predicate is no modifier
    assert is_valid_verb(people.token(5), people)


def test_infinitives_are_rejected() -> None:
    eating = sentence_of(EATING)
    assert is_infinitive(eating.token(8), eating) and not is_valid_verb(eating.token(8), eating)
    assert not is_infinitive(eating.token(3), eating)


def test_word_inside_phrase_of_the_same_sentence() -> None:
    lucius = sentence_of(LUCIUS, LUCIUS_PHRASES)
    phrases = kept_phrases(lucius)
    assert word_inside_phrase(lucius.token(7), phrases)  # boarder in "Mr. Royall's boarder"
    people = sentence_of(PEOPLE, [Phrase(label="NP", start=1, end=7, clause_tokens=[4, 5, 6, 7])])
    kept = kept_phrases(people)
    assert not word_inside_phrase(people.token(7), kept)  # Denmark was in the removed clause
    assert word_inside_phrase(people.token(2), kept)


# ---- extract_entities on hand-built parses ----


def test_paper_example_sentence() -> None:
    parsed, context = context_for(sentence_of(LUCIUS, LUCIUS_PHRASES))
    answers = extract_entities(parsed, context)
    texts = [a.text for a in answers]
    assert texts[:3] == ["Lucius Harney", "Mr. Royall's boarder", "Mr. Royall's"]
    assert "becomes Mr. Royall's boarder" in texts
    assert all(a.kind is AnswerKind.ENTITY_PHRASE for a in answers)  # every word is in a phrase
    boarder = answers[1]
    assert boarder.head_nouns == ["Mr.", "Royall", "boarder"]
    assert context.context[boarder.start : boarder.end] == boarder.text
    assert [a.id for a in answers] == [f"c:e{n}" for n in range(len(answers))]


def test_pronouns_and_auxiliaries_never_become_answers() -> None:
    phrases = [
        Phrase(label="NP", start=1, end=1),
        Phrase(label="VP", start=2, end=8, clause_tokens=[7, 8]),
    ]
    eating = sentence_of(EATING, phrases)
    parsed, context = context_for(eating)
    answers = extract_entities(parsed, context)
    assert {a.text for a in answers} == {"is eating the conquered lands"}
    words = extract_entities(*context_for(sentence_of(EATING)))
    assert [(a.text, a.upos) for a in words] == [("lands", "NOUN"), ("eating", "VERB")]


def test_limit_spreads_answers_over_sentences_and_keeps_a_prefix() -> None:
    first = sentence_of(LUCIUS, LUCIUS_PHRASES)
    second = sentence_of(PEOPLE, [Phrase(label="NP", start=1, end=7, clause_tokens=[4, 5, 6, 7])],
                         index=1)  # fmt: skip
    parsed, context = context_for(first, second)
    everything = extract_entities(parsed, context)
    two = extract_entities(parsed, context, limit=2)
    assert [a.sentence_index for a in two] == [0, 1]
    assert [a.text for a in two] == ["Lucius Harney", "The people"]
    assert two == everything[:2]
    assert extract_entities(parsed, context, limit=0) == []
    assert sentence_spans(parsed) == [(s.start, s.end) for s in parsed.sentences]
    second_words = [a.text for a in everything if a.sentence_index == 1]
    assert "Denmark" in second_words and "came" in second_words and "settled" in second_words


# ---- the offline parser on SQuAD ----


@pytest.fixture(scope="module")
def squad_answers() -> dict[str, list[Answer]]:
    usable, fix = parser_available("spacy")
    if not usable:
        pytest.skip(f"spaCy model missing: {fix}")
    parser = get_parser("spacy")
    rows = [json.loads(line) for line in SQUAD.read_text().splitlines()[:6]]
    answers = {}
    for row in rows:
        context = Context(id=row["id"], context=row["context"])
        answers[row["id"]] = extract_entities(parser.parse(context), context)
    return answers


def test_normans_context_yields_the_expected_entities(squad_answers) -> None:
    texts = {a.text for a in squad_answers["squad2-0000"]}
    assert {"The Normans", "Normandy, a region in France", "King Charles III of West Francia",
            "their leader Rollo", "the 10th and 11th centuries"} <= texts  # fmt: skip
    assert "The Normans (Norman: Nourmands" not in texts  # half a parenthetical


def test_squad_answers_are_exact_context_spans(squad_answers) -> None:
    rows = {json.loads(line)["id"]: json.loads(line) for line in SQUAD.read_text().splitlines()}
    for context_id, answers in squad_answers.items():
        text = rows[context_id]["context"]
        assert answers, context_id
        assert len({a.id for a in answers}) == len(answers)
        assert len({a.text.casefold() for a in answers}) == len(answers)
        for answer in answers:
            assert answer.start is not None and answer.end is not None
            assert text[answer.start : answer.end].startswith(answer.text.split(" ")[0])
            assert answer.text.casefold() not in PRONOUNS | AUXILIARIES
            if answer.kind is AnswerKind.ENTITY_PHRASE:
                assert len(answer.lemma.split()) >= 2  # words as tokenised, not punctuation
            else:
                assert answer.upos in {"NOUN", "PROPN", "VERB"}
                assert text[answer.start : answer.end] == answer.text
