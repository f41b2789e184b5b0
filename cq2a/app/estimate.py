"""What a run will cost before it starts (``cq2a estimate``): requests, prompt and completion
tokens per stage, from the real prompts rendered on the input's contexts and answers.

The extractor runs for real (no LLM); what only the LLM decides (how many questions are
rejected and asked again, how many pass the checks, how many tests the judge sees, how long the
replies are) comes from ``Rates``: measured on an earlier run with ``--from RUN``, or the
defaults below otherwise.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cq2a.adapters.llm.prompts import load_prompt, render_prompt
from cq2a.answers.plan import drop_long_sentences, first_answers, select_entities, target_pool
from cq2a.answers.relations import extraction_prompt
from cq2a.app import outputs as out
from cq2a.app.inputs import read_contexts
from cq2a.generation.questions import generation_messages
from cq2a.language.parsing import get_parser
from cq2a.models.mix import parse_mix
from cq2a.models.records import Answer, Context
from cq2a.settings import Settings

#: Characters per token of English prompts for the BPE tokenizers of the catalog's models and
#: OpenAI's (3.5-4.5 on the shipped samples); chat templates add a few tokens per message.
CHARS_PER_TOKEN = 4.0
TEMPLATE_TOKENS = 12
#: A generated question is about this long (SQuAD questions: 60 characters on average).
QUESTION_CHARS = 70


class Rates(BaseModel):
    """What only the LLM decides, per unit. The defaults were measured on two offline demo-sized
    runs (4 SQuAD 2.0 contexts, qwen2.5-coder-1.5B in every role; see evals/README.md#estimate);
    ``from_run`` measures them on a run directory (``cq2a estimate --from RUN``)."""

    source: str = "defaults"
    attempts_per_slot: float = 1.9
    checks_pass: float = 0.45
    accepted_per_slot: float = 0.25
    judged_per_test: float = 0.9
    relations_per_context: float = 0.0
    completion_per_question: float = 68.0
    completion_per_vote: float = 6.3
    #: Completion tokens of one judge vote (a request carries ``judge_votes`` of them).
    completion_per_judge: float = 54.0
    completion_per_relation_call: float = 105.0
    #: Measured on a run; None: one request when the re-asker honours ``n``, else one per vote.
    reask_requests_per_question: float | None = None

    @classmethod
    def from_run(cls, run_dir: str | Path) -> Rates:
        run_dir = Path(run_dir)
        candidates = out.read_jsonl(run_dir / out.CANDIDATES)
        if not candidates:
            raise ValueError(f"no {out.CANDIDATES} in {run_dir}: give a finished cq2a run")
        record = out.read_json(run_dir / out.RUN)
        counts = record["counts"]
        attempts = [a for c in candidates for a in c["attempts"]]
        asked = [a for a in attempts if a.get("question")]
        usage = stage_usage(run_dir / out.TRACE)
        defaults = cls()

        def per(stage: str, unit: float, default: float) -> float:
            tokens = usage[stage]["completion_tokens"]
            return tokens / unit if tokens and unit else default

        votes = sum(len(a.get("raw_votes") or a.get("votes") or []) for a in attempts)
        relation_calls = counts["contexts"] if record["settings"].get("relations") else 0
        return cls(
            source=str(run_dir),
            attempts_per_slot=len(attempts) / len(candidates),
            checks_pass=sum(bool(a.get("votes")) for a in asked) / max(1, len(asked)),
            accepted_per_slot=counts["accepted"] / len(candidates),
            judged_per_test=counts["judged"] / max(1, counts["test_cases"]),
            relations_per_context=counts["answers"].get("relation", 0) / max(1, counts["contexts"]),
            completion_per_question=per("generate", len(asked), defaults.completion_per_question),
            completion_per_vote=per("reask", votes, defaults.completion_per_vote),
            completion_per_judge=per(  # per vote: a judge request carries judge_votes of them
                "evaluate",
                usage["evaluate"]["requests"] * record["settings"].get("judge_votes", 1),
                defaults.completion_per_judge,
            ),
            completion_per_relation_call=per(
                "extract", relation_calls, defaults.completion_per_relation_call
            ),
            reask_requests_per_question=usage["reask"]["requests"]
            / max(1, sum(bool(a.get("votes")) for a in asked))
            or None,
        )


def stage_usage(trace: Path) -> defaultdict[str, Counter[str]]:
    """LLM usage per stage, summed over a run's ``stage_finished`` events; 0 for a stage or a
    figure the run never reported."""
    totals: defaultdict[str, Counter[str]] = defaultdict(Counter)
    if trace.is_file():
        for line in trace.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("event") == "stage_finished" and event.get("usage"):
                totals[event["stage"]].update(event["usage"])
    return totals


def tokens(*texts: str) -> float:
    return sum(len(text) for text in texts) / CHARS_PER_TOKEN + TEMPLATE_TOKENS


class StageEstimate(BaseModel):
    requests: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0

    def total_tokens(self) -> float:
        return self.prompt_tokens + self.completion_tokens

    def add(self, requests: float, prompt: float, completion: float) -> None:
        self.requests += requests
        self.prompt_tokens += requests * prompt
        self.completion_tokens += requests * completion


def estimate_run(
    input_path: str | Path, settings: Settings, rates: Rates, limit: int | None = None
) -> dict[str, Any]:
    """Expected LLM traffic and cost of ``cq2a run`` on this input with these settings."""
    contexts, _ = read_contexts(
        input_path, settings.max_context_chars, settings.passage_chars, settings.input_languages()
    )
    return estimate_contexts(contexts[:limit], settings, rates) | {"input": str(input_path)}


def estimate_contexts(
    contexts: list[Context], settings: Settings, rates: Rates, sample: int | None = None
) -> dict[str, Any]:
    """``estimate_run`` on these contexts; with ``sample``, on the first ``sample`` of them,
    scaled to all (so a large input is estimated in seconds)."""
    if sample is not None and len(contexts) > sample:
        figures = estimate_contexts(contexts[:sample], settings, rates)
        return scaled(figures, len(contexts) / sample) | {
            "contexts": len(contexts),
            "sampled_contexts": sample,
        }

    stages = {name: StageEstimate() for name in ("extract", "generate", "reask", "evaluate")}
    cap = settings.answers_per_context
    mix = settings.mix()
    others = {k: v for k, v in mix.items() if k != "relation"}
    # A coverage round gives half of answers_per_context more answers, like the first ones.
    extra = settings.coverage_rounds * max(1, cap // 2)
    slots_total = 0.0
    answers_total = 0.0
    for context in contexts:
        relations = first_relations = 0.0
        if "relation" in mix:
            limit_relations = max(1, cap // 3)
            found = min(float(limit_relations), rates.relations_per_context)
            first_relations = min(found, float(round(mix["relation"] * cap)))
            relations = min(found, first_relations + round(mix["relation"] * extra))
            user = extraction_prompt(context.context, limit_relations)
            stages["extract"].add(
                1,
                tokens(load_prompt("relation_extraction.system"), user),
                rates.completion_per_relation_call,
            )
        parser = get_parser(settings.parser, context.language or "en")
        parsed, _ = drop_long_sentences(parser.parse(context), settings.max_sentence_tokens)
        entities = select_entities(parsed, context, settings.answers, settings.answer_budget)
        pool = target_pool(parsed, context, entities, [], mix)
        room = cap - round(first_relations)
        picked = first_answers(pool, parse_mix(others), room) if others else []
        more = extra - (relations - first_relations)
        scale = (len(picked) + more) / len(picked) if picked else 0.0
        answers_total += len(picked) * scale + relations
        for answer in picked:
            slots_total += add_answer(stages, settings, rates, context, answer, scale)
        if relations and picked:
            # A relation answer's prompts are like an entity's; its slots are Table I's 10.
            slots_total += add_answer(
                stages, settings, rates, context, picked[0], relations, relation=True
            )
    tests = slots_total * rates.accepted_per_slot
    judge_user = render_prompt(
        "judge.user",
        context=contexts[0].context if contexts else "",
        question="x" * QUESTION_CHARS,
        gold_answer="gold answer",
        sut_answer="the answer of the software",
    )
    judge_prompt = tokens(load_prompt("judge.system"), judge_user)
    probes = 2 if settings.probe_judge else 0
    stages["evaluate"].add(
        tests * rates.judged_per_test + probes,
        judge_prompt,
        rates.completion_per_judge * settings.judge_votes,  # the votes share one prompt
    )
    total = StageEstimate()
    for stage in stages.values():
        total.requests += stage.requests
        total.prompt_tokens += stage.prompt_tokens
        total.completion_tokens += stage.completion_tokens
    cost = (
        total.prompt_tokens / 1000 * settings.price_per_1k_prompt
        + total.completion_tokens / 1000 * settings.price_per_1k_completion
    )
    return {
        "contexts": len(contexts),
        "answers": round(answers_total, 1),
        "question_slots": round(slots_total, 1),
        "expected_tests": round(tests, 1),
        "rates": rates.model_dump(),
        "stages": {name: rounded(stage) for name, stage in stages.items()},
        "total": rounded(total) | {"total_tokens": round(total.total_tokens())},
        "cost": round(cost, 4),
    }


def add_answer(
    stages: dict[str, StageEstimate],
    settings: Settings,
    rates: Rates,
    context: Context,
    answer: Answer,
    weight: float,
    *,
    relation: bool = False,
) -> float:
    """Add one answer's generation and re-asking (``weight`` answers like it); its slots."""
    slots = settings.questions_per_relation if relation else settings.questions_per_entity
    system, user = generation_messages(answer, context, slots, feedback="")
    # One request per answer and round, for those of its slots that are still rejected.
    reject = rejection_per_round(rates.attempts_per_slot, settings.max_attempts)
    rounds = sum(1 - (1 - reject**k) ** slots for k in range(settings.max_attempts))
    questions = slots * rates.attempts_per_slot
    stages["generate"].add(
        weight * rounds,
        tokens(system, user),
        questions / rounds * rates.completion_per_question,
    )
    reask_user = render_prompt("reask.user", context=context.context, question="x" * QUESTION_CHARS)
    reasked = questions * rates.checks_pass
    per_question = rates.reask_requests_per_question or vote_requests_per_question(settings)
    stages["reask"].add(
        weight * reasked * per_question,
        tokens(load_prompt("reask.system"), reask_user),
        settings.votes * rates.completion_per_vote / per_question,
    )
    return weight * slots


def vote_requests_per_question(settings: Settings) -> float:
    """Requests that carry one question's votes: one where the server honours ``n``, one per
    vote where it does not, and one per ``local_slots`` votes to a local llama.cpp server,
    which answers at most that many choices per request."""
    spec = settings.reasker
    if spec.supports_n is False:
        return float(settings.votes)
    if spec.backend == "local" and spec.supports_n is None:
        return float(math.ceil(settings.votes / settings.local_slots))
    return 1.0


def rejection_per_round(attempts_per_slot: float, max_attempts: int) -> float:
    """The chance ``p`` that an attempt is rejected, from the mean attempts per slot:
    ``1 + p + ... + p**(max_attempts - 1)``."""
    target = min(max(attempts_per_slot, 1.0), float(max_attempts))
    low, high = 0.0, 1.0
    for _ in range(50):
        middle = (low + high) / 2
        if sum(middle**k for k in range(max_attempts)) < target:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def rounded(stage: StageEstimate) -> dict[str, int]:
    return {
        "requests": round(stage.requests),
        "prompt_tokens": round(stage.prompt_tokens),
        "completion_tokens": round(stage.completion_tokens),
    }


def scaled(figures: dict[str, Any], factor: float) -> dict[str, Any]:
    """The figures of a sample, scaled to the whole input."""

    def scale(stage: dict[str, int]) -> dict[str, int]:
        return {name: round(value * factor) for name, value in stage.items()}

    return figures | {
        "answers": round(figures["answers"] * factor, 1),
        "question_slots": round(figures["question_slots"] * factor, 1),
        "expected_tests": round(figures["expected_tests"] * factor, 1),
        "stages": {name: scale(stage) for name, stage in figures["stages"].items()},
        "total": scale(figures["total"]),
        "cost": round(figures["cost"] * factor, 4),
    }


def estimate_error(figures: dict[str, Any], actual_total_tokens: int) -> dict[str, Any]:
    """The estimate beside what the run really spent; ``error`` is (estimate - actual) / actual."""
    expected = figures["total"]["total_tokens"]
    error = (expected - actual_total_tokens) / actual_total_tokens if actual_total_tokens else None
    return {
        "total_tokens": expected,
        "requests": figures["total"]["requests"],
        "actual_total_tokens": actual_total_tokens,
        "error": None if error is None else round(error, 3),
        "rates": figures["rates"]["source"],
    }
