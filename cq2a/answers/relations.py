"""Relation triples proposed by the LLM and the paper's filters over them (III-A2)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.errors import LLMCallFailed
from cq2a.adapters.llm.prompts import render_prompt, system_prompt
from cq2a.adapters.llm.structured import Malformed
from cq2a.answers.anchors import AnchoredTriple, anchor_triple, find_spans
from cq2a.language.lemmas import Lemmatizer
from cq2a.language.lexicon import mentions, normalise_space
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
    spans = find_spans(text, phrase)
    return spans[0] if spans else None


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


def span_is_nominal(parsed: ParsedContext, span: tuple[int, int]) -> bool:
    """III-A2 rule 2: the words of a span hold a noun, and are not a lone pronoun."""
    upos = [token.upos for _, token in tokens_in_span(parsed, *span)]
    return any(tag in NOMINAL_UPOS for tag in upos) and upos != ["PRON"]


def entity_is_nominal(entity: str, context: str, parsed: ParsedContext) -> bool:
    """III-A2 rule 2: an entity is a noun or noun phrase (its words hold a noun, not a pronoun)."""
    span = find_span(context, entity)
    return span is not None and span_is_nominal(parsed, span)


def anchored_or_rejected(
    triple: ProposedTriple, context: str, parsed: ParsedContext, lemmatize: Lemmatizer
) -> AnchoredTriple | str:
    """The triple as spans of the passage (``anchor_triple``) when it passes every III-A2
    filter, else why it is dropped."""
    if normalise_space(triple.subject) == normalise_space(triple.object):
        return "identical entities"
    if not entities_are_grounded(triple, context):
        return "entity missing from context or explanation"
    if not all(entity_is_nominal(e, context, parsed) for e in (triple.subject, triple.object)):
        return "entity is not a noun phrase"
    anchored = anchor_triple(
        triple.subject, triple.relation, triple.object, context, parsed, lemmatize
    )
    if isinstance(anchored, AnchoredTriple) and not span_is_nominal(parsed, anchored.object):
        return "entity is not a noun phrase"
    return anchored


def triple_rejection(
    triple: ProposedTriple, context: str, parsed: ParsedContext, lemmatize: Lemmatizer
) -> str | None:
    """Why a proposed triple is dropped, or None when it passes every III-A2 filter."""
    anchored = anchored_or_rejected(triple, context, parsed, lemmatize)
    return None if isinstance(anchored, AnchoredTriple) else anchored


#: Prepositions a relation may end on for "What did E1 do to E2?" to ask for it ("pulled out
#: of", "created a rift within", "gave their name to"); not "evolved into", "began in".
DO_TO_PREPOSITIONS = frozenset({"to", "of", "with", "within", "from", "against", "on", "over"})

#: What an active finite verb's action is asked with, by its tense.
DO_BY_TENSE = {"Past": "did", "Pres": "does"}


def _do(verb: Token) -> str | None:
    """ "did", "does" or "do" for a verb the passage writes in the active voice and a finite form
    ("raided", "pulls out of"); None for a participle, an infinitive or a passive."""
    if verb.feature("VerbForm") != "Fin" or verb.feature("Voice") == "Pass":
        return None
    do = DO_BY_TENSE.get(verb.feature("Tense") or "")
    if do == "does" and verb.feature("Person") != "3":
        return "do"
    return do


def _first_token(parsed: ParsedContext, span: tuple[int, int]) -> Token | None:
    tokens = tokens_in_span(parsed, *span)
    return tokens[0][1] if tokens else None


def _as_named(context: str, span: tuple[int, int], first: Token) -> str:
    """The entity's words for the middle of a question: a leading article lower-cased, and the
    passage's "the" before it kept ("the United States")."""
    text = context[span[0] : span[1]].strip().rstrip(".,;:")
    if first.upos == "DET":
        return text[:1].lower() + text[1:]
    if context[: span[0]].lower().endswith("the "):
        return f"the {text}"
    return text


def _agent(context: str, parsed: ParsedContext, span: tuple[int, int]) -> str | None:
    """The agent of a passive relation whose object is its "by" phrase, named as an entity ("by
    the treaty of Saint-Clair-sur-Epte": "the treaty of Saint-Clair-sur-Epte"), else None."""
    tokens = [token for _, token in tokens_in_span(parsed, *span)]
    if len(tokens) < 2 or tokens[0].text.lower() != "by":
        return None
    return _as_named(context, (tokens[1].start, span[1]), tokens[1])


