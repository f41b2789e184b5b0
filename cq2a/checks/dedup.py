"""Near-duplicate removal, after the III-C1 checks: of two questions with the same gold answer
that say the same, the first is kept."""

from __future__ import annotations

from collections.abc import Sequence

from cq2a.language.embeddings import SimilarityMatrix
from cq2a.models.candidates import reject
from cq2a.models.records import Candidate, CheckResult, RejectReason


def mark_duplicates(
    new: Sequence[Candidate],
    existing: Sequence[Candidate],
    similarity_matrix: SimilarityMatrix,
    threshold: float,
) -> list[Candidate]:
    """Reject near-duplicate questions of the same gold answer with reason ``duplicate``: of
    one answer, or of two answers that read the same (two yes/no targets of one passage, both
    "yes", asked "Is Indiana Jones and the Temple of Doom a 1984 film ...?" twice; the same
    name in two sentences).

    The first question wins: ``existing`` (accepted or still alive) questions are kept, then
    ``new`` ones in slot order, each compared with those kept before it.
    """
    updated = list(new)
    golds = dict.fromkeys(_gold(c) for c in new)
    for gold in golds:
        kept = [c for c in existing if _gold(c) == gold]
        fresh = [i for i, c in enumerate(updated) if _gold(c) == gold]
        questions = [c.current.question for c in kept] + [
            updated[i].current.question for i in fresh
        ]
        matrix = similarity_matrix(questions, questions)
        kept_rows = list(range(len(kept)))
        for offset, index in enumerate(fresh):
            row = len(kept) + offset
            twin = next((k for k in kept_rows if matrix[row][k] >= threshold), None)
            if twin is None:
                kept_rows.append(row)
                continue
            candidate = updated[index]
            detail = f"{float(matrix[row][twin]):.2f} similar to: {questions[twin]}"
            check = CheckResult(name="duplicate", passed=False, detail=detail)
            updated[index] = reject(
                candidate, RejectReason.DUPLICATE, checks=[*candidate.current.checks, check]
            )
    return updated


def _gold(candidate: Candidate) -> str:
    """What a test built from the candidate would hold as its gold, case and spaces aside."""
    return " ".join(candidate.answer.text.split()).casefold()
