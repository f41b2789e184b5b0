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
from typing import Any, Literal, get_args

from pydantic import BaseModel

from cq2a.answers.plan import extract_answers
from cq2a.checks.rules import (
    answer_leaks_into_question,
    question_adds_no_ranking,
    question_has_its_form,
    question_is_grounded,
    question_length_is_ok,
    ranks,
)
from cq2a.consistency.compare import compare_with_gold
from cq2a.consistency.reask import reask
from cq2a.generation.questions import generate_questions, new_slots
from cq2a.language.answers import answer_tokens, normalize_yes_no
from cq2a.models.records import (
    UNANSWERABLE,
    Answer,
    AnswerKind,
    Attempt,
    Candidate,
    Context,
    TestCase,
)
from cq2a.oracle.judge import compared_form, judge_verdicts
from cq2a.runtime.services import Services, release_services, services_for
from cq2a.runtime.steps import extraction_limits, oracle_limits
from cq2a.settings import Settings
from evals.parts import PARTS, Part, records_of_part
from evals.runs import emit

QuestionType = Literal["span", "yesno", "unanswerable"]


class HumanQuestion(BaseModel):
    context: Context
    question: str
    answers: list[str]
    #: ``yesno`` for BoolQ's questions (gold "yes"/"no"), ``unanswerable`` for SQuAD 2.0's
    #: impossible ones (gold ``UNANSWERABLE``), else ``span``
    type: QuestionType = "span"
    #: a wrong gold answer for the question: for a span, the answer of another question of
    #: the same context with no word in common; for yes/no, the other label; for an
    #: unanswerable question, none (its negative is an answerable question marked unanswerable)
    mismatched: str | None = None
    #: a yes/no question its passage neither states nor rules out: both labels are wrong golds
    silent: bool = False


def human_question(
    context: Context, qa: dict[str, Any], qas: list[dict], rng: Any
) -> HumanQuestion:
    """One human question of a record as the harness asks it. A yes/no question marked
    ``silent`` (its passage neither states nor rules it out) is asked with the gold "no" and,
    as its mismatched answer, "yes": both must be rejected."""
    if qa.get("silent"):
        return HumanQuestion(
            context=context, question=qa["question"], answers=["no"], type="yesno",
            mismatched="yes", silent=True,
        )  # fmt: skip
    if qa.get("is_impossible") or not qa["answers"]:
        return HumanQuestion(
            context=context, question=qa["question"], answers=[UNANSWERABLE], type="unanswerable"
        )
    label = normalize_yes_no(qa["answers"][0])
    if label is not None and all(normalize_yes_no(a) == label for a in qa["answers"]):
        flipped = "no" if label == "yes" else "yes"
        return HumanQuestion(
            context=context, question=qa["question"], answers=[label], type="yesno",
            mismatched=flipped,
        )  # fmt: skip
    words = set(answer_tokens(qa["answers"][0]))
    others = [
        q["answers"][0]
        for q in qas
        if q is not qa and q["answers"] and not words & set(answer_tokens(q["answers"][0]))
    ]
    return HumanQuestion(
        context=context,
        question=qa["question"],
        answers=list(qa["answers"]),
        mismatched=rng.choice(others) if others else None,
    )


def asked(qa: dict[str, Any]) -> bool:
    """A question the harness asks as answerable: it has answers, or is a yes/no question its
    passage is silent on."""
    return bool(qa["answers"]) or bool(qa.get("silent"))


def sample_questions(
    path: Path,
    contexts: int,
    per_context: int,
    seed: int,
    unanswerable: int = 0,
    part: Part = "all",
    language: str | None = None,
) -> list[HumanQuestion]:
    """``per_context`` answerable human questions from each of ``contexts`` records sampled
    from the sample's ``part``, and up to ``unanswerable`` of their impossible ones (SQuAD 2.0)."""
    rng = random.Random(seed)
    records = records_of_part(path.read_text(encoding="utf-8").splitlines(), part)
    records = [r for r in records if any(asked(q) for q in r.get("qas", []))]
    chosen = rng.sample(records, min(contexts, len(records)))
    sampled = []
    for record in chosen:
        context = Context(id=record["id"], context=record["context"], language=language)
        qas = [q for q in record["qas"] if asked(q) and not q.get("is_impossible")]
        impossible = [q for q in record["qas"] if q.get("is_impossible")]
        picked = rng.sample(qas, min(per_context, len(qas)))
        picked += rng.sample(impossible, min(unanswerable, len(impossible)))
        sampled += [human_question(context, qa, qas, rng) for qa in picked]
    return sampled


