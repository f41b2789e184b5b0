"""Words as the parser's lemmas: the lemmatizer contract, and phrase matching on lemmas (III-A,
III-C1)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cq2a.language.lexicon import ARTICLES, words

#: A text's words as (lower-cased lemma, universal POS) pairs, punctuation left out: the
#: parser's lemmatizer (``cq2a.language.parsing.lemmatizer``), so "Normans" is "Norman" and
#: "conquered" is
#: "conquer" without spelling rules.
Lemmatizer = Callable[[str], Sequence[tuple[str, str]]]


def without_articles(sequence: Sequence[str]) -> list[str]:
    return [w for w in sequence if w not in ARTICLES]


def contains_run(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """Whether ``needle`` occurs in ``haystack`` as a run of consecutive items."""
    size = len(needle)
    return size > 0 and any(
        list(haystack[i : i + size]) == list(needle) for i in range(len(haystack) - size + 1)
    )


def lemma_words(text: str, lemmatize: Lemmatizer) -> list[str]:
    return [lemma for lemma, _ in lemmatize(text)]


def occurs_in(phrase: str, text: str, lemmatize: Lemmatizer) -> bool:
    """Whether ``phrase`` occurs in ``text`` word for word, ignoring case, punctuation and
    articles, either as written or lemma for lemma ("the Normans" occurs in "a Norman fleet"
    is false, in "the Normans' rivals" true; "Denmark, Iceland and Norway" occurs in "Denmark,
    Iceland, and Norway")."""
    return contains_run(
        without_articles(words(text)), without_articles(words(phrase))
    ) or contains_run(
        without_articles(lemma_words(text, lemmatize)),
        without_articles(lemma_words(phrase, lemmatize)),
    )
