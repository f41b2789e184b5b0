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


def test_an_empty_index_or_query_returns_nothing() -> None:
    assert PassageIndex([]).top("Normandy", k=3) == []
    assert PassageIndex(PASSAGES).top("   ", k=3) == []