KIND_OF_TYPE = {
    "span": AnswerKind.ENTITY_PHRASE,
    "yesno": AnswerKind.YES_NO,
    "unanswerable": AnswerKind.UNANSWERABLE,
}


def as_answer(
    text: str, context: Context, services: Services, type: QuestionType = "span"
) -> Answer:
    """A human answer as the record an extracted one would be (for the checks); a yes/no or
    unanswerable one is about the whole context (humans name no sentence)."""
    words = services.lemmatize(text)
    at = context.context.find(text)
    sentence = next((s for s in context.context.split(". ") if text in s), context.context)
    if type != "span":
        kind = AnswerKind.YES_NO if type == "yesno" else AnswerKind.UNANSWERABLE
        return Answer(
            id=f"{context.id}:h", context_id=context.id, kind=kind, text=text,
            sentence=context.context, sentence_index=0,
        )  # fmt: skip
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


#: (context id, question, gold, type) -> the re-asker's majority answer and its similarity
MAJORITY: dict[tuple[str, str, str, str], tuple[str | None, float | None, int]] = {}
#: Every oracle decision of the run (``oracle_bugs``), written to the JSON to be read.
VERDICTS: list[dict[str, Any]] = []


def filter_outcome(
    services: Services, item: HumanQuestion, gold: str, type: QuestionType | None = None
) -> dict[str, bool]:
    """Which III-C rules a (question, gold answer) pair passes, re-ask and comparison included.
    The rules are those of the question's kind, less those that read a generated explanation
    (humans wrote none): a span's leakage, ranking words and length, a yes/no question's form,
    ranking words and length, an unanswerable question's form, grounding and length."""
    settings = services.settings
    type = type or item.type
    answer = as_answer(gold, item.context, services, type)
    premise = True
    if type == "span":
        leak = answer_leaks_into_question(
            answer, item.question, services.lemmatize, settings.leak_rule
        ).passed
        premise = question_adds_no_ranking(answer, item.question).passed
    else:  # "no_leakage" stands for the kind's own checks of the question
        own = [question_has_its_form(answer, item.question)]
        if type == "yesno":
            premise = question_adds_no_ranking(answer, item.question, services.lemmatize).passed
        if type == "unanswerable":
            own.append(question_is_grounded(answer, item.question, services.lemmatize))
        leak = all(check.passed for check in own)
    length = question_length_is_ok(
        item.question, settings.min_question_chars, settings.max_question_chars
    ).passed
    attempt = Attempt(number=1, question=item.question, explanation=gold)
    candidate = Candidate(
        id=f"{answer.id}:q0", context_id=item.context.id, answer=answer, slot=0, attempts=[attempt]
    )
    voted = reask(
        services.llm.reasker,
        item.context,
        candidate,
        settings.votes,
        seed_offset=1,
        lemmatize=services.lemmatize,
    )
    (compared,) = compare_with_gold(
        [voted], services.embedder.similarity_pairs, services.consistency_threshold
    )
    consistent = voted.error is None and not compared.current.rejected
    MAJORITY[(item.context.id, item.question, gold, type)] = (
        compared.current.majority_answer,
        compared.current.similarity,
        compared.current.majority_count,
    )
    return {
        "no_leakage": leak,
        "stated_premise": premise,
        "length": length,
        "consistency": consistent,
        "accepted": leak and premise and length and consistent,
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
            language=item.context.language or "en",
            question=item.question,
            answer=gold,
            kind=KIND_OF_TYPE[item.type],
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
        lemmatize=services.lemmatize,
        limits=oracle_limits(services),
    )
    VERDICTS.extend(
        {
            "context_id": v.context_id,
            "question": v.question,
            "gold": v.gold_answer,
            "sut": v.sut_answer,
            "similarity": round(v.similarity, 3),
            "stage": v.stage,
            "rule": v.rule,
            "judge_scores": v.judge_scores,
            "bug": v.bug,
        }
        for v in verdicts
    )
    return [v.bug for v in verdicts]