def template_question(anchored: AnchoredTriple, context: str, parsed: ParsedContext) -> str | None:
    """The question "What did E1 do to E2?" for a triple whose relation the passage writes as an
    active finite verb with a nominal subject and object (English): "What did Rollo's
    contingents do to Normandy?" for [Rollo's contingents, raided and ultimately settled,
    Normandy]; for a past participle whose object is its agent, the agent asks ("What did the
    treaty of Saint-Clair-sur-Epte do to the Duchy of Normandy?" for [The Duchy of Normandy,
    established, by the treaty of Saint-Clair-sur-Epte]). None where the template does not
    read: a relation ending on a preposition "do to" cannot stand for ("evolved into",
    ``DO_TO_PREPOSITIONS``), a pronoun, a date or number in the object."""
    subject = _first_token(parsed, anchored.subject)
    obj = _first_token(parsed, anchored.object)
    if subject is None or obj is None or "PRON" in (subject.upos, obj.upos):
        return None
    if any(ch.isdigit() for ch in context[anchored.object[0] : anchored.object[1]]):
        return None  # "What did the 1973 oil crisis do to October 1973?" does not read
    named = _as_named(context, anchored.subject, subject)
    passive = anchored.verb.feature("VerbForm") == "Part" and (
        anchored.verb.feature("Tense") == "Past"
    )
    if obj.upos == "ADP":  # a passive's "by" goes with its object (``agent_to_object``)
        agent = _agent(context, parsed, anchored.object)
        return f"What did {agent} do to {named}?" if agent and passive else None
    do = _do(anchored.verb)
    words = [token for _, token in tokens_in_span(parsed, *anchored.relation)]
    if do is None or not words:
        return None
    if words[-1].upos == "ADP" and words[-1].text.lower() not in DO_TO_PREPOSITIONS:
        return None
    return f"What {do} {named} do to {_as_named(context, anchored.object, obj)}?"


def relation_answer(
    anchored: AnchoredTriple,
    triple: ProposedTriple,
    answer_id: str,
    context_id: str,
    context: str,
    template: str | None = None,
) -> Answer:
    """A relation answer: the relation's span as the passage writes it, read in the sentence
    that holds both entities; the triple as the passage writes its three parts."""
    sentence, verb = anchored.sentence, anchored.verb
    subject, relation, obj = (
        context[start:end] for start, end in (anchored.subject, anchored.relation, anchored.object)
    )
    return Answer(
        id=answer_id,
        context_id=context_id,
        kind=AnswerKind.RELATION,
        text=relation,
        sentence=sentence.text,
        sentence_index=sentence.index,
        start=anchored.relation[0],
        end=anchored.relation[1],
        lemma=verb.lemma,
        upos=verb.upos,
        triple=Triple(
            subject=subject,
            relation=relation,
            object=obj,
            proposed=None if relation == triple.relation.strip() else triple.relation,
            template=template,
        ),
        explanation=triple.explanation,
        evidence=[Evidence.of_sentence(sentence)],
    )


def relation_answers(
    proposed: list[ProposedTriple],
    context_id: str,
    context: str,
    parsed: ParsedContext,
    lemmatize: Lemmatizer,
    language: str = "en",
) -> tuple[list[Answer], list[tuple[ProposedTriple, str]]]:
    """Filtered triples as relation answers, and the dropped ones with their reasons. Two
    triples read as the same spans are one. English triples carry their template question."""
    answers: list[Answer] = []
    dropped: list[tuple[ProposedTriple, str]] = []
    seen: set[tuple[tuple[int, int], ...]] = set()
    for triple in proposed:
        anchored = anchored_or_rejected(triple, context, parsed, lemmatize)
        if isinstance(anchored, str):
            dropped.append((triple, anchored))
            continue
        key = (anchored.subject, anchored.relation, anchored.object)
        if key in seen:
            dropped.append((triple, "duplicate triple"))
            continue
        seen.add(key)
        answer_id = f"{context_id}:r{len(answers)}"
        template = template_question(anchored, context, parsed) if language == "en" else None
        answers.append(relation_answer(anchored, triple, answer_id, context_id, context, template))
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


#: Triples the LLM may propose per relation kept: room for the filters (III-A2) to drop some.
PROPOSALS_PER_RELATION = 2


def extraction_prompt(context: str, limit: int) -> str:
    """The extraction prompt's user message for ``limit`` relations kept. It asks for as many
    triples as the filters may need (``PROPOSALS_PER_RELATION`` each): "at most 1" left a context
    with none as soon as its one triple was dropped."""
    return render_prompt(
        "relation_extraction.user", context=context, limit=PROPOSALS_PER_RELATION * limit
    )


def extract_relations(
    client: ChatClient, context: Context, parsed: ParsedContext, lemmatize: Lemmatizer, limit: int
) -> RelationExtraction:
    """III-A2: triples proposed by the LLM, kept only when they pass the filters."""
    proposals = PROPOSALS_PER_RELATION * limit
    user = extraction_prompt(context.context, limit)
    try:
        outputs = client.structured(
            system_prompt("relation_extraction.system", context.language),
            user,
            ProposedTriples,
            max_items=proposals,
        )
    except LLMCallFailed as error:
        return RelationExtraction(error=str(error))
    proposed = outputs[0]
    if isinstance(proposed, Malformed):
        return RelationExtraction(malformed=proposed.error)
    answers, dropped = relation_answers(
        proposed.triples, context.id, context.context, parsed, lemmatize, context.language or "en"
    )
    return RelationExtraction(answers=answers[:limit], dropped=dropped)
