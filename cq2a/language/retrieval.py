"""Lexical retrieval over a run's passages: BM25 (``bm25s``), the corpus both the built-in
retrieval SUT and the corpus-wide consistency check (III-C2 over the corpus) search."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import bm25s


@dataclass(frozen=True)
class Hit:
    """One retrieved passage: its id, its text and its BM25 score."""

    id: str
    text: str
    score: float


class PassageIndex:
    """A BM25 index over passages given as ``(id, text)`` pairs; ``top`` ranks them for a query.
    Passages that share no term with the query score 0 and are never returned."""

    def __init__(self, passages: Sequence[tuple[str, str]], stopwords: str | None = "en") -> None:
        self.ids = [passage_id for passage_id, _ in passages]
        self.texts = [text for _, text in passages]
        self._stopwords = stopwords
        self._bm25 = bm25s.BM25()
        if self.texts:
            tokens = bm25s.tokenize(self.texts, stopwords=stopwords, show_progress=False)
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
