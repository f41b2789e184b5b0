"""Filters and oracle measured on human-written questions (III-C, III-D).

For each sampled human question of a dataset file (the project's JSONL with ``qas``):

1. filter, positive: (the human question, its first human answer) through the checks, the
   re-ask and the comparison a run uses -> ``filter.human_accepted`` and per-rule pass rates;
2. filter, negative: (the same question, the answer of another question of the context that
   shares no word with it) -> ``filter.mismatched_rejected``;
3. oracle, negative: another person's answer to the question (SQuAD's alternate answers) as
   the SUT's answer -> ``oracle.alternate_not_bug``;
4. oracle, positive: another question's answer as the SUT's answer -> ``oracle.wrong_is_bug``.

``--generate`` also generates questions for the contexts' extracted answers and re-asks every
one of them: ``targeting_rate`` = questions whose re-ask majority matches their answer /
questions generated.

    python -m evals.validity --data cq2a/data/squad2_dev_sample.jsonl --contexts 4 \\
        --per-context 4 --seed 0 --generate --json evals/results/validity.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cq2a.answers import answer_tokens
from cq2a.checks import answer_leaks_into_question, question_length_is_ok
from cq2a.comparison import compare_with_gold
from cq2a.extraction import extract_context
from cq2a.generation import generate_questions, new_slots
from cq2a.models import Answer, AnswerKind, Attempt, Candidate, Context, TestCase
from cq2a.oracle import compared_form, judge_verdicts
from cq2a.reasking import reask
from cq2a.services import Services, release_services, services_for
from cq2a.settings import Settings
from evals.runs import emit


class HumanQuestion(BaseModel):
    context: Context
    question: str
    answers: list[str]
    #: an answer of another question of the same context with no word in common, if any
    mismatched: str | None = None


def sample_questions(path: Path, contexts: int, per_context: int, seed: int) -> list[HumanQuestion]:
    """``per_context`` answerable human questions from each of ``contexts`` sampled records."""
    rng = random.Random(seed)
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    records = [r for r in records if any(q["answers"] for q in r.get("qas", []))]
    chosen = rng.sample(records, min(contexts, len(records)))
    sampled = []
    for record in chosen:
        context = Context(id=record["id"], context=record["context"])
        qas = [q for q in record["qas"] if q["answers"] and not q.get("is_impossible")]
        for qa in rng.sample(qas, min(per_context, len(qas))):
            words = set(answer_tokens(qa["answers"][0]))
            others = [
                q["answers"][0]
                for q in qas
                if q is not qa and not words & set(answer_tokens(q["answers"][0]))
            ]
            sampled.append(
                HumanQuestion(
                    context=context,
                    question=qa["question"],
                    answers=list(qa["answers"]),
                    mismatched=rng.choice(others) if others else None,
                )
            )
    return sampled


def as_answer(text: str, context: Context, services: Services) -> Answer:
    """A human answer as the record an extracted one would be (for the checks)."""
    words = services.lemmatize(text)
    at = context.context.find(text)
    sentence = next((s for s in context.context.split(". ") if text in s), context.context)
    return Answer(
        id=f"{context.id}:h",
        context_id=context.id,
        kind=AnswerKind.ENTITY_PHRASE if len(words) > 1 else AnswerKind.ENTITY_WORD,
        text=text,
        sentence=sentence,
        sentence_index=0,
        start=at if at >= 0 else None,
        end=at + len(text) if at >= 0 else None,
        lemma=" ".join(lemma for lemma, _ in words),
        head_nouns=[lemma for lemma, upos in words if upos in {"NOUN", "PROPN"}],
    )


def filter_outcome(services: Services, item: HumanQuestion, gold: str) -> dict[str, bool]:
    """Which III-C rules a (question, gold answer) pair passes, re-ask and comparison included."""
    settings = services.settings
    answer = as_answer(gold, item.context, services)
    leak = answer_leaks_into_question(
        answer, item.question, services.lemmatize, settings.leak_rule
    ).passed
    length = question_length_is_ok(
        item.question, settings.min_question_chars, settings.max_question_chars
    ).passed
    attempt = Attempt(number=1, question=item.question, explanation=gold)
    candidate = Candidate(
        id=f"{answer.id}:q0", context_id=item.context.id, answer=answer, slot=0, attempts=[attempt]
    )
    voted = reask(services.llm.reasker, item.context, candidate, settings.votes, seed_offset=1)
    (compared,) = compare_with_gold(
        [voted], services.embedder.similarity_pairs, services.consistency_threshold
    )
    consistent = voted.error is None and not compared.current.rejected
    return {
        "no_leakage": leak,
        "length": length,
        "consistency": consistent,
        "accepted": leak and length and consistent,
        "llm_error": voted.error is not None,
    }


def oracle_bugs(services: Services, cases: list[tuple[HumanQuestion, str, str]]) -> list[bool]:
    """The two-stage oracle's bug verdict for (question, gold, SUT answer) triples."""
    if not cases:
        return []
    tests = [
        TestCase(
            id=f"v{i}",
            context_id=item.context.id,
            context=item.context.context,
            question=item.question,
            answer=gold,
            kind=AnswerKind.ENTITY_PHRASE,
            sentence="",
            explanation="",
            attempts=1,
            votes=[],
            similarity=1.0,
        )
        for i, (item, gold, _) in enumerate(cases)
    ]
    sut = [answer for _, _, answer in cases]
    compared = [compared_form(gold, answer) for _, gold, answer in cases]
    similarities = services.embedder.similarity_pairs(compared, [gold for _, gold, _ in cases])
    verdicts = judge_verdicts(
        services.llm.judge,
        tests,
        sut,
        [float(s) for s in similarities],
        threshold=services.oracle_threshold,
        judge_threshold=services.settings.judge_threshold,
        concurrency=services.settings.concurrency,
        judge_votes=services.settings.judge_votes,
    )
    return [v.bug for v in verdicts]


