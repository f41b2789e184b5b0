"""A retrieval-augmented QA system as a software under test (``--sut rag:bm25``): BM25 over
the run's passages finds the ``top_k`` best for the question alone, and a chat model reads
them with the ``sut_rag_answer`` prompt. It returns the passages with its answer, so each of
its bugs is told a retrieval miss or a reader error."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import HumanMessage

from cq2a.adapters.llm.prompts import render_prompt
from cq2a.adapters.sut.base import SUTAnswer, SUTError, SUTQuery
from cq2a.adapters.sut.chat import ChatSUT
from cq2a.language.retrieval import PassageIndex

#: The retrievers ``rag:RETRIEVER`` names.
RETRIEVERS = ("bm25",)


class RetrievalSUT:
    """BM25 retrieval over ``corpus`` and the passages ``index`` was given, then ``reader``
    answers from the ``top_k`` best."""

    def __init__(
        self,
        reader: ChatSUT,
        *,
        top_k: int = 3,
        name: str = "rag:bm25",
        corpus: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.name = name
        self.top_k = top_k
        self._reader = reader
        self._corpus = list(corpus)
        self._index = PassageIndex(self._corpus)

    def index(self, passages: Sequence[tuple[str, str]]) -> None:
        """Index the run's passages, as ``(id, text)`` pairs, beside the corpus (a passage of
        the run replaces the corpus's of the same id)."""
        self._index = PassageIndex(list({**dict(self._corpus), **dict(passages)}.items()))

    def answer(self, items: list[SUTQuery]) -> list[SUTAnswer | SUTError]:
        retrieved = [[hit.text for hit in self._index.top(i.question, self.top_k)] for i in items]
        questions = [item.question for item in items]
        answers = self._reader.answer_prompts(list(map(reading_prompt, questions, retrieved)))
        return [
            answer if isinstance(answer, SUTError) else SUTAnswer(answer=answer, contexts=texts)
            for answer, texts in zip(answers, retrieved, strict=True)
        ]

    def cancel(self) -> None:
        self._reader.cancel()


def reading_prompt(question: str, passages: list[str]) -> LanguageModelInput:
    """The reader's prompt: the retrieved passages, numbered, then the question."""
    numbered = "\n\n".join(f"[{n}] {text}" for n, text in enumerate(passages, 1)) or "(none)"
    return [HumanMessage(render_prompt("sut_rag_answer", passages=numbered, question=question))]


def read_corpus(path: str | Path) -> list[tuple[str, str]]:
    """A corpus file's passages as ``(id, text)``: JSONL, ``{"id", "context"}`` per line.

    A file that cannot be read, or a line that is not such an object, is a ``SUTError`` that
    names the file and the line: the SUT would otherwise search a corpus short of passages."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise SUTError(f"cannot read the SUT's corpus {path}: {error}") from error
    return [
        _corpus_passage(path, number, line)
        for number, line in enumerate(lines, start=1)
        if line.strip()
    ]


def _corpus_passage(path: str | Path, number: int, line: str) -> tuple[str, str]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        row, problem = None, f"not JSON ({error.msg})"
    if row is not None:
        if isinstance(row, dict) and isinstance(row.get("context"), str) and "id" in row:
            return str(row["id"]), row["context"]
        problem = "not an object with an id and a context text"
    raise SUTError(
        f"{path} line {number} is {problem}: each line of the SUT's corpus (sut.corpus) is "
        '{"id": ..., "context": "..."}; fix or remove it'
    )
