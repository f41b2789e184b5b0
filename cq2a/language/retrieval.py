"""Lexical retrieval over a run's passages: BM25 (``bm25s``), the corpus both the built-in
retrieval SUT and the corpus-wide consistency check (III-C2 over the corpus) search. Stop
words are those of the corpus's languages, each passage's detected among the languages bm25s
ships stop words for."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import bm25s
from bm25s import stopwords as lists

from cq2a.language.detect import detect_language

#: The stop words bm25s ships, by ISO 639-1 code (English first: a passage too short to tell
#: is read as English).
STOPWORDS: dict[str, Sequence[str]] = {
    "en": lists.STOPWORDS_EN,
    "fr": lists.STOPWORDS_FRENCH,
    "de": lists.STOPWORDS_GERMAN,
    "nl": lists.STOPWORDS_DUTCH,
    "es": lists.STOPWORDS_SPANISH,
    "pt": lists.STOPWORDS_PORTUGUESE,
    "it": lists.STOPWORDS_ITALIAN,
    "ru": lists.STOPWORDS_RUSSIAN,
    "sv": lists.STOPWORDS_SWEDISH,
    "no": lists.STOPWORDS_NORWEGIAN,
    "da": lists.STOPWORDS_DANISH,
    "tr": lists.STOPWORDS_TURKISH,
    "zh": lists.STOPWORDS_CHINESE,
    "ko": lists.STOPWORDS_KOREAN,
}


def corpus_languages(texts: Iterable[str]) -> set[str]:
    """The languages of ``texts``, each detected among those of ``STOPWORDS``."""
    return {detect_language(text, tuple(STOPWORDS)) for text in texts}


def stopwords_of(languages: Iterable[str]) -> list[str]:
    """The stop words of all ``languages`` together (a language bm25s has none for adds
    none): a corpus in English and French drops "the" and "le" alike."""
    return sorted({word for code in languages for word in STOPWORDS.get(code, ())})


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its id, its text and its BM25 score."""

    id: str
    text: str
    score: float


class PassageIndex:
    """A BM25 index over passages given as ``(id, text)`` pairs; ``top`` ranks them for a query.
    Passages that share no term with the query score 0 and are never returned. Passages and
    queries drop the stop words of ``languages`` (by default, of the passages' detected
    languages: a French corpus drops "le", "de" and "est", not "the")."""

    def __init__(
        self, passages: Sequence[tuple[str, str]], languages: Iterable[str] | None = None
    ) -> None:
        self.ids = [passage_id for passage_id, _ in passages]
        self.texts = [text for _, text in passages]
        self.languages = set(languages) if languages is not None else corpus_languages(self.texts)
        self._stopwords = stopwords_of(self.languages)
        self._bm25 = bm25s.BM25()
        if self.texts:
            tokens = bm25s.tokenize(self.texts, stopwords=self._stopwords, show_progress=False)
            self._bm25.index(tokens, show_progress=False)

    def __len__(self) -> int:
        return len(self.ids)

    def top(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best passages for ``query``, best first."""
        k = min(k, len(self.ids))
        if k <= 0 or not query.strip():
            return []
        tokens = bm25s.tokenize([query], stopwords=self._stopwords, show_progress=False)
        if not any(tokens.ids):
            return []
        rows, scores = self._bm25.retrieve(tokens, k=k, show_progress=False)
        return [
            Hit(id=self.ids[row], text=self.texts[row], score=float(score))
            for row, score in zip(rows[0], scores[0], strict=True)
            if score > 0
        ]
