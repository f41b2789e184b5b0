"""What every software-under-test adapter shares: the query record, the protocol, the cleanup."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from cq2a.models.records import UNANSWERABLE
from cq2a.settings import SUTSpec


class SUTQuery(BaseModel):
    """One question, with its context unless the SUT is asked the question alone
    (``sut.input = "question"``: it answers from its own index)."""

    question: str
    context: str | None = None


class SUTAnswer(BaseModel):
    """An answer with the passages the system retrieved to give it, best first: what tells a
    retrieval miss from a reader error."""

    answer: str
    contexts: list[str]


class SUTError(RuntimeError):
    """The software under test could not be reached or answered malformed output."""


@runtime_checkable
class QASystem(Protocol):
    """A question-answering system: one answer per query, in query order. An answer is a
    string, or None to abstain: the context does not answer the question (UnifiedQA's
    "<No Answer>", "unanswerable" and "" abstain too), or a ``SUTAnswer`` that names the
    passages it retrieved. An adapter that asks query by query puts a ``SUTError`` in place of
    the answer of a query that alone failed.

    A system that retrieves from its own index may also have ``index(passages)``: the run hands
    it its passages, as ``(id, text)`` pairs, before the first question."""

    name: str

    def answer(self, items: list[SUTQuery]) -> Sequence[str | SUTAnswer | SUTError]: ...


def answer_text(answer: str | SUTAnswer) -> str:
    """The words of an answer, without the passages a retrieval system named with it."""
    return answer.answer if isinstance(answer, SUTAnswer) else answer


def check_answer(name: str, answer: object) -> str | SUTAnswer:
    """One answer as a SUT gave it: a string, None (an abstention, ``UNANSWERABLE``), or an
    object ``{"answer", "contexts"}`` (a dict or a ``SUTAnswer``) naming the passages it
    retrieved; an object without ``contexts`` is its answer alone. Surrounding white space
    goes."""
    if isinstance(answer, SUTAnswer):
        return answer.model_copy(update={"answer": answer.answer.strip()})
    if isinstance(answer, dict) and "answer" in answer:
        text = check_answer(name, answer["answer"])
        contexts = answer.get("contexts")
        if contexts is None:
            return text
        if isinstance(text, SUTAnswer) or not isinstance(contexts, list | tuple):
            raise SUTError(f"{name} returned a malformed answer: {answer!r:.200}")
        if not all(isinstance(passage, str) for passage in contexts):
            raise SUTError(f"{name} returned non-string contexts: {contexts!r:.200}")
        return SUTAnswer(answer=text, contexts=list(contexts))
    if answer is None:
        return UNANSWERABLE
    if not isinstance(answer, str):
        raise SUTError(f"{name} returned a non-string answer: {answer!r:.200}")
    return answer.strip()


def check_answers(name: str, answers: object, expected: int) -> list[str | SUTAnswer]:
    """Validate that a SUT returned one answer per query (each as ``check_answer`` takes it);
    the answers are kept as given: the oracle decides how to compare them."""
    if not isinstance(answers, list | tuple) or len(answers) != expected:
        count = len(answers) if isinstance(answers, list | tuple) else type(answers).__name__
        raise SUTError(f"{name} returned {count} answers for {expected} questions")
    return [check_answer(name, answer) for answer in answers]


def truncated_inputs(sut: QASystem, items: list[SUTQuery]) -> list[bool] | None:
    """Which inputs an adapter with a window (seq2seq) cut to fit it; None for one without."""
    truncated = getattr(sut, "truncated", None)
    return None if truncated is None else truncated(items)


def answer_within(
    sut: QASystem, items: list[SUTQuery], spec: SUTSpec
) -> list[str | SUTAnswer | SUTError]:
    """``sut.answer(items)``: per query its answer, or the ``SUTError`` that stood in for it.
    Raises ``SUTError`` when every query failed (the SUT is down), or once it has taken
    ``spec.timeout_s`` per batch.

    The call runs in a daemon thread, so a SUT that never returns cannot keep the process from
    exiting after the run has saved its work. On a timeout a SUT that can (``cancel``) sends no
    more of its queries, so the thread ends once the requests in flight do."""
    limit = spec.timeout_s * -(-len(items) // spec.batch_size)
    answers: list[Sequence[str | SUTAnswer | SUTError]] = []
    failure: list[BaseException] = []

    def call() -> None:
        try:
            answers.append(sut.answer(items))
        except BaseException as error:
            failure.append(error)

    worker = threading.Thread(target=call, name="sut-call", daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        cancel = getattr(sut, "cancel", None)
        if cancel is not None:
            cancel()
        raise SUTError(
            f"{sut.name} did not answer {len(items)} questions within {limit:.0f} s "
            f"({spec.timeout_s:g} s per batch of {spec.batch_size}; raise sut.timeout_s)"
        )
    if failure:
        raise failure[0]
    given = list(answers[0])
    failed = [answer for answer in given if isinstance(answer, SUTError)]
    if given and len(failed) == len(given):
        raise failed[0]
    return given
