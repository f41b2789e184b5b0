"""Answer normalisation, yes/no mapping and the majority vote (III-C2)."""

from __future__ import annotations

import pytest

from cq2a.answers import majority_vote, normalize_answer, normalize_yes_no


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("  Normandy  ", "Normandy"),
        ('"Normandy."', "Normandy"),
        ("Answer: Rollo", "Rollo"),
        ('  "Answer:  the  Seine." ', "the Seine"),
        ("U.S.", "U.S."),
        ("Martin Luther King Jr.", "Martin Luther King Jr."),
        ("10th and 11th centuries,", "10th and 11th centuries"),
        ("", ""),
    ],
)
def test_normalize_answer(raw: str, clean: str) -> None:
    assert normalize_answer(raw) == clean


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("Yes.", "yes"),
        ("yes, it is", "yes"),
        ("Yes it is.", "yes"),
        ("True", "yes"),
        ("correct", "yes"),
        ("No", "no"),
        ("no, they did not", "no"),
        ("No it isn't", "no"),
        ("false", "no"),
        ("Answer: FALSE.", "no"),
        ("Nope!", "no"),
        ("Normandy", None),
        ("No one", None),
        ("no evidence", None),
        ("True Blood", None),
        ("Yesterday", None),
        ("Norway", None),
    ],
)
def test_normalize_yes_no(raw: str, label: str | None) -> None:
    assert normalize_yes_no(raw) == label


def test_majority_vote_three_to_two_returns_first_surface_form() -> None:
    votes = ["the Seine", "Epte", "The Seine.", "epte", "the seine"]
    assert majority_vote(votes) == ("the Seine", 3)


def test_majority_vote_tie_goes_to_first_seen() -> None:
    assert majority_vote(["Epte", "Seine", "Seine", "Epte"]) == ("Epte", 2)
    assert majority_vote(["Seine", "Epte"]) == ("Seine", 1)


def test_majority_vote_groups_yes_no_variants() -> None:
    assert majority_vote(["No.", "yes", "True", "Yes, it is", "no"]) == ("yes", 3)


def test_majority_vote_ignores_empty_answers() -> None:
    assert majority_vote(["", "  ", "Rollo"]) == ("Rollo", 1)
    assert majority_vote(["", ""]) == ("", 0)
    assert majority_vote([]) == ("", 0)