def targeting(services: Services, contexts: list[Context], answers_per_context: int) -> dict:
    """Generate questions for each context's first answers and re-ask every one of them."""
    settings = services.settings
    generated = on_target = 0
    examples = []
    for context in contexts:
        answers = extract_context(services, context).answers
        for answer in answers[:answers_per_context]:
            slots = new_slots(answer, settings.questions_per_entity)
            filled = generate_questions(
                services.llm.generator, answer, context, slots, seed_offset=0
            )
            asked = [c for c in filled if c.attempts and c.current.question]
            for candidate in asked:
                voted = reask(
                    services.llm.reasker, context, candidate, settings.votes, seed_offset=1
                )
                (compared,) = compare_with_gold(
                    [voted], services.embedder.similarity_pairs, services.consistency_threshold
                )
                generated += 1
                hit = voted.error is None and not compared.current.rejected
                progress(f"targeting {answer.text!r}: {candidate.current.question!r} -> {hit}")
                on_target += hit
                if len(examples) < 12:
                    examples.append(
                        {
                            "answer": answer.text,
                            "question": candidate.current.question,
                            "majority": compared.current.majority_answer,
                            "similarity": compared.current.similarity,
                            "on_target": hit,
                        }
                    )
    return {
        "targeting_rate": on_target / generated if generated else None,
        "questions_generated": generated,
        "on_target": on_target,
        "examples": examples,
    }


def progress(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def rate(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def measure(
    settings: Settings,
    data: Path,
    contexts: int,
    per_context: int,
    seed: int,
    generate: bool = False,
) -> dict[str, Any]:
    started = time.perf_counter()
    release_services()
    services = services_for(settings, "validity")
    items = sample_questions(data, contexts, per_context, seed)
    positive, mismatched = [], []
    for number, item in enumerate(items, start=1):
        positive.append(filter_outcome(services, item, item.answers[0]))
        if item.mismatched:
            mismatched.append(filter_outcome(services, item, item.mismatched))
        progress(f"filter {number}/{len(items)}: {item.question!r} accepted={positive[-1]}")
    alternates = [
        (item, item.answers[0], alternate)
        for item in items
        for alternate in dict.fromkeys(item.answers[1:])
        if answer_tokens(alternate) != answer_tokens(item.answers[0])
    ]
    wrong = [(item, item.answers[0], item.mismatched) for item in items if item.mismatched]
    progress(f"oracle: {len(alternates)} alternate and {len(wrong)} wrong answers")
    alternate_bugs = oracle_bugs(services, alternates)
    wrong_bugs = oracle_bugs(services, wrong)  # type: ignore[arg-type]
    rules = ("no_leakage", "length", "consistency")
    figures: dict[str, Any] = {
        "data": str(data),
        "contexts": len({item.context.id for item in items}),
        "questions": len(items),
        "filter.human_accepted": rate([o["accepted"] for o in positive]),
        "filter.per_rule_pass": {rule: rate([o[rule] for o in positive]) for rule in rules},
        "filter.mismatched_rejected": rate([not o["accepted"] for o in mismatched]),
        "filter.mismatched_pairs": len(mismatched),
        "oracle.alternate_not_bug": rate([not bug for bug in alternate_bugs]),
        "oracle.alternate_pairs": len(alternates),
        "oracle.wrong_is_bug": rate(wrong_bugs),
        "oracle.wrong_pairs": len(wrong),
        "llm_errors": sum(o["llm_error"] for o in positive + mismatched),
        "settings": {
            "leak_rule": settings.leak_rule,
            "votes": settings.votes,
            "consistency_threshold": services.consistency_threshold,
            "oracle_threshold": services.oracle_threshold,
            "reasker": settings.reasker.model,
            "judge": settings.judge.model,
        },
        "rejected_human_examples": [
            {"question": item.question, "answer": item.answers[0]}
            | {k: v for k, v in outcome.items() if not v and k != "llm_error"}
            for item, outcome in zip(items, positive, strict=True)
            if not outcome["accepted"]
        ][:10],
    }
    if generate:
        chosen = list({item.context.id: item.context for item in items}.values())
        figures["generation"] = targeting(services, chosen, answers_per_context=2)
        figures["targeting_rate"] = figures["generation"]["targeting_rate"]
    usage = services.llm.meter.total
    figures["llm_requests"] = usage.requests
    figures["tokens"] = usage.total_tokens
    figures["seconds"] = round(time.perf_counter() - started, 1)
    figures["counts"] = dict(Counter(o["accepted"] for o in positive))
    release_services()
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--contexts", type=int, default=4)
    parser.add_argument("--per-context", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generate", action="store_true", help="also measure targeting_rate")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    settings = Settings(cache_path="off")
    figures = measure(
        settings, args.data, args.contexts, args.per_context, args.seed, generate=args.generate
    )
    emit(figures, json.dumps(figures, indent=2), args.json)


if __name__ == "__main__":
    main()
