"""The parser layer: Stanza conversion on hand-built documents, spaCy on real sentences."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stanza.models.common.doc import Document
from stanza.models.constituency.tree_reader import read_trees

import cq2a
from cq2a.language.parsing import ParserUnavailable, get_parser, parser_available
from cq2a.language.parsing.base import STANZA_FIX
from cq2a.language.parsing.stanza_backend import (
    from_stanza_document,
    load_stanza,
    phrases_from_tree,
)
from cq2a.models.records import Context, ParsedContext

SQUAD = Path(cq2a.__file__).parent / "data" / "squad2_dev_sample.jsonl"

UD_RELATIONS = {
    "root", "acl", "acl:relcl", "advcl", "advmod", "amod", "appos", "aux", "aux:pass", "case",
    "cc", "cc:preconj", "ccomp", "compound", "compound:prt", "conj", "csubj", "csubj:pass", "dep",
    "det", "det:predet", "discourse", "expl", "iobj", "mark", "nmod", "nmod:poss", "nsubj",
    "nsubj:pass", "nummod", "obj", "obl", "obl:agent", "obl:npmod", "parataxis", "punct", "xcomp",
}  # fmt: skip

# (text, lemma, upos, xpos, head, deprel) per word
LUCIUS = [
    ("Lucius", "Lucius", "PROPN", "NNP", 2, "compound"),
    ("Harney", "Harney", "PROPN", "NNP", 3, "nsubj"),
    ("becomes", "become", "VERB", "VBZ", 0, "root"),
    ("Mr.", "Mr.", "PROPN", "NNP", 5, "compound"),
    ("Royall", "Royall", "PROPN", "NNP", 7, "nmod:poss"),
    ("'s", "'s", "PART", "POS", 5, "case"),
    ("boarder", "boarder", "NOUN", "NN", 3, "xcomp"),
    (".", ".", "PUNCT", ".", 3, "punct"),
]
LUCIUS_TREE = (
    "(ROOT (S (NP (NNP Lucius) (NNP Harney)) (VP (VBZ becomes) (NP (NP (NNP Mr.) (NNP Royall)"
    " (POS 's)) (NN boarder))) (. .)))"
)
PEOPLE = [
    ("The", "the", "DET", "DT", 2, "det"),
    ("people", "people", "NOUN", "NNS", 9, "nsubj"),
    ("who", "who", "PRON", "WP", 4, "nsubj"),
    ("gave", "give", "VERB", "VBD", 2, "acl:relcl"),
    ("their", "they", "PRON", "PRP$", 6, "nmod:poss"),
    ("name", "name", "NOUN", "NN", 4, "obj"),
    ("to", "to", "ADP", "IN", 8, "case"),
    ("Normandy", "Normandy", "PROPN", "NNP", 4, "obl"),
    ("arrived", "arrive", "VERB", "VBD", 0, "root"),
    (".", ".", "PUNCT", ".", 9, "punct"),
]
PEOPLE_TREE = (
    "(ROOT (S (NP (NP (DT The) (NNS people)) (SBAR (WHNP (WP who)) (S (VP (VBD gave)"
    " (NP (PRP$ their) (NN name)) (PP (IN to) (NP (NNP Normandy))))))) (VP (VBD arrived)) (. .)))"
)


def stanza_document(sentences: list[list[tuple]], trees: list[str]) -> tuple[Document, str]:
    """A Stanza Document with words laid out left to right, joined by single spaces."""
    text, dicts = "", []
    for words in sentences:
        sentence = []
        for n, (word, lemma, upos, xpos, head, deprel) in enumerate(words, start=1):
            text += "" if not text or word in {".", "'s"} else " "
            start = len(text)
            text += word
            sentence.append(
                {"id": n, "text": word, "lemma": lemma, "upos": upos, "xpos": xpos,
                 "head": head, "deprel": deprel, "start_char": start, "end_char": len(text)}
            )  # fmt: skip
        dicts.append(sentence)
    doc = Document(dicts, text=text)
    for sentence, tree in zip(doc.sentences, trees, strict=True):
        sentence.constituency = read_trees(tree, use_tqdm=False)[0]
    return doc, text


def spans(parsed: ParsedContext, sentence: int = 0) -> set[tuple[str, str, tuple[int, ...]]]:
    sent = parsed.sentences[sentence]
    return {
        (p.label, " ".join(sent.token(i).text for i in range(p.start, p.end + 1)),
         tuple(p.clause_tokens))
        for p in sent.phrases
    }  # fmt: skip


# ---- Stanza conversion (no model needed) ----


def test_stanza_words_become_ud_tokens_with_offsets() -> None:
    doc, text = stanza_document([LUCIUS], [LUCIUS_TREE])
    parsed = from_stanza_document(doc, "c1")
    sentence = parsed.sentences[0]
    assert parsed.context_id == "c1" and parsed.parser == "stanza:en"
    assert sentence.text == "Lucius Harney becomes Mr. Royall's boarder."
    assert [t.head for t in sentence.tokens] == [2, 3, 0, 5, 7, 5, 3, 3]
    assert sentence.token(3).lemma == "become" and sentence.token(3).upos == "VERB"
    assert all(text[t.start : t.end] == t.text for t in sentence.tokens)


def test_stanza_np_and_vp_constituents_become_phrases() -> None:
    parsed = from_stanza_document(stanza_document([LUCIUS], [LUCIUS_TREE])[0], "c1")
    assert spans(parsed) == {
        ("NP", "Lucius Harney", ()),
        ("VP", "becomes Mr. Royall 's boarder", ()),
        ("NP", "Mr. Royall 's boarder", ()),
        ("NP", "Mr. Royall 's", ()),
    }


def test_stanza_clause_inside_a_phrase_is_marked_for_removal() -> None:
    doc, _ = stanza_document([LUCIUS, PEOPLE], [LUCIUS_TREE, PEOPLE_TREE])
    parsed = from_stanza_document(doc, "c1")
    second = parsed.sentences[1]
    assert second.index == 1 and second.text.startswith("The people who")
    assert ("NP", "The people who gave their name to Normandy", (3, 4, 5, 6, 7, 8)) in spans(
        parsed, 1
    )
    # phrases inside the clause keep their own words
    assert ("VP", "gave their name to Normandy", ()) in spans(parsed, 1)


def test_phrases_from_tree_reads_nested_clauses_once() -> None:
    tree = read_trees(
        "(ROOT (S (NP (PRP They)) (VP (VBD agreed) (S (VP (TO to) (VP (VB swear)"
        " (NP (NN fealty))))))))",
        use_tqdm=False,
    )[0]
    phrases = {(p.label, p.start, p.end): p.clause_tokens for p in phrases_from_tree(tree)}
    assert phrases[("VP", 2, 5)] == [3, 4, 5]
    assert phrases[("VP", 3, 5)] == [] and phrases[("NP", 1, 1)] == []


def test_stanza_tree_that_does_not_match_the_words_is_an_error() -> None:
    doc, _ = stanza_document([LUCIUS], ["(ROOT (S (NP (NNP Lucius)) (. .)))"])
    with pytest.raises(ValueError, match="leaves"):
        from_stanza_document(doc, "c1")


def test_stanza_without_models_offline_names_the_fix(tmp_path: Path) -> None:
    calls: list[str] = []

    def offline_download(lang: str, **_: object) -> None:
        calls.append(lang)
        raise ConnectionError("no internet")

    with pytest.raises(ParserUnavailable) as error:
        load_stanza(model_dir=str(tmp_path), download=offline_download)
    assert calls == ["en"]
    assert STANZA_FIX in str(error.value) and "internet" in str(error.value)


def test_parser_available_reports_missing_stanza_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STANZA_RESOURCES_DIR", str(tmp_path))
    assert parser_available("stanza") == (False, STANZA_FIX)
    (tmp_path / "resources.json").write_text("{}")
    for name in ("tokenize", "pos", "lemma", "depparse", "ner", "constituency"):
        (tmp_path / "en" / name).mkdir(parents=True)
    assert parser_available("stanza") == (True, STANZA_FIX)


def test_unknown_backend_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown parser backend"):
        get_parser("corenlp")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown parser backend"):
        parser_available("corenlp")  # type: ignore[arg-type]


# ---- spaCy (the offline default, real model) ----


def parse(parser, text: str) -> ParsedContext:
    return parser.parse(Context(id="t", context=text))


def relation(parsed: ParsedContext, word: str) -> tuple[str, str]:
    """(deprel, head word) of the first token spelled ``word``."""
    sentence = parsed.sentences[0]
    token = next(t for t in sentence.tokens if t.text == word)
    return token.deprel, "ROOT" if token.head == 0 else sentence.token(token.head).text


def test_get_parser_loads_once(spacy_parser) -> None:
    assert get_parser("spacy") is spacy_parser
    assert parser_available("spacy")[0] is True


def test_spacy_labels_are_mapped_to_ud(spacy_parser) -> None:
    parsed = parse(spacy_parser, "Lucius Harney becomes Mr. Royall's boarder.")
    assert relation(parsed, "Royall") == ("nmod:poss", "boarder")
    assert relation(parsed, "Harney") == ("nsubj", "becomes")
    passive = parse(spacy_parser, "The castle was built by the Normans in Sicily.")
    assert relation(passive, "castle") == ("nsubj:pass", "built")
    assert relation(passive, "was") == ("aux:pass", "built")
    assert relation(passive, "Normans") == ("obl:agent", "built")
    assert relation(passive, "by") == ("case", "Normans")
    assert relation(passive, "Sicily") == ("obl", "built")


def test_spacy_prepositional_objects_attach_ud_style(spacy_parser) -> None:
    parsed = parse(spacy_parser, "Rollo agreed to swear fealty to the king of West Francia.")
    assert relation(parsed, "fealty") == ("obj", "swear")
    assert relation(parsed, "to")[0] == "mark"  # the infinitive marker
    assert relation(parsed, "Francia") == ("nmod", "king")
    assert relation(parsed, "of") == ("case", "Francia")


def test_spacy_relative_clause_is_marked_for_removal(spacy_parser) -> None:
    parsed = parse(spacy_parser, "The people who gave their name to Normandy arrived.")
    assert ("NP", "The people who gave their name to Normandy", (3, 4, 5, 6, 7, 8)) in spans(parsed)
    assert relation(parsed, "gave") == ("acl:relcl", "people")


def test_spacy_parse_of_squad_contexts_is_well_formed(spacy_parser) -> None:
    rows = [json.loads(line) for line in SQUAD.read_text().splitlines()[:12]]
    for row in rows:
        parsed = parse(spacy_parser, row["context"])
        for sentence in parsed.sentences:
            tokens = sentence.tokens
            assert [t.index for t in tokens] == list(range(1, len(tokens) + 1))
            assert sum(t.head == 0 for t in tokens) == 1
            assert all(0 <= t.head <= len(tokens) and t.head != t.index for t in tokens)
            assert {t.deprel for t in tokens} <= UD_RELATIONS
            assert all(row["context"][t.start : t.end] == t.text for t in tokens)
            assert row["context"][sentence.start : sentence.end] == sentence.text
            for phrase in sentence.phrases:
                assert 1 <= phrase.start <= phrase.end <= len(tokens)
                assert all(phrase.start <= i <= phrase.end for i in phrase.clause_tokens)


def test_a_blank_line_ends_a_sentence(spacy_parser) -> None:
    text = "Travel\n\nTravel must be booked through the portal. Globetrotter Ltd runs it."
    parsed = spacy_parser.parse(Context(id="notes.md#1", context=text))
    assert [s.text for s in parsed.sentences] == [
        "Travel",
        "Travel must be booked through the portal.",
        "Globetrotter Ltd runs it.",
    ]
