"""Closed word classes the paper's rules refer to (III-A, III-C1)."""

from __future__ import annotations

import re

PERSONAL_PRONOUNS = frozenset(
    "i me my mine myself you your yours yourself yourselves he him his himself she her hers "
    "herself it its itself we us our ours ourselves they them their theirs themselves one".split()
)
DEMONSTRATIVES = frozenset("this that these those such here there".split())
#: Linking and auxiliary verbs: never an answer, never a relation (III-A2, III-C1). The paper's
#: own relation example is "becomes", so only be/have/do and the modals count as non-lexical.
NON_LEXICAL_VERBS = frozenset(
    "be is are was were been being am have has had having do does did done doing can could "
    "may might must shall should will would".split()
)

_WORD = re.compile(r"[\w'’-]+", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-cased word tokens of a text (apostrophes and hyphens kept inside words)."""
    return [w.lower().strip("'’-") for w in _WORD.findall(text) if w.strip("'’-")]


def normalise_space(text: str) -> str:
    return " ".join(text.split()).lower()


def is_pronoun_or_demonstrative(text: str) -> bool:
    tokens = words(text)
    return len(tokens) == 1 and (tokens[0] in PERSONAL_PRONOUNS or tokens[0] in DEMONSTRATIVES)


def same_word(token: str, lemma: str) -> bool:
    """Whether ``token`` is ``lemma`` or an inflection of it (conquer -> conquered, city -> cities).

    A question is not parsed, so inflections are matched on spelling: the token starts with the
    lemma (or the lemma minus a final y/e) and adds at most three letters.
    """
    if token == lemma:
        return True
    if len(lemma) < 4:
        return False
    stems = {lemma, lemma[:-1]} if lemma[-1] in "ye" else {lemma}
    return any(token.startswith(stem) and 0 < len(token) - len(stem) <= 3 for stem in stems)
