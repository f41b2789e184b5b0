"""Relation triples proposed by the LLM and the paper's filters over them (III-A2)."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.errors import LLMCallFailed
from cq2a.adapters.llm.prompts import load_prompt, render_prompt
from cq2a.adapters.llm.structured import Malformed
from cq2a.language.lemmas import Lemmatizer, lemma_words
from cq2a.language.lexicon import NON_LEXICAL_VERBS, mentions, normalise_space, words
from cq2a.models.records import (
    Answer,
    AnswerKind,
    Context,
    Evidence,
    ParsedContext,
    Sentence,
    Skip,
    Token,
    Triple,
)

NOMINAL_UPOS = frozenset({"NOUN", "PROPN", "NUM"})


class ProposedTriple(BaseModel):
    subject: str = Field(description="Entity 1, a noun or noun phrase copied from the text")
    relation: str = Field(description="A content verb relating the two entities")
    object: str = Field(description="Entity 2, a noun or noun phrase copied from the text")
    explanation: str = Field(description="Why the text supports this triple")


class ProposedTriples(BaseModel):
    """The structured output of the relation extraction prompt (Table I, first row)."""

    triples: list[ProposedTriple] = Field(default_factory=list)


def find_span(text: str, phrase: str) -> tuple[int, int] | None:
    """Character span of the first case-insensitive, whole-word occurrence of ``phrase``."""
    pattern = r"\s+".join(re.escape(part) for part in phrase.split())
    if not pattern:
        return None
    match = re.search(rf"(?<!\w){pattern}(?!\w)", text, flags=re.IGNORECASE)
    return None if match is None else match.span()


def tokens_in_span(parsed: ParsedContext, start: int, end: int) -> list[tuple[Sentence, Token]]:
    return [
        (sentence, token)
        for sentence in parsed.sentences
        for token in sentence.tokens
        if token.start >= start and token.end <= end
    ]


def entities_are_grounded(triple: ProposedTriple, context: str) -> bool:
    """III-A2 rule 1: both entities appear in the context and in the LLM's explanation."""
    return all(
        find_span(context, entity) is not None and mentions(triple.explanation, entity)
        for entity in (triple.subject, triple.object)
    )


def entity_is_nominal(entity: str, context: str, parsed: ParsedContext) -> bool:
    """III-A2 rule 2: an entity is a noun or noun phrase (its words hold a noun, not a pronoun)."""
    span = find_span(context, entity)
    if span is None:
        return False
    upos = [token.upos for _, token in tokens_in_span(parsed, *span)]
    return any(tag in NOMINAL_UPOS for tag in upos) and upos != ["PRON"]


def relation_verb(
    relation: str, parsed: ParsedContext, lemmatize: Lemmatizer
) -> tuple[Sentence, Token] | None:
    """III-A2 rule 2: the relation is a lexical verb of the context; returns where it occurs.

    A context verb matches when its form or its lemma is a word of the relation or one of the
    relation's lemmas (the parser's lemmatizer, as the III-C1 checks use it): "conquer" and
    "conquered" both find "conquered". The relation is lemmatized out of any sentence, so its
    own forms count too."""
    relation_words = (set(words(relation)) | set(lemma_words(relation, lemmatize))) - (
        NON_LEXICAL_VERBS
    )
    for sentence in parsed.sentences:
        for token in sentence.tokens:
            lemma = token.lemma.lower()
            if token.upos != "VERB" or lemma in NON_LEXICAL_VERBS:
                continue
            if token.text.lower() in relation_words or lemma in relation_words:
                return sentence, token
    return None


def triple_rejection(
    triple: ProposedTriple, context: str, parsed: ParsedContext, lemmatize: Lemmatizer
) -> str | None:
    """Why a proposed triple is dropped, or None when it passes every III-A2 filter."""
    if normalise_space(triple.subject) == normalise_space(triple.object):
        return "identical entities"
    if not entities_are_grounded(triple, context):
        return "entity missing from context or explanation"
    if not all(entity_is_nominal(e, context, parsed) for e in (triple.subject, triple.object)):
        return "entity is not a noun phrase"
    if relation_verb(triple.relation, parsed, lemmatize) is None:
        return "relation is not a lexical verb of the context"
    return None


def relation_answers(
    proposed: list[ProposedTriple],
    context_id: str,
    context: str,
    parsed: ParsedContext,
    lemmatize: Lemmatizer,
) -> tuple[list[Answer], list[tuple[ProposedTriple, str]]]:
    """Filtered triples as relation answers, and the dropped ones with their reasons."""
    answers: list[Answer] = []
    dropped: list[tuple[ProposedTriple, str]] = []
    seen: set[str] = set()
    for triple in proposed:
        key = "|".join(normalise_space(p) for p in (triple.subject, triple.relation, triple.object))
        reason = (
            "duplicate triple"
            if key in seen
            else triple_rejection(triple, context, parsed, lemmatize)
        )
        seen.add(key)
        if reason is not None:
            dropped.append((triple, reason))
            continue
        found = relation_verb(triple.relation, parsed, lemmatize)
        assert found is not None  # triple_rejection checked it
        sentence, verb = found
        answers.append(
            Answer(
                id=f"{context_id}:r{len(answers)}",
                context_id=context_id,
                kind=AnswerKind.RELATION,
                text=triple.relation.strip(),
                sentence=sentence.text,
                sentence_index=sentence.index,
                start=verb.start,
                end=verb.end,
                lemma=verb.lemma,
                upos=verb.upos,
                triple=Triple(
                    subject=triple.subject, relation=triple.relation, object=triple.object
                ),
                explanation=triple.explanation,
                evidence=[Evidence.of_sentence(sentence)],
            )
        )
    return answers, dropped


class RelationExtraction(BaseModel):
    """What relation extraction made of one context: its answers, and what it dropped or why
    it has none."""

    answers: list[Answer] = Field(default_factory=list)
    dropped: list[tuple[ProposedTriple, str]] = Field(
        default_factory=list, description="Proposed triples a filter dropped, with its reason."
    )
    error: str | None = Field(None, description="Why the LLM call failed.")
    malformed: str | None = Field(None, description="Why the LLM's output did not parse.")

    def skips(self, context_id: str) -> list[Skip]:
        """A failed call is recorded as a skip with reason ``llm_error``, so the run counts it
        and ``--retry-errors`` asks again."""
        if self.error is None:
            return []
        return [Skip(id=f"{context_id}:relations", reason="llm_error", detail=self.error)]


def extract_relations(
    client: ChatClient, context: Context, parsed: ParsedContext, lemmatize: Lemmatizer, limit: int
) -> RelationExtraction:
    """III-A2: triples proposed by the LLM, kept only when they pass the filters."""
    user = render_prompt("relation_extraction.user", context=context.context, limit=limit)
    try:
        outputs = client.structured(
            load_prompt("relation_extraction.system"), user, ProposedTriples
        )
    except LLMCallFailed as error:
        return RelationExtraction(error=str(error))
    proposed = outputs[0]
    if isinstance(proposed, Malformed):
        return RelationExtraction(malformed=proposed.error)
    answers, dropped = relation_answers(
        proposed.triples, context.id, context.context, parsed, lemmatize
    )
    return RelationExtraction(answers=answers[:limit], dropped=dropped)
