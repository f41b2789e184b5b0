"""Node: generate questions for every slot that needs one (III-B), with feedback on retries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from cq2a.checks.rules import explanation_check
from cq2a.generation.bridging import bridge_questions
from cq2a.generation.questions import Explained, generation_round
from cq2a.graph.state import ContextState
from cq2a.language.lemmas import Lemmatizer
from cq2a.models.records import Answer
from cq2a.nodes._events import emit_outcomes, stage
from cq2a.nodes._runtime import services
from cq2a.runtime.steps import generation_limits
from cq2a.runtime.trace import emit
from cq2a.settings import Settings


def generate(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    """Fill every slot waiting for a question: new answers' slots, and rejected slots again."""
    passage = state["context"]
    run = services(runtime)
    speech = run.speaking(passage.language)
    round_number = state.get("rounds", 0) + 1
    emit("stage_started", context_id=passage.id, stage="generate", round=round_number)
    with stage("generate", passage.id, round=round_number) as report:
        asked = generation_round(
            run.llm.generator,
            passage,
            state.get("answers", []),
            state.get("candidates", []),
            generation_limits(run.settings),
            explained_for(speech.lemmatize),
        )
        asked = bridge_questions(asked, speech.parse_question)
        emit_outcomes(passage.id, "generate", asked)  # slots the model wrote no question for
        written = [c for c in asked if c.error is None and c.current.question]
        report.counts = {"questions": len(written)}
    return {"candidates": asked, "usage": report.usage, "rounds": round_number}


def explained_for(lemmatize: Lemmatizer) -> Explained:
    """Whether an explanation written so far passes the check the check node will run on it
    (``explanation_check``): the generator stops there. An unanswerable question's
    explanation is read by no check, so its request stops once the question is written."""

    def for_answer(answer: Answer) -> Callable[[str], bool]:
        check = explanation_check(answer)
        if check is None:
            return lambda explanation: True
        return lambda explanation: check(answer, explanation, lemmatize).passed

    return for_answer
