"""Closed word classes the paper's rules refer to (III-A, III-C1)."""

from __future__ import annotations

import re

# Each closed class holds English's words and French's: no word of one is a word of the
# other's texts (French words that are also English words, such as "on", "car" or "par", are
# left out), so one set serves passages of either language.
PERSONAL_PRONOUNS = frozenset(
    "i me my mine myself you your yours yourself yourselves he him his himself she her hers "
    "herself it its itself we us our ours ourselves they them their theirs themselves one".split()
) | frozenset("je tu il elle nous vous ils elles lui eux leur leurs moi toi soi se te".split())
DEMONSTRATIVES = frozenset("this that these those such here there".split()) | frozenset(
    "ce cet cette ces celui celle ceux celles ceci cela ça".split()
)
ARTICLES = frozenset({"a", "an", "the"}) | frozenset(
    {"le", "la", "les", "l", "un", "une", "des", "du"}
)
#: Linking and auxiliary verbs: never an answer, never a relation (III-A2, III-C1). The paper's
#: own relation example is "becomes", so only be/have/do and the modals count as non-lexical
#: (French: être, avoir and the modals pouvoir and devoir, with their common forms).
NON_LEXICAL_VERBS = frozenset(
    "be is are was were been being am have has had having do does did done doing can could "
    "may might must shall should will would".split()
) | frozenset(
    "être est sont était étaient été fut furent sera seront serait avoir ont avait avaient "
    "eu eut eurent aura auront aurait pouvoir peut peuvent pouvait devoir doit doivent "
    "devait".split()
)

#: Closed-class words that carry no answer on their own: a question may use them freely even when
#: a relation answer ("raided and ultimately settled") contains them.
FUNCTION_WORDS = (
    frozenset(
        "and or but nor so yet of to in on at by for with from into onto upon over under "
        "about as than then which who whom whose what not no".split()
    )
    | frozenset(
        "et ou ni mais donc de d à au aux en dans pour avec sans sur sous vers chez entre "
        "que qu qui quoi où ne n pas".split()
    )
    | ARTICLES
    | PERSONAL_PRONOUNS
    | DEMONSTRATIVES
)

#: Universal POS tags of nouns (common and proper).
NOUN_UPOS = frozenset({"NOUN", "PROPN"})
#: Universal POS tags of the words that give a phrase or a sentence content; a phrase of only
#: pronouns, particles and function words has none.
CONTENT_UPOS = NOUN_UPOS | frozenset({"VERB", "NUM", "ADJ"})

#: The blank a generation prompt shows where its target stands ("The Normans gave their name to
#: _____, a region in France."); ``shows_blank`` finds it in a question that copied it.
BLANK = "_____"
#: A copied blank, also when a model shortened it (three underscores or more).
_BLANK_RUN = re.compile(r"_{3,}")


def shows_blank(text: str) -> bool:
    """Whether ``text`` holds the prompts' blank (``BLANK``), whole or shortened to ``___``."""
    return _BLANK_RUN.search(text) is not None


_WORD = re.compile(r"[\w'’-]+", re.UNICODE)


def cased_words(text: str) -> list[str]:
    """The word tokens of a text as it writes them (apostrophes and hyphens kept inside
    words)."""
    return [w.strip("'’-") for w in _WORD.findall(text) if w.strip("'’-")]


def words(text: str) -> list[str]:
    """Lower-cased word tokens of a text (apostrophes and hyphens kept inside words)."""
    return [w.lower() for w in cased_words(text)]


def mentions(text: str, phrase: str) -> bool:
    """Whether the words of ``phrase`` occur in ``text`` in a row, ignoring case, spacing and
    punctuation: "Denmark, Iceland and Norway" is mentioned in "from Denmark, Iceland, and
    Norway", but not in "from Denmark, Iceland or Norway"."""
    needle = words(phrase)
    return bool(needle) and f" {' '.join(needle)} " in f" {' '.join(words(text))} "


#: A number written in digits, with its decimal part or its groups ("1624", "3,7", "1,000,000").
_WRITTEN_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def is_written_number(text: str) -> bool:
    """Whether ``text`` is a number in digits, whatever a tagger made of it ("100" of "100 000"
    is tagged a determiner by French pipelines)."""
    return bool(_WRITTEN_NUMBER.fullmatch(text))


def normalise_space(text: str) -> str:
    return " ".join(text.split()).lower()


def is_pronoun_or_demonstrative(text: str) -> bool:
    tokens = words(text)
    return len(tokens) == 1 and (tokens[0] in PERSONAL_PRONOUNS or tokens[0] in DEMONSTRATIVES)
