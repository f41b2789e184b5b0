"""A line of ``bugs.jsonl``: a verdict that found a bug, with the test's evidence."""

from __future__ import annotations

from pydantic import Field

from cq2a.models.records import TestCase, Verdict


class BugRecord(Verdict):
    """The verdict with the sentence, explanation, context and re-ask votes of its test, so a
    reader can check the bug without looking the test up."""

    sentence: str = ""
    explanation: str = ""
    context: str = ""
    votes: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, verdict: Verdict, case: TestCase) -> BugRecord:
        return cls(
            **verdict.model_dump(),
            sentence=case.sentence,
            explanation=case.explanation,
            context=case.context,
            votes=case.votes,
        )
