"""A relation triple as spans of its passage (III-A2): the sentence that holds its subject,
relation and object, and the relation as that sentence words it ("gave their name to", where
the LLM wrote "given"), so a question about it has a span of the passage for its answer."""

from __future__ import annotations

import re
from dataclasses import dataclass

from cq2a.language.lemmas import Lemmatizer, lemma_words
from cq2a.language.lexicon import NON_LEXICAL_VERBS, words
from cq2a.models.records import ParsedContext, Sentence, Token

#: A span of the context, as character offsets.
Span = tuple[int, int]
#: Words between a relation's verb and its object that the relation may take in ("their name
#: to"); a longer run is a clause of its own, and the relation stays the verb.
MAX_RELATION_GAP = 5
#: Why a triple has no place in its passage.
NOT_A_VERB = "relation is not a lexical verb of the context"
NO_SHARED_SENTENCE = "entities are not in one sentence"
NOT_IN_SENTENCE = "relation is not in the sentence of its entities"


@dataclass(frozen=True)
class AnchoredTriple:
    """Where a triple is read: its sentence, the spans of its parts, and the relation's verb."""

    sentence: Sentence
    subject: Span
    relation: Span
    object: Span
    verb: Token


def find_spans(text: str, phrase: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Every case-insensitive, whole-word occurrence of ``phrase`` in ``text[start:end]``, any
    run of spaces matching any other."""
    pattern = r"\s+".join(re.escape(part) for part in phrase.split())
    if not pattern:
        return []
    found = re.compile(rf"(?<!\w){pattern}(?!\w)", flags=re.IGNORECASE)
    return [m.span() for m in found.finditer(text, start, len(text) if end is None else end)]


def overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def tokens_within(sentence: Sentence, span: Span) -> list[Token]:
    return [t for t in sentence.tokens if t.start >= span[0] and t.end <= span[1]]


def is_lexical_verb(token: Token) -> bool:
    return token.upos == "VERB" and token.lemma.lower() not in NON_LEXICAL_VERBS


def descends_from(sentence: Sentence, token: Token, ancestor: Token) -> bool:
    """Whether ``ancestor`` is on the path from ``token`` to the root of its sentence."""
    by_index = {t.index: t for t in sentence.tokens}
    current: Token | None = token
    for _ in sentence.tokens:
        if current is None or current.head == 0:
            return False
        if current.head == ancestor.index:
            return True
        current = by_index.get(current.head)
    return False


def noun_phrase_of(sentence: Sentence, span: Span) -> Span:
    """An entity span with one head. "name to Normandy" has two ("name", the verb's object,
    and "Normandy"): the phrase is its last head's words, case markers aside ("Normandy"); what
    comes before belongs to the relation."""
    tokens = tokens_within(sentence, span)
    inside = {t.index for t in tokens}
    heads = [t for t in tokens if t.head not in inside]
    if len(heads) < 2:
        return span
    last = heads[-1]
    phrase = [t for t in tokens if t is last or descends_from(sentence, t, last)]
    while len(phrase) > 1 and phrase[0].upos == "ADP":
        phrase = phrase[1:]
    return phrase[0].start, span[1]


def relation_words(relation: str, lemmatize: Lemmatizer) -> set[str]:
    """The relation's words and lemmas, linking and auxiliary verbs left out ("given": given,
    give)."""
    return (set(words(relation)) | set(lemma_words(relation, lemmatize))) - NON_LEXICAL_VERBS


def matches_relation(token: Token, wanted: set[str]) -> bool:
    return is_lexical_verb(token) and (
        token.text.lower() in wanted or token.lemma.lower() in wanted
    )


def relation_cores(
    sentence: Sentence, relation: str, wanted: set[str], taken: list[Span], context: str
) -> list[tuple[Span, Token]]:
    """Where the relation may be read in the sentence, with its verb: as written (a run that
    holds a lexical verb), then each lexical verb of the sentence that is one of its words or
    lemmas ("gave" for "given"); none overlaps an entity."""
    cores = []
    for span in find_spans(context, relation, sentence.start, sentence.end):
        verbs = [t for t in tokens_within(sentence, span) if is_lexical_verb(t)]
        if verbs and not any(overlaps(span, other) for other in taken):
            verb = next((t for t in verbs if matches_relation(t, wanted)), verbs[0])
            cores.append((span, verb))
    for token in sentence.tokens:
        span = (token.start, token.end)
        if matches_relation(token, wanted) and not any(overlaps(span, o) for o in taken):
            cores.append((span, token))
    return cores


def reaches_object(sentence: Sentence, core: Span, verb: Token, obj: Span) -> bool:
    """Whether the words between a relation and its object are the verb's own (its object,
    particles, prepositions: "gave _their name to_ Normandy"), few, unpunctuated and with no
    conjunction: in "famed for their martial spirit _and_ eventually for their Christian piety"
    the words up to the second conjunct are another object, not the relation."""
    if core[1] > obj[0]:
        return False
    gap = [t for t in sentence.tokens if t.start >= core[1] and t.end <= obj[0]]
    return len(gap) <= MAX_RELATION_GAP and all(
        t.upos not in ("PUNCT", "CCONJ") and descends_from(sentence, t, verb) for t in gap
    )


def relation_and_object(
    sentence: Sentence, core: Span, verb: Token, obj: Span
) -> tuple[Span, Span]:
    """The relation as the passage writes it: its core, with the words up to its object when
    they are the verb's own (``reaches_object``); the object's own determiners there ("merge
    with _the_ Carolingian-based cultures") go to the object."""
    if not reaches_object(sentence, core, verb, obj):
        return core, obj
    gap = [t for t in sentence.tokens if t.start >= core[1] and t.end <= obj[0]]
    # tokens the object's span touches: a word the tokenizer glued to what follows
    # ("ministers.[citation") is still the object's head
    inside = {t.index for t in sentence.tokens if overlaps((t.start, t.end), obj)}
    while gap and gap[-1].head in inside and gap[-1].upos != "ADP":
        inside.add(gap[-1].index)
        obj = gap.pop().start, obj[1]
    return (core[0], gap[-1].end if gap else core[1]), obj


def agent_to_object(
    sentence: Sentence, verb: Token, relation: Span, obj: Span
) -> tuple[Span, Span]:
    """A passive relation's closing "by" goes to its object, the agent: the relation is
    "Established originally", not "Established originally by", which no answer says."""
    words = tokens_within(sentence, relation)
    last = words[-1] if len(words) > 1 else None
    if last is None or last.text.lower() != "by" or verb.feature("VerbForm") != "Part":
        return relation, obj
    if last.end > obj[0]:
        return relation, obj
    return (relation[0], words[-2].end), (last.start, obj[1])


def anchor_in_sentence(
    sentence: Sentence,
    context: str,
    subject: str,
    relation: str,
    obj: str,
    wanted: set[str],
) -> AnchoredTriple | str:
    """The triple read in one sentence, or why it cannot be."""
    subjects = find_spans(context, subject, sentence.start, sentence.end)
    objects = [
        noun_phrase_of(sentence, span)
        for span in find_spans(context, obj, sentence.start, sentence.end)
    ]
    pairs = [(s, o) for s in subjects for o in objects if not overlaps(s, o)]
    if not pairs:
        return NO_SHARED_SENTENCE
    for subject_span, object_span in pairs:
        cores = relation_cores(sentence, relation, wanted, [subject_span, object_span], context)
        # a core that reaches its object is the relation the sentence states about the two
        cores.sort(key=lambda found: not reaches_object(sentence, found[0], found[1], object_span))
        if cores:
            core, verb = cores[0]
            relation_at, object_at = relation_and_object(sentence, core, verb, object_span)
            relation_at, object_at = agent_to_object(sentence, verb, relation_at, object_at)
            return AnchoredTriple(sentence, subject_span, relation_at, object_at, verb)
    return NOT_IN_SENTENCE


def anchor_triple(
    subject: str,
    relation: str,
    obj: str,
    context: str,
    parsed: ParsedContext,
    lemmatize: Lemmatizer,
) -> AnchoredTriple | str:
    """III-A2 rule 2 read on the passage: the first sentence that holds the subject, the
    object and the relation (as written, or a lexical verb of its words or lemmas), with their
    spans; else why none does."""
    wanted = relation_words(relation, lemmatize)
    reasons = []
    for sentence in parsed.sentences:
        anchored = anchor_in_sentence(sentence, context, subject, relation, obj, wanted)
        if isinstance(anchored, AnchoredTriple):
            return anchored
        reasons.append(anchored)
    if not any(
        relation_cores(sentence, relation, wanted, [], context) for sentence in parsed.sentences
    ):
        return NOT_A_VERB
    return NOT_IN_SENTENCE if NOT_IN_SENTENCE in reasons else NO_SHARED_SENTENCE
