"""Re-asking (III-C2 step 1): the LLM answers a generated question several times in context,
and the majority answer is kept. ``reask_round`` is the graph's step: every candidate waiting
for it, re-asked in parallel."""

from __future__ import annotations

from collections.abc import Sequence

from cq2a.adapters.fanout import parallel_map
from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.errors import LLMCallFailed
from cq2a.adapters.llm.prompts import load_prompt, render_prompt
from cq2a.consistency.voting import majority_vote
from cq2a.language.answers import (
    align_to_context,
    canonical_abstention,
    normalize_answer,
    strip_restated_question,
)
from cq2a.language.lemmas import Lemmatizer
from cq2a.models.candidates import at_step, with_attempt
from cq2a.models.records import Answer, AnswerKind, Candidate, Context


def reask_prompt(answer: Answer) -> str:
    """Table II's re-asking prompt; for an unanswerable target, the same with the option to say
    the context does not answer (the re-asker must be able to abstain for its votes to verify
    one); for a yes/no target, one that says when the answer is no (a statement with another
    name, place or number than the context's), which the span prompt's "answer yes or no" line
    left the model to guess: it answered yes to most of them."""
    if answer.kind is AnswerKind.UNANSWERABLE:
        return "reask_abstain.system"
    if answer.kind is AnswerKind.YES_NO:
        return "reask_yesno.system"
    return "reask.system"


def reask(
    client: ChatClient,
    context: Context,
    candidate: Candidate,
    votes: int,
    seed_offset: int,
    lemmatize: Lemmatizer,
) -> Candidate:
    """Ask the LLM the question ``votes`` times (Table II) and keep the majority answer; the
    candidate then goes on to be compared with its gold answer.

    A failed call leaves the candidate waiting to be re-asked (next round, or a resume), with
    the error recorded."""
    user = render_prompt("reask.user", context=context.context, question=candidate.current.question)
    try:
        texts = client.text(
            load_prompt(reask_prompt(candidate.answer)), user, n=votes, seed_offset=seed_offset
        )
    except LLMCallFailed as error:
        return candidate.model_copy(update={"error": str(error)})
    # Each vote as the span of the context it stands for, so the votes and the gold compare as
    # spans (III-C2), whether the re-asker copied a span or wrote a sentence around it; a
    # sentence that restates the question is cut to the words it adds (compared as lemmas).
    question = candidate.current.question
    answers = [
        canonical_abstention(
            align_to_context(
                strip_restated_question(normalize_answer(text), question, lemmatize),
                context.context,
            )
        )
        for text in texts
    ]
    winner, count = majority_vote(answers)
    voted = with_attempt(
        candidate,
        raw_votes=texts,
        votes=answers,
        majority_answer=winner,
        majority_count=count,
    )
    return voted.model_copy(update={"error": None, "next_step": "compare"})


def reask_round(
    client: ChatClient,
    context: Context,
    candidates: Sequence[Candidate],
    votes: int,
    concurrency: int,
    lemmatize: Lemmatizer,
) -> list[Candidate]:
    """Re-ask every candidate waiting for it, up to ``concurrency`` at once; returns them."""

    def ask(candidate: Candidate) -> Candidate:
        return reask(client, context, candidate, votes, len(candidate.attempts), lemmatize)

    return parallel_map(ask, at_step(candidates, "reask"), concurrency)
