"""Re-asking (III-C2 step 1): the LLM answers a generated question several times in context,
and the majority answer is kept; for a SUT that gets the question alone, also over the passages
a search of the whole corpus finds for it. ``reask_round`` is the graph's step: every candidate
waiting for it, re-asked in parallel."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cq2a.adapters.fanout import parallel_map
from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.errors import LLMCallFailed
from cq2a.adapters.llm.prompts import render_prompt, system_prompt
from cq2a.consistency.voting import majority_vote
from cq2a.language.answers import (
    align_to_context,
    canonical_abstention,
    normalize_answer,
    strip_restated_question,
    without_entities,
)
from cq2a.language.lemmas import Lemmatizer
from cq2a.language.lexicon import mentions
from cq2a.language.retrieval import Hit
from cq2a.models.candidates import at_step, with_attempt
from cq2a.models.records import UNANSWERABLE, Answer, AnswerKind, Candidate, Context

#: The passages of the run's contexts a question finds, best first (``PassageIndex.top`` with
#: the run's ``corpus_top_k``).
CorpusSearch = Callable[[str], Sequence[Hit]]


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


def ask_over(
    client: ChatClient,
    candidate: Candidate,
    passage: str,
    votes: int,
    seed_offset: int,
    lemmatize: Lemmatizer,
    language: str | None = None,
) -> tuple[list[str], list[str]]:
    """The re-asker's ``votes`` answers to the candidate's question over ``passage`` (Table
    II), raw and each as the span of the passage it stands for; ``language``: the passage's."""
    question = candidate.current.question
    user = render_prompt("reask.user", context=passage, question=question)
    system = system_prompt(reask_prompt(candidate.answer), language)
    texts = client.text(system, user, n=votes, seed_offset=seed_offset)
    # Each vote as the span of the context it stands for, so the votes and the gold compare as
    # spans (III-C2), whether the re-asker copied a span or wrote a sentence around it; a
    # sentence that restates the question is cut to the words it adds (compared as lemmas); a
    # relation's question names both its entities, which its answer then goes without, and its
    # answer is the relation whatever the verb's form.
    triple = candidate.answer.triple
    entities = [triple.subject, triple.object] if triple else []
    spans = [
        canonical_abstention(
            without_entities(
                align_to_context(
                    strip_restated_question(normalize_answer(text), question, lemmatize), passage
                ),
                entities,
            )
        )
        for text in texts
    ]
    if candidate.answer.kind is AnswerKind.UNANSWERABLE:
        # Asked whether the passage answers at all, a vote that no words of the passage stand
        # for is the re-asker answering from elsewhere ("In what year did Emerson die?" ->
        # 1882, 1893, 1927): the passage does not answer it.
        spans = [
            span if span == UNANSWERABLE or mentions(passage, span) else UNANSWERABLE
            for span in spans
        ]
    if triple is not None:
        # A relation is a verb of the passage ("trained"); a vote with its lemmas ("train",
        # "trains") names the same relation, in the passage's words.
        relation = [lemma for lemma, _ in lemmatize(candidate.answer.text)]
        spans = [
            candidate.answer.text
            if span != UNANSWERABLE and [lemma for lemma, _ in lemmatize(span)] == relation
            else span
            for span in spans
        ]
    return texts, spans


def reask(
    client: ChatClient,
    context: Context,
    candidate: Candidate,
    votes: int,
    seed_offset: int,
    lemmatize: Lemmatizer,
    search: CorpusSearch | None = None,
) -> Candidate:
    """Ask the LLM the question ``votes`` times (Table II) and keep the majority answer; the
    candidate then goes on to be compared with its gold answer. Given ``search`` (a SUT that
    gets the question alone), the question is also re-asked over the passages the corpus
    search finds for it (``reask_over_corpus``).

    A failed call leaves the candidate waiting to be re-asked (next round, or a resume), with
    the error recorded."""
    try:
        texts, answers = ask_over(
            client, candidate, context.context, votes, seed_offset, lemmatize, context.language
        )
        winner, count = majority_vote(answers)
        voted = with_attempt(
            candidate,
            raw_votes=texts,
            votes=answers,
            majority_answer=winner,
            majority_count=count,
        )
        if search is not None:
            voted = reask_over_corpus(client, context, voted, votes, seed_offset, lemmatize, search)
    except LLMCallFailed as error:
        return candidate.model_copy(update={"error": str(error)})
    return voted.model_copy(update={"error": None, "next_step": "compare"})


def reask_over_corpus(
    client: ChatClient,
    context: Context,
    candidate: Candidate,
    votes: int,
    seed_offset: int,
    lemmatize: Lemmatizer,
    search: CorpusSearch,
) -> Candidate:
    """III-C2 over the corpus, for a SUT that gets the question alone: the question is re-asked
    over the passages ``search`` finds for it in the run's contexts, joined as one context, as
    a retrieval system would read them; the majority answer and the passages are recorded, and
    compared with the gold answer as the own-passage majority is (``compare_with_gold``).

    The question's own passage is always among them (after the hits when the search missed
    it): the re-ask asks whether another passage answers otherwise, not whether the search
    finds the evidence, which is what a retrieval miss of the SUT under test must show.
    When the search finds only the question's own passage (or nothing), no other passage could
    answer it otherwise, and nothing is asked."""
    hits = search(candidate.current.question)
    if all(hit.id == context.id for hit in hits):
        return candidate
    read = [(hit.id, hit.text) for hit in hits]
    if context.id not in {passage_id for passage_id, _ in read}:
        read.append((context.id, context.context))
    passage = "\n\n".join(text for _, text in read)
    _, answers = ask_over(
        client, candidate, passage, votes, seed_offset, lemmatize, context.language
    )
    winner, count = majority_vote(answers)
    return with_attempt(
        candidate,
        corpus_passages=[passage_id for passage_id, _ in read],
        corpus_votes=answers,
        corpus_answer=winner,
        corpus_count=count,
    )


def reask_round(
    client: ChatClient,
    context: Context,
    candidates: Sequence[Candidate],
    votes: int,
    concurrency: int,
    lemmatize: Lemmatizer,
    search: CorpusSearch | None = None,
) -> list[Candidate]:
    """Re-ask every candidate waiting for it, up to ``concurrency`` at once; returns them.
    ``search``: re-ask each over the corpus too (``reask_over_corpus``)."""

    def ask(candidate: Candidate) -> Candidate:
        seed = len(candidate.attempts)
        return reask(client, context, candidate, votes, seed, lemmatize, search)

    return parallel_map(ask, at_step(candidates, "reask"), concurrency)
