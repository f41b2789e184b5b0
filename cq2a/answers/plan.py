"""III-A for one context: every target it could ask about, and the first ones given question
slots. ``extract_answers`` is the graph's step; it takes what it uses (a parser, a lemmatizer,
the generator's client and the ``ExtractionLimits`` of the run) and calls the paper's III-A1
and III-A2 functions itself."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from cq2a.adapters.llm.client import ChatClient
from cq2a.answers.asked import rank_asked_answers
from cq2a.answers.entities import paper_answers, rank_paper_answers
from cq2a.answers.kinds import multi_sentence_targets, unanswerable_targets, yes_no_targets
from cq2a.answers.relations import RelationExtraction, extract_relations
from cq2a.language.lemmas import Lemmatizer
from cq2a.models.mix import Mix, allocate
from cq2a.models.records import (
    Answer,
    Context,
    ContextPlan,
    ParsedContext,
    QuestionKind,
    Sentence,
    Skip,
)
from cq2a.settings import AnswerSet

#: Tokens a prompt needs besides the context (instructions, the answer, feedback) and the
#: completion (the generator's cap), with a margin.
PROMPT_RESERVE_TOKENS = 1600
#: Characters per token, on the low side for English prose, so the window check errs long.
WINDOW_CHARS_PER_TOKEN = 3.5


@dataclass(frozen=True, kw_only=True)
class ExtractionLimits:
    """What ``extract_answers`` reads from a run's settings."""

    #: Each prompting role's model window in tokens (None: unknown, not checked).
    windows: Mapping[str, int | None]
    #: Sentences with more tokens are left out.
    max_sentence_tokens: int
    #: The share of each question kind.
    mix: Mix
    #: Answers given question slots at first.
    answers_per_context: int
    #: ``paper`` (III-A1's answers alone) or ``asked`` (with the names, numbers ... people ask).
    answers: AnswerSet
    #: Entity answers kept in the pool, for the first slots and the coverage rounds.
    answer_budget: int


def entities_of_set(
    paper: Sequence[Answer],
    parsed: ParsedContext,
    context: Context,
    answers: AnswerSet,
    limit: int | None = None,
) -> list[Answer]:
    """The entity answers of one context from the chosen set, given its III-A1 answers
    ``paper``: ``paper``, those alone; ``asked``, those with the names, numbers, noun chunks,
    modifiers and clauses people ask about, ranked by ``cq2a.answers.asked``."""
    if answers == "paper":
        return rank_paper_answers(paper, context.id, limit)
    return rank_asked_answers(parsed, context, paper, limit)


def select_entities(
    parsed: ParsedContext, context: Context, answers: AnswerSet, limit: int | None = None
) -> list[Answer]:
    """``entities_of_set`` from the parse alone."""
    return entities_of_set(paper_answers(parsed, context), parsed, context, answers, limit)


def sentence_spans(parsed: ParsedContext) -> list[tuple[int, int]]:
    """Character spans of the parsed sentences in the context, in order."""
    return [(s.start, s.end) for s in parsed.sentences]


def drop_long_sentences(
    parsed: ParsedContext, max_tokens: int
) -> tuple[ParsedContext, list[Sentence]]:
    """The parse without its sentences longer than ``max_tokens``, and those sentences."""
    long = [s for s in parsed.sentences if len(s.tokens) > max_tokens]
    if not long:
        return parsed, []
    kept = [s for s in parsed.sentences if len(s.tokens) <= max_tokens]
    return parsed.model_copy(update={"sentences": kept}), long


class Extraction(BaseModel):
    """One context's answers, and what extraction left out on the way."""

    context_id: str
    answers: list[Answer] = Field(description="The first answers given question slots.")
    plan: ContextPlan | None = Field(None, description="Every target, for coverage rounds.")
    long_sentences: list[Sentence] = Field(
        default_factory=list, description="Sentences left out for their length."
    )
    relations: RelationExtraction | None = Field(None, description="None when turned off.")
    skips: list[Skip] = Field(
        default_factory=list,
        description="The context itself (over a model's window), or its relation call (failed).",
    )


