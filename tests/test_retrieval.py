import json

import pytest

from cq2a.adapters.sut.base import SUTError
from cq2a.adapters.sut.rag import read_corpus
from cq2a.language.retrieval import PassageIndex

PASSAGES = [
    ("normans", "The Normans gave their name to Normandy, a region in France."),
    ("harvard", "Harvard University is a private research university in Cambridge."),
    ("oil", "The 1973 oil crisis began when OAPEC proclaimed an oil embargo."),
]


def test_top_ranks_the_passage_that_shares_the_query_terms_first() -> None:
    hits = PassageIndex(PASSAGES).top("Which university is in Cambridge?", k=2)
    assert [hit.id for hit in hits][:1] == ["harvard"]
    assert hits[0].text == PASSAGES[1][1]
    assert hits[0].score > 0


def test_passages_sharing_no_term_are_not_returned() -> None:
    assert PassageIndex(PASSAGES).top("zebra quartz", k=3) == []


FRENCH = [
    ("chat", "Le chat de la voisine dort au soleil tout l'après-midi."),
    ("maison", "Elle est dans la maison de sa mère, près de la rivière."),
]


def test_a_french_corpus_drops_french_stop_words() -> None:
    """A passage that shares only "est", "la" and "de" with a French question is not
    retrieved for it, as an English passage sharing only "is" and "the" is not."""
    query = "Qui est le chat de la voisine ?"
    index = PassageIndex(FRENCH)
    assert index.languages == {"fr"}
    assert [hit.id for hit in index.top(query, k=2)] == ["chat"]
    english = PassageIndex(FRENCH, languages=["en"])
    assert [hit.id for hit in english.top(query, k=2)] == ["chat", "maison"]
    assert PassageIndex(PASSAGES).languages == {"en"}


def test_an_empty_index_or_query_returns_nothing() -> None:
    assert PassageIndex([]).top("Normandy", k=3) == []
    assert PassageIndex(PASSAGES).top("   ", k=3) == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"id": "a", "context": "Harvard was founded in 1636."', "not JSON"),
        ('{"id": "a", "text": "Harvard was founded in 1636."}', "not an object"),
        ('["a", "Harvard was founded in 1636."]', "not an object"),
    ],
)
def test_a_malformed_corpus_line_names_its_file_and_line(tmp_path, line, problem) -> None:
    corpus = tmp_path / "corpus.jsonl"
    good = json.dumps({"id": "b", "context": "Yale was founded in 1701."})
    corpus.write_text(f"{good}\n{line}\n", encoding="utf-8")
    with pytest.raises(SUTError, match=rf"corpus.jsonl line 2 is {problem}"):
        read_corpus(corpus)


def test_a_corpus_file_reads_its_passages(tmp_path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"id": 7, "context": "Yale was founded in 1701."}) + "\n\n", encoding="utf-8"
    )
    assert read_corpus(corpus) == [("7", "Yale was founded in 1701.")]