def targeting(services: Services, contexts: list[Context], answers_per_context: int) -> dict:
    """Generate questions for each context's first answers and re-ask every one of them."""
    settings = services.settings
    generated = on_target = 0
    examples: list[dict[str, Any]] = []
    for context in contexts:
        answers = extract_answers(
            context,
            services.parser.parse,
            services.lemmatize,
            lambda: services.llm.generator,
            extraction_limits(settings),
        ).answers
        for answer in answers[:answers_per_context]:
            slots = new_slots(answer, settings.questions_per_entity)
            filled = generate_questions(
                services.llm.generator, answer, context, slots, seed_offset=0
            )
            asked = [c for c in filled if c.attempts and c.current.question]
            for candidate in asked:
                voted = reask(
                    services.llm.reasker,
                    context,
                    candidate,
                    settings.votes,
                    seed_offset=1,
                    lemmatize=services.lemmatize,
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


def rejected_example(item: HumanQuestion, outcome: dict[str, bool]) -> dict[str, Any]:
    """A rejected human question, the rules it failed, and what the re-asker answered."""
    key = (item.context.id, item.question, item.answers[0], item.type)
    majority, similarity, _ = MAJORITY.get(key, (None, None, 0))
    failed = {k: v for k, v in outcome.items() if not v and k != "llm_error"}
    return {
        "type": item.type,
        "question": item.question,
        "answer": item.answers[0],
        **failed,
        "majority": majority,
        "similarity": similarity,
    }


def silent_accepted(
    items: list[HumanQuestion],
    outcomes: dict[int, dict[str, bool]],
    negatives: dict[int, dict[str, bool]],
) -> list[dict[str, Any]]:
    """The silent yes/no questions measured, with the golds ("no", "yes") accepted for them."""
    examples = []
    for i, item in enumerate(items):
        if not item.silent or i not in outcomes:
            continue
        golds = {"no": outcomes[i], "yes": negatives[i]}
        accepted = [gold for gold, outcome in golds.items() if outcome["accepted"]]
        if accepted:
            examples.append({"question": item.question, "accepted": accepted})
    return examples


def type_figures(
    items: list[HumanQuestion],
    positive: list[dict[str, bool]],
    negative: list[dict[str, bool]],
    alternate_bugs: list[bool],
    wrong_bugs: list[bool],
    silent: list[tuple[dict[str, bool], dict[str, bool]]] | None = None,
) -> dict[str, Any]:
    """A type's figures; ``silent`` holds the outcomes of the gold "no" and "yes" of each
    yes/no question its passage is silent on (``filter.silent_rejected``: both rejected)."""
    rules = ("no_leakage", "stated_premise", "length", "consistency")
    extra: dict[str, Any] = {}
    if silent:
        extra = {
            "filter.silent_rejected": rate(
                [not no["accepted"] and not yes["accepted"] for no, yes in silent]
            ),
            "filter.silent_no_rejected": rate([not no["accepted"] for no, _ in silent]),
            "filter.silent_questions": len(silent),
        }
    return {
        **extra,
        "questions": len(items),
        "filter.human_accepted": rate([o["accepted"] for o in positive]),
        "filter.per_rule_pass": {rule: rate([o[rule] for o in positive]) for rule in rules},
        "filter.mismatched_rejected": rate([not o["accepted"] for o in negative]),
        "filter.mismatched_pairs": len(negative),
        "oracle.alternate_not_bug": rate([not bug for bug in alternate_bugs]),
        "oracle.alternate_pairs": len(alternate_bugs),
        "oracle.wrong_is_bug": rate(wrong_bugs),
        "oracle.wrong_pairs": len(wrong_bugs),
    }


def measure(
    settings: Settings,
    data: Path,
    contexts: int,
    per_context: int,
    seed: int,
    generate: bool = False,
    unanswerable: int = 0,
    part: Part = "all",
    only: QuestionType | None = None,
    oracle_only: bool = False,
) -> dict[str, Any]:
    """The figures for every question type in the sample: ``span`` (SQuAD, NarrativeQA),
    ``yesno`` (BoolQ; the negative is the other label) and ``unanswerable`` (SQuAD 2.0's
    impossible questions, ``--unanswerable N`` per context; the negative is an answerable
    question of the sample given the gold ``unanswerable``, and the oracle's alternate is an
    abstention, its wrong answer a span). The top-level figures are the span questions', or
    the only type sampled. ``only`` measures the filters of that type alone (the span questions
    of an ``unanswerable`` run are then only its negatives), with no oracle; ``oracle_only``
    the oracle alone, with no filter (its figures are then null)."""
    started = time.perf_counter()
    MAJORITY.clear()
    VERDICTS.clear()
    release_services()
    services = services_for(settings, "validity")
    language = None if settings.language == "auto" else settings.language
    items = sample_questions(data, contexts, per_context, seed, unanswerable, part, language)
    outcomes: dict[int, dict[str, bool]] = {}
    negatives: dict[int, dict[str, bool]] = {}
    spans = [i for i, item in enumerate(items) if item.type == "span"]
    for number, item in enumerate(items):
        if (only and item.type != only) or oracle_only:
            continue
        outcomes[number] = filter_outcome(services, item, item.answers[0])
        if item.mismatched:
            negatives[number] = filter_outcome(services, item, item.mismatched)
        progress(f"filter {number + 1}/{len(items)}: {item.question!r} {outcomes[number]}")
    asked_unanswerable = any(item.type == "unanswerable" for item in items)
    answerable_negatives = [
        filter_outcome(services, items[i], UNANSWERABLE, type="unanswerable")
        for i in (spans if asked_unanswerable and not oracle_only else [])
    ]
    oracle_cases: dict[str, list[tuple[HumanQuestion, str, str]]] = {}
    for item in items:
        alternates, wrong = (
            oracle_cases.setdefault(f"{item.type}:alt", []),
            oracle_cases.setdefault(f"{item.type}:wrong", []),
        )
        if item.type == "unanswerable":
            alternates.append((item, UNANSWERABLE, "The passage does not say."))
            other = next((o for o in items if o.type == "span" and o.context == item.context), None)
            if other is not None:
                wrong.append((item, UNANSWERABLE, other.answers[0]))
            continue
        alternates += [
            (item, item.answers[0], alternate)
            for alternate in dict.fromkeys(item.answers[1:])
            if answer_tokens(alternate) != answer_tokens(item.answers[0])
        ]
        if item.mismatched and not item.silent:
            wrong.append((item, item.answers[0], item.mismatched))
    if only:  # the filters of one type: no oracle
        oracle_cases = {}
    progress("oracle: " + ", ".join(f"{k} {len(v)}" for k, v in oracle_cases.items()))
    bugs = {key: oracle_bugs(services, cases) for key, cases in oracle_cases.items()}
    by_type: dict[str, Any] = {}
    for kind in ("span", "yesno", "unanswerable"):
        silent = [i for i, item in enumerate(items) if item.type == kind and item.silent]
        chosen = [i for i, item in enumerate(items) if item.type == kind and not item.silent]
        if (not chosen and not silent) or (only and kind != only):
            continue
        negative = [negatives[i] for i in chosen if i in negatives]
        if kind == "unanswerable":
            negative = answerable_negatives
        by_type[kind] = type_figures(
            [items[i] for i in chosen],
            [outcomes[i] for i in chosen if i in outcomes],
            negative,
            bugs.get(f"{kind}:alt", []),
            bugs.get(f"{kind}:wrong", []),
            silent=[(outcomes[i], negatives[i]) for i in silent if i in outcomes],
        )
    main_type = "span" if "span" in by_type else next(iter(by_type))
    figures: dict[str, Any] = {
        "data": str(data),
        "part": part,
        "contexts": len({item.context.id for item in items}),
        **by_type[main_type],
        "type": main_type,
        "by_type": by_type,
        "llm_errors": sum(o["llm_error"] for o in [*outcomes.values(), *negatives.values()]),
        "settings": {
            "leak_rule": settings.leak_rule,
            "votes": settings.votes,
            "judge_votes": settings.judge_votes,
            "consistency_threshold": services.consistency_threshold,
            "oracle_threshold": services.oracle_threshold,
            "reasker": settings.reasker.model,
            "judge": settings.judge.model,
        },
        "rejected_human_examples": [
            rejected_example(item, outcomes[i])
            for i, item in enumerate(items)
            if i in outcomes and not outcomes[i]["accepted"] and not item.silent
        ][:12],
        "reasked": [
            {
                "context_id": context_id,
                "type": question_type,
                "question": question,
                "gold": gold,
                "majority": majority,
                "similarity": similarity,
                "majority_votes": count,
            }
            for (context_id, question, gold, question_type), (majority, similarity, count) in (
                MAJORITY.items()
            )
        ],
        "silent_accepted_examples": silent_accepted(items, outcomes, negatives),
        "oracle_verdicts": list(VERDICTS),
    }
    if generate:
        chosen_contexts = list({item.context.id: item.context for item in items}.values())
        figures["generation"] = targeting(services, chosen_contexts, answers_per_context=2)
        figures["targeting_rate"] = figures["generation"]["targeting_rate"]
    usage = services.llm.meter.total
    figures["llm_requests"] = usage.requests
    figures["tokens"] = usage.total_tokens
    figures["seconds"] = round(time.perf_counter() - started, 1)
    figures["counts"] = dict(Counter(o["accepted"] for o in outcomes.values()))
    release_services()
    return figures


def rule_costs(data: Path, settings: Settings) -> dict[str, Any]:
    """What the rules that need no LLM cost on human data: the share of every answerable human
    span question of the file that each leakage rule would reject as leaking its own answer,
    and that the ranking rule would reject as a false premise."""
    services = services_for(settings, "validity-leak")
    rng = random.Random(0)
    records = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line]
    items = [
        human_question(Context(id=r["id"], context=r["context"]), qa, r["qas"], rng)
        for r in records
        for qa in r.get("qas", [])
        if qa["answers"] and not qa.get("is_impossible")
    ]
    items = [item for item in items if item.type == "span"]
    flagged: dict[str, Any] = {}
    for rule in ("paper", "strict"):
        leaks = [
            not answer_leaks_into_question(
                as_answer(item.answers[0], item.context, services),
                item.question,
                services.lemmatize,
                rule,
            ).passed
            for item in items
        ]
        flagged[rule] = {"rejected": rate(leaks), "questions": len(items)}
    premises = [
        question_adds_no_ranking(as_answer(item.answers[0], item.context, services), item.question)
        for item in items
    ]
    return {
        "data": str(data),
        "leak_rule_rejects_human_questions": flagged,
        "ranking_rule_rejects_human_questions": {
            "rejected": rate([not check.passed for check in premises]),
            "questions": len(items),
            "ranking_words": sum(bool(ranks(item.question)) for item in items),
            "examples": [
                {"question": item.question, "answer": item.answers[0], "detail": check.detail}
                for item, check in zip(items, premises, strict=True)
                if not check.passed
            ],
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--contexts", type=int, default=4)
    parser.add_argument("--per-context", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generate", action="store_true", help="also measure targeting_rate")
    parser.add_argument(
        "--unanswerable", type=int, default=0, help="impossible questions per context (SQuAD 2.0)"
    )
    parser.add_argument(
        "--rule-costs",
        "--leak-rules",
        action="store_true",
        help="only what the leakage and ranking rules reject of the file's human questions "
        "(no LLM)",
    )
    parser.add_argument(
        "--part",
        choices=PARTS,
        default="all",
        help="the sample's tune or report part (../shared/data/README.md); all by default",
    )
    parser.add_argument(
        "--only",
        choices=get_args(QuestionType),
        default=None,
        help="the filters of one question type alone, no oracle",
    )
    parser.add_argument(
        "--oracle-only", action="store_true", help="the oracle alone, no filter (no re-asks)"
    )
    parser.add_argument(
        "--language",
        default="en",
        help="the sample's language (fr: the PIAF sample, with French parsing, embedder, prompts)",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    settings = Settings(cache_path="off", language=args.language)
    if args.rule_costs:
        cost = rule_costs(args.data, settings)
        emit(cost, json.dumps(cost, indent=2), args.json)
        return
    figures = measure(
        settings,
        args.data,
        args.contexts,
        args.per_context,
        args.seed,
        generate=args.generate,
        unanswerable=args.unanswerable,
        part=args.part,
        only=args.only,
        oracle_only=args.oracle_only,
    )
    emit(figures, json.dumps(figures, indent=2), args.json)


if __name__ == "__main__":
    main()
