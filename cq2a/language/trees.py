"""Walking a parsed sentence's dependency tree."""

from __future__ import annotations

from cq2a.models.records import Sentence, Token


def subtree(sentence: Sentence, top: Token) -> set[int]:
    """The indices of ``top`` and every word below it."""
    inside = {top.index}
    grew = True
    while grew:
        more = {t.index for t in sentence.tokens if t.head in inside} - inside
        inside |= more
        grew = bool(more)
    return inside
