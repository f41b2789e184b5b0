"""Answer normalisation and the majority vote over re-asked answers (III-C2)."""

from __future__ import annotations

import re
from collections import Counter

_ANSWER_LABEL = re.compile(r"^\s*(?:final\s+)?answer\s*[:\-]\s*", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")
_QUOTES = "\"'`“”‘’«»"
_TRAILING_PUNCT = ".,;:!?"
_ABBREVIATION_END = re.compile(r"(?:\b[A-Za-z]\.){2,}$|\b(?:Jr|Sr|St|Dr|Mr|Mrs|Ms|Inc|Ltd|Co)\.$")

_YES = r"yes|yeah|yep|yup"
_NO = r"no|nope"
_TRUTH = r"true|false|correct|incorrect"
_PRONOUN = r"it|they|he|she|that|this|there|i|we|you"
_YES_NO = re.compile(
    rf"^(?:(?P<yes>{_YES})\b"
    rf"|(?P<no>{_NO})(?=$|[^\w\s]|\s+(?:{_PRONOUN})\b)"
    rf"|(?P<truth>{_TRUTH})(?=$|[^\w\s]))",
    re.IGNORECASE,
)


def normalize_answer(text: str) -> str:
    """Trim an answer to its span: drop a leading "Answer:", collapse whitespace, and strip
    surrounding quotes and trailing punctuation (keeping the dot of "U.S." or "Jr.")."""
    cleaned = _WHITESPACE.sub(" ", text).strip()
    previous = None
    while cleaned != previous:
        previous = cleaned
        cleaned = _ANSWER_LABEL.sub("", cleaned).strip(_QUOTES).strip()
        if cleaned and cleaned[-1] in _TRAILING_PUNCT and not _ABBREVIATION_END.search(cleaned):
            cleaned = cleaned[:-1].rstrip()
    return cleaned


def normalize_yes_no(text: str) -> str | None:
    """ "yes" or "no" when the answer is a yes/no answer ("Yes.", "yes, it is", "True", "No"),
    else None. "No" before a noun ("no evidence") and words like "True Blood" stay spans."""
    match = _YES_NO.match(normalize_answer(text))
    if match is None:
        return None
    if match.group("yes"):
        return "yes"
    if match.group("no"):
        return "no"
    return "yes" if match.group("truth").lower() in {"true", "correct"} else "no"


def answer_key(text: str) -> str:
    """The form two answers are compared in: yes/no, else the case-folded normalised span."""
    return normalize_yes_no(text) or normalize_answer(text).casefold()


def majority_vote(answers: list[str]) -> tuple[str, int]:
    """The most frequent answer among the re-asks and how often it was given (III-C2).

    Answers are compared by ``answer_key``; ties go to the answer seen first. Returns the winner
    as it was first written (unnormalised). Empty answers never win; with none left: ("", 0).
    """
    keys = [answer_key(answer) for answer in answers]
    counts = Counter(key for key in keys if key)
    if not counts:
        return "", 0
    best = max(counts.values())
    winner = next(key for key in keys if counts.get(key) == best)
    return answers[keys.index(winner)], best
