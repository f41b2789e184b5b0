"""Parsed sentences: a question's parse, and walking a sentence's dependency tree."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cq2a.models.records import Sentence, Token

#: A question's parse: its sentences of UD tokens (``cq2a.language.parsing.question_parser``).
QuestionParse = Callable[[str], Sequence[Sentence]]


def subtree(sentence: Sentence, top: Token) -> set[int]:
    """The indices of ``top`` and every word below it."""
    inside = {top.index}
    grew = True
    while grew:
        more = {t.index for t in sentence.tokens if t.head in inside} - inside
        inside |= more
        grew = bool(more)
    return inside
