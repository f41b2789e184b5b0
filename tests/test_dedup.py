"""Near-duplicate removal: of two questions with the same gold answer that say the same, the
first is kept, whichever answer each was written for."""

from cq2a.checks.dedup import mark_duplicates
from cq2a.models.records import Answer, AnswerKind, Attempt, Candidate, RejectReason

QUESTION = "Is Indiana Jones and the Temple of Doom a 1984 film directed by Steven Spielberg?"


def same_words(left: list[str], right: list[str]) -> list[list[float]]:
    """1.0 for two questions that read the same, 0.0 otherwise."""
    return [[1.0 if a == b else 0.0 for b in right] for a in left]


def candidate(answer_id: str, gold: str, question: str, slot: int) -> Candidate:
    answer = Answer(
        id=answer_id,
        context_id="c",
        kind=AnswerKind.YES_NO if gold.lower() in {"yes", "no"} else AnswerKind.ENTITY_WORD,
        text=gold,
        sentence=f"sentence {answer_id}",
        sentence_index=slot,
    )
    attempt = Attempt(number=1, question=question, explanation="e")
    return Candidate(
        id=f"{answer_id}:q0", context_id="c", answer=answer, slot=slot, attempts=[attempt]
    )


def test_one_question_for_two_targets_with_the_same_gold_is_kept_once():
    first = candidate("c:y0", "yes", QUESTION, 0)
    second = candidate("c:y3", "Yes", QUESTION, 1)  # another sentence's target, the same label
    kept, dropped = mark_duplicates([first, second], [], same_words, 0.9)
    assert kept.current.reasons == []
    assert dropped.current.reasons == [RejectReason.DUPLICATE]


def test_an_accepted_question_wins_over_a_new_twin_of_another_target():
    accepted = candidate("c:e0", "Harvard", "Which college was founded in 1636?", 0)
    twin = candidate("c:e4", "Harvard", "Which college was founded in 1636?", 1)
    (dropped,) = mark_duplicates([twin], [accepted], same_words, 0.9)
    assert dropped.current.reasons == [RejectReason.DUPLICATE]


def test_questions_with_other_golds_or_other_words_are_kept():
    yes = candidate("c:y0", "yes", QUESTION, 0)
    no = candidate("c:y1", "no", QUESTION, 1)  # the same words, another gold: not a duplicate
    other = candidate("c:y2", "yes", "Was the film released in 1984?", 2)
    assert all(
        not c.current.reasons for c in mark_duplicates([yes, no, other], [], same_words, 0.9)
    )