def target_pool(
    parsed: ParsedContext,
    context: Context,
    entities: Sequence[Answer],
    relations: Sequence[Answer],
    mix: Mix,
) -> list[Answer]:
    """Every target of a context, best first within each kind: its entity answers (III-A1,
    ``entities_of_set``), its relations (III-A2), and the yes/no, unanswerable and
    multi-sentence targets of the kinds in the mix (``cq2a.answers.kinds``)."""
    pool = [*entities, *relations]
    if "yesno" in mix:
        pool += yes_no_targets(parsed, context)
    if "unanswerable" in mix:
        pool += unanswerable_targets(parsed, context)
    if "multi_sentence" in mix:
        pool += multi_sentence_targets(parsed, context, entities)
    return pool


def extract_answers(
    context: Context,
    parse: Callable[[Context], ParsedContext],
    lemmatize: Lemmatizer,
    client: Callable[[], ChatClient],
    limits: ExtractionLimits,
) -> Extraction:
    """III-A for one context: its entity answers of the chosen set up to ``answer_budget``
    (III-A1), its relations (III-A2) and the targets of the other kinds (``target_pool``),
    and the first ``answers_per_context`` of them split over the kinds by the mix.

    Relations come from one call of the client ``client()`` returns (the generator's, built
    only then: building it may start a local model server) for at most a third of
    ``answers_per_context`` triples, made only when the mix asks for relations. A context whose
    prompts would not fit a role's window is skipped whole.
    """
    too_long = too_long_for_window(context, limits.windows)
    if too_long:
        return Extraction(context_id=context.id, answers=[], skips=[too_long])
    parsed, long_sentences = drop_long_sentences(parse(context), limits.max_sentence_tokens)
    cap = limits.answers_per_context
    relations = None
    if "relation" in limits.mix:
        relations = extract_relations(client(), context, parsed, lemmatize, max(1, cap // 3))
    paper = paper_answers(parsed, context)
    entities = entities_of_set(paper, parsed, context, limits.answers, limits.answer_budget)
    found = relations.answers if relations else []
    pool = target_pool(parsed, context, entities, found, limits.mix)
    plan = ContextPlan(
        id=context.id,
        pool=pool,
        sentence_spans=sentence_spans(parsed),
        dropped_triples=[reason for _, reason in relations.dropped] if relations else [],
    )
    return Extraction(
        context_id=context.id,
        answers=first_answers(pool, limits.mix, cap),
        plan=plan,
        long_sentences=long_sentences,
        relations=relations,
        skips=relations.skips(context.id) if relations else [],
    )


def by_kind(pool: Sequence[Answer]) -> dict[QuestionKind, list[Answer]]:
    grouped: dict[QuestionKind, list[Answer]] = {}
    for answer in pool:
        grouped.setdefault(answer.kind.question_kind, []).append(answer)
    return grouped


def first_answers(pool: Sequence[Answer], mix: Mix, count: int) -> list[Answer]:
    """``count`` answers split over the kinds by ``mix``; a kind with too few targets leaves
    its places to the kinds after it in the mix (then to any kind with targets left)."""
    grouped = by_kind(pool)
    wanted = allocate(mix, count)
    picked: list[Answer] = []
    short = 0
    for kind in mix:
        available = grouped.get(kind, [])
        take = min(len(available), wanted[kind] + short)
        short = wanted[kind] + short - take
        picked += available[:take]
    if short:
        chosen = {a.id for a in picked}
        picked += [a for a in pool if a.id not in chosen][:short]
    return picked


def too_long_for_window(context: Context, windows: Mapping[str, int | None]) -> Skip | None:
    """A skip for a context whose prompts would not fit a role's model window, else None.

    ``windows`` maps each role to its model's window in tokens (None: unknown, not checked).
    Such a context would otherwise fail every call as a 400, counted as LLM errors.
    """
    tokens = int(len(context.context) / WINDOW_CHARS_PER_TOKEN) + PROMPT_RESERVE_TOKENS
    for role, window in windows.items():
        if window is not None and tokens > window:
            return Skip(
                id=context.id,
                reason="context_too_long",
                detail=f"about {tokens} prompt tokens, over the {role} model's window of {window}; "
                "split the passage, or use a model with a larger window (context_window)",
            )
    return None
