"""The majority vote over re-asked answers (III-C2 step 1)."""

from __future__ import annotations

from collections import Counter

from cq2a.language.answers import answer_tokens, normalize_answer, normalize_yes_no


def answer_key(text: str) -> str:
    """The form two answers are compared in: yes/no, else the SQuAD-normalised span, so
    "Denmark, Iceland, and Norway" and "Denmark, Iceland and Norway" are one answer."""
    return normalize_yes_no(text) or " ".join(answer_tokens(normalize_answer(text)))


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
