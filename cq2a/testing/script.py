"""Scripted model roles for whole CQ2A runs against ``ScriptedLLMServer``.

Each prompt kind is recognised by the first line of its system prompt (so the script follows the
prompt files), and the fields a role needs are read back from the user message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cq2a.adapters.llm.prompts import load_prompt
from cq2a.testing.scripted_server import ChatRequest, Rules

QuestionsFn = Callable[[str, bool], list[dict[str, str]]]
VotesFn = Callable[[str], list[str]]
#: A score, or one score per choice of an ``n``-choice request (the judge's votes).
JudgeFn = Callable[[str, str], int | list[int]]
SutFn = Callable[[str], str]


def marker(prompt_name: str) -> str:
    return load_prompt(prompt_name).splitlines()[0]


def field_of(text: str, label: str) -> str:
    match = re.search(rf"^{re.escape(label)}:? (.*)$", text, flags=re.MULTILINE)
    return match.group(1).strip().strip('"') if match else ""


def user_text(request: ChatRequest) -> str:
    return str(request.messages[-1].get("content", ""))


#: What the scripted judge writes after the sentence that explains its score.
JUDGE_RESTATES = "Both answers were read against the context and the question."


@dataclass
class PipelineScript:
    """Plays the generator, re-asker, judge and (optionally) a chat SUT.

    questions(answer, has_feedback) -> [{"question", "explanation"}]; votes(question) -> one
    answer per choice; judge(gold, sut) -> score; triples: the relation extraction reply.
    """

    questions: QuestionsFn
    votes: VotesFn
    judge: JudgeFn = lambda gold, sut: 0
    sut: SutFn | None = None
    triples: list[dict[str, str]] = field(default_factory=list)
    prompts_seen: list[str] = field(default_factory=list)

    def install(self, rules: Rules) -> Rules:
        rules.on(marker("relation_extraction.system"), {"triples": self.triples})
        for kind in ("entity", "relation", "yesno", "unanswerable", "multi_sentence"):
            rules.on(marker(f"{kind}_questions.system"), self._generate)
        rules.on(marker("reask.system"), self._reask)
        rules.on(marker("reask_abstain.system"), self._reask)
        rules.on(marker("reask_yesno.system"), self._reask)
        rules.on(marker("judge.system"), self._judge)
        if self.sut is not None:
            for prompt in ("sut_answer", "sut_answer_question", "sut_rag_answer"):
                rules.on(marker(prompt), self._sut)
        return rules

    def _generate(self, request: ChatRequest, index: int) -> dict[str, Any]:
        text = user_text(request)
        self.prompts_seen.append(text)
        answer = field_of(text, "Target answer") or field_of(text, "Triple")
        count = int(re.search(r"Write (\d+) different", text).group(1))  # type: ignore[union-attr]
        questions = self.questions(answer, "were rejected" in text)
        return {"questions": questions[:count]}

    def _reask(self, request: ChatRequest, index: int) -> str:
        question = field_of(user_text(request), "Question")
        votes = self.votes(question)
        return (
            votes[index % len(votes)] if request.n > 1 else votes[(request.seed or 0) % len(votes)]
        )

    def _judge(self, request: ChatRequest, index: int) -> dict[str, Any]:
        text = user_text(request)
        gold, sut = field_of(text, "gold_answer"), field_of(text, "sut_answer")
        score = self.judge(gold, sut)
        if isinstance(score, list):  # vote i of the list is the choice seeded seed + i
            score = score[((request.seed or 0) + index) % len(score)]
        why = f"{sut!r} vs {gold!r}: {score}. {JUDGE_RESTATES}"
        return {"score": score, "explanation": why}

    def _sut(self, request: ChatRequest, index: int) -> str:
        assert self.sut is not None
        return self.sut(field_of(user_text(request), "Question"))
