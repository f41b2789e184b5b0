"""The pipeline's stages as typed functions over typed values; graph nodes are thin adapters.

context -> answers -> candidates -> checked -> re-asked -> compared -> test cases -> verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from cq2a.consistency import (
    apply_constraints,
    awaiting,
    compare_with_gold,
    mark_duplicates,
    reask,
    settle,
)
from cq2a.generation import generate_questions, needs_question, new_slots, slots_per_answer
from cq2a.llm.client import LLMCallFailed, Malformed
from cq2a.llm.usage import Usage
from cq2a.models import Answer, Candidate, Context, ParsedContext, Skip, TestCase, Verdict
from cq2a.oracle import compared_form, judge_verdicts
from cq2a.prompts_loader import load_prompt, render_prompt
from cq2a.relations import ProposedTriples, relation_answers
from cq2a.services import Services
from cq2a.trace import emit

In = TypeVar("In")
Out = TypeVar("Out")


def parallel_map(fn: Callable[[In], Out], items: Sequence[In], workers: int) -> list[Out]:
    if len(items) <= 1 or workers <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(fn, items))


def sum_usage(usages: Sequence[Usage]) -> Usage:
    total = Usage()
    for usage in usages:
        total = total + usage
    return total


# ---- extract (III-A) ----


def extract_relations(
    services: Services, context: Context, parsed: ParsedContext, limit: int
) -> tuple[list[Answer], Usage, list[Skip]]:
    """III-A2: triples proposed by the LLM, kept only when they pass the filters.

    A failed call is recorded as a skip with reason ``llm_error``, so the run counts it and
    ``--retry-errors`` asks again."""
    user = render_prompt("relation_extraction.user", context=context.context, limit=limit)
    try:
        outputs, usage = services.llm.generator.structured(
            load_prompt("relation_extraction.system"), user, ProposedTriples
        )
    except LLMCallFailed as error:
        emit("relations_failed", context_id=context.id, error=str(error))
        skip = Skip(id=f"{context.id}:relations", reason="llm_error", detail=str(error))
        return [], Usage(), [skip]
    proposed = outputs[0]
    if isinstance(proposed, Malformed):
        emit("relations_malformed", context_id=context.id, error=proposed.error)
        return [], usage, []
    answers, dropped = relation_answers(proposed.triples, context.id, context.context, parsed)
    for triple, reason in dropped:
        emit("triple_dropped", context_id=context.id, triple=triple.model_dump(), reason=reason)
    return answers[:limit], usage, []


def drop_long_sentences(parsed: ParsedContext, max_tokens: int) -> ParsedContext:
    """Sentences longer than ``max_tokens`` are left out of extraction, and say so."""
    kept = [s for s in parsed.sentences if len(s.tokens) <= max_tokens]
    for sentence in parsed.sentences:
        if len(sentence.tokens) > max_tokens:
            emit(
                "sentence_skipped",
                context_id=parsed.context_id,
                sentence_index=sentence.index,
                tokens=len(sentence.tokens),
                reason=f"longer than max_sentence_tokens={max_tokens}",
            )
    return (
        parsed
        if len(kept) == len(parsed.sentences)
        else parsed.model_copy(update={"sentences": kept})
    )


def extract_answers(services: Services, context: Context) -> tuple[list[Answer], Usage, list[Skip]]:
    """Entities from the parse (III-A1) and relations from the LLM (III-A2), capped per context.

    Relations take at most a third of the cap; entities fill the rest.
    """
    from cq2a.extraction import extract_entities

    settings = services.settings
    parsed = drop_long_sentences(services.parser.parse(context), settings.max_sentence_tokens)
    cap = settings.answers_per_context
    relations: list[Answer] = []
    usage = Usage()
    skips: list[Skip] = []
    if settings.relations:
        relations, usage, skips = extract_relations(services, context, parsed, max(1, cap // 3))
    entities = extract_entities(parsed, context, limit=cap - len(relations))
    return entities + relations, usage, skips


# ---- generate (III-B) ----


def generate_round(
    services: Services, context: Context, answers: list[Answer], candidates: list[Candidate]
) -> tuple[list[Candidate], Usage]:
    """Fill every slot that needs a question: new answers' slots, and rejected slots again."""
    settings = services.settings
    have_slots = {c.answer.id for c in candidates}
    fresh = [
        slot
        for answer in answers
        if answer.id not in have_slots
        for slot in new_slots(
            answer,
            slots_per_answer(
                answer, settings.questions_per_entity, settings.questions_per_relation
            ),
        )
    ]
    todo = [c for c in [*candidates, *fresh] if needs_question(c, settings.max_attempts)]
    by_answer: dict[str, list[Candidate]] = {}
    for slot in todo:
        by_answer.setdefault(slot.answer.id, []).append(slot)

    def run(slots: list[Candidate]) -> tuple[list[Candidate], Usage]:
        attempt = len(slots[0].attempts)
        return generate_questions(
            services.llm.generator, slots[0].answer, context, slots, seed_offset=attempt
        )

    results = parallel_map(run, list(by_answer.values()), settings.concurrency)
    updated = [candidate for filled, _ in results for candidate in filled]
    return updated, sum_usage([usage for _, usage in results])


