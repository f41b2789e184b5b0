"""Node: generate questions for every slot that needs one (III-B), with feedback on retries."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime

from cq2a.candidates import at_step, settle
from cq2a.fanout import parallel_map
from cq2a.generation import generate_questions, new_slots, slots_per_answer
from cq2a.graph.state import ContextState
from cq2a.llm.usage import tally_usage
from cq2a.models import Answer, Candidate
from cq2a.nodes._runtime import services
from cq2a.settings import Settings
from cq2a.trace import emit


def generate(state: ContextState, runtime: Runtime[Settings]) -> dict[str, Any]:
    """Fill every slot waiting for a question: new answers' slots, and rejected slots again."""
    context = state["context"]
    run = services(runtime)
    settings = run.settings
    started = time.perf_counter()
    round_number = state.get("rounds", 0) + 1
    emit("stage_started", context_id=context.id, stage="generate", round=round_number)
    candidates = state.get("candidates", [])
    slots = [*candidates, *slots_for_new_answers(state.get("answers", []), candidates, settings)]
    # One request per answer, for all of its slots that wait for a question.
    by_answer: dict[str, list[Candidate]] = {}
    for slot in at_step(slots, "generate"):
        by_answer.setdefault(slot.answer.id, []).append(slot)

    def ask(answer_slots: list[Candidate]) -> list[Candidate]:
        first = answer_slots[0]
        return generate_questions(
            run.llm.generator,
            first.answer,
            context,
            answer_slots,
            seed_offset=len(first.attempts),
        )

    with tally_usage() as tally:
        results = parallel_map(ask, list(by_answer.values()), settings.concurrency)
    updated = [
        after_generation(slot, settings.max_attempts) for filled in results for slot in filled
    ]
    usage = tally.total
    emit(
        "stage_finished",
        context_id=context.id,
        stage="generate",
        round=round_number,
        counts={"questions": sum(bool(c.attempts and c.current.question) for c in updated)},
        usage=usage.model_dump(),
        seconds=round(time.perf_counter() - started, 3),
    )
    return {"candidates": updated, "usage": usage, "rounds": round_number}


def slots_for_new_answers(
    answers: Sequence[Answer], candidates: Sequence[Candidate], settings: Settings
) -> list[Candidate]:
    """The question slots of answers that have none yet (Table I: 5 per entity, 10 per
    relation)."""
    slotted = {c.answer.id for c in candidates}
    return [
        slot
        for answer in answers
        if answer.id not in slotted
        for slot in new_slots(
            answer,
            slots_per_answer(
                answer, settings.questions_per_entity, settings.questions_per_relation
            ),
        )
    ]


def after_generation(slot: Candidate, max_attempts: int) -> Candidate:
    """A slot given a question goes on to its checks. One whose call failed spent no attempt
    and waits at generate; one the model wrote no question for (malformed or too few) spent
    one and is settled like any rejection."""
    if slot.error is not None:
        return slot
    if slot.current.rejected:
        return settle(slot, max_attempts)
    return slot.model_copy(update={"next_step": "check"})
