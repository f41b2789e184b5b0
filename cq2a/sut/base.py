"""What every software-under-test adapter shares: the query record, the protocol, the cleanup."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from cq2a.answers import normalize_answer, normalize_yes_no


class SUTQuery(BaseModel):
    """One question about one context, as the software under test receives it."""

    question: str
    context: str


class SUTError(RuntimeError):
    """The software under test could not be reached or answered malformed output."""


@runtime_checkable
class QASystem(Protocol):
    """A question-answering system: one answer string per query, in query order."""

    name: str

    def answer(self, items: list[SUTQuery]) -> list[str]: ...


def clean_answer(text: str) -> str:
    """A SUT's raw output as an answer: "yes"/"no" for yes/no answers, else the trimmed span."""
    return normalize_yes_no(text) or normalize_answer(text)


def check_answers(name: str, answers: object, expected: int) -> list[str]:
    """Validate that a SUT returned one string per query, and clean each one."""
    if not isinstance(answers, list | tuple) or len(answers) != expected:
        count = len(answers) if isinstance(answers, list | tuple) else type(answers).__name__
        raise SUTError(f"{name} returned {count} answers for {expected} questions")
    if not all(isinstance(answer, str) for answer in answers):
        raise SUTError(f"{name} returned a non-string answer: {answers!r:.200}")
    return [clean_answer(answer) for answer in answers]