# ---- check (III-C1) and dedup ----


def check_round(services: Services, candidates: list[Candidate]) -> list[Candidate]:
    settings = services.settings
    todo = awaiting(candidates, "check")
    checked = [
        apply_constraints(
            c,
            services.lemmatize,
            min_chars=settings.min_question_chars,
            max_chars=settings.max_question_chars,
            leak_rule=settings.leak_rule,
        )
        for c in todo
    ]
    survivors = [c for c in checked if not c.current.rejected]
    todo_ids = {c.id for c in todo}
    existing = [
        c
        for c in candidates
        if c.id not in todo_ids and c.attempts and not c.current.rejected and c.status != "rejected"
    ]
    if survivors:
        deduped = mark_duplicates(
            survivors, existing, services.embedder.similarity_matrix, settings.dedup_threshold
        )
        by_id = {c.id: c for c in deduped}
        checked = [by_id.get(c.id, c) for c in checked]
    by_id = {c.id: c for c in checked}
    # Slots that failed at generation (malformed, no question) are settled here too.
    return [settle(by_id.get(c.id, c), settings.max_attempts) for c in candidates]


# ---- re-ask and compare (III-C2) ----


def reask_round(
    services: Services, context: Context, candidates: list[Candidate]
) -> tuple[list[Candidate], Usage]:
    settings = services.settings
    todo = awaiting(candidates, "reask")

    def run(candidate: Candidate) -> tuple[Candidate, Usage]:
        return reask(
            services.llm.reasker,
            context,
            candidate,
            settings.votes,
            seed_offset=len(candidate.attempts),
        )

    results = parallel_map(run, todo, settings.concurrency)
    updated = [settle(c, settings.max_attempts) for c, _ in results]
    return updated, sum_usage([usage for _, usage in results])


def compare_round(services: Services, candidates: list[Candidate]) -> list[Candidate]:
    todo = awaiting(candidates, "compare")
    compared = compare_with_gold(
        todo, services.embedder.similarity_pairs, services.consistency_threshold
    )
    return [settle(c, services.settings.max_attempts) for c in compared]


# ---- evaluate (III-D) ----


def test_cases_of(candidates: Sequence[Candidate], contexts: dict[str, Context]) -> list[TestCase]:
    """Accepted candidates as test cases."""
    cases = []
    for candidate in candidates:
        if candidate.status != "accepted":
            continue
        attempt = candidate.current
        answer = candidate.answer
        cases.append(
            TestCase(
                id=candidate.id,
                context_id=candidate.context_id,
                context=contexts[candidate.context_id].context,
                question=attempt.question,
                answer=answer.text,
                kind=answer.kind,
                sentence=answer.sentence,
                start=answer.start,
                end=answer.end,
                explanation=attempt.explanation,
                attempts=len(candidate.attempts),
                votes=attempt.votes,
                similarity=attempt.similarity or 0.0,
            )
        )
    return cases


def run_sut(services: Services, cases: list[TestCase]) -> list[str]:
    """The software under test answers every accepted question, in batches (III-D)."""
    from cq2a.sut.base import SUTQuery, answer_within

    if not cases:
        return []
    queries = [SUTQuery(question=case.question, context=case.context) for case in cases]
    return answer_within(services.sut, queries, services.settings.sut)


def evaluate_cases(
    services: Services, cases: list[TestCase], sut_answers: list[str]
) -> tuple[list[Verdict], Usage]:
    """Two-stage oracle over the SUT's answers; each verdict says whether the SUT saw its
    whole input (an adapter with a window reports what it cut)."""
    from cq2a.sut.base import SUTQuery

    if not cases:
        return [], Usage()
    compared = [compared_form(c.answer, sut) for c, sut in zip(cases, sut_answers, strict=True)]
    similarities = services.embedder.similarity_pairs(compared, [c.answer for c in cases])
    verdicts, usage = judge_verdicts(
        services.llm.judge,
        cases,
        sut_answers,
        [float(s) for s in similarities],
        threshold=services.oracle_threshold,
        judge_threshold=services.settings.judge_threshold,
        concurrency=services.settings.concurrency,
    )
    truncated = getattr(services.sut, "truncated", None)
    if truncated is not None:
        flags = truncated([SUTQuery(question=c.question, context=c.context) for c in cases])
        verdicts = [
            v.model_copy(update={"sut_input_truncated": flag})
            for v, flag in zip(verdicts, flags, strict=True)
        ]
    return verdicts, usage
