"""Near-duplicate removal, after the III-C1 checks: of two questions for the same answer that say
the same, the first is kept."""

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
    """Reject near-duplicate questions of the same answer with reason ``duplicate``.

    The first question wins: ``existing`` (accepted or still alive) questions are kept, then
    ``new`` ones in slot order, each compared with those kept before it.
    """
    updated = list(new)
    answer_ids = dict.fromkeys(c.answer.id for c in new)
    for answer_id in answer_ids:
        kept = [c for c in existing if c.answer.id == answer_id]
        fresh = [i for i, c in enumerate(updated) if c.answer.id == answer_id]
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
