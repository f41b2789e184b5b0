"""Targets for the question kinds beyond the paper: yes/no, unanswerable and multi-sentence.

The paper's targets are spans (III-A). Users of QA software also need questions answered yes or
no (BoolQ), questions the context does not answer and the system must refuse (SQuAD 2.0), and
questions whose answer takes two sentences. Each target here is an ``Answer`` of its own kind,
anchored to the sentence(s) its question is about, with those sentences as its evidence:

* ``yes-no``: a statement sentence, with the gold answer "yes" or "no" (alternating, so a
  context's yes/no questions are balanced; "no" asks about a plausible but contradicted
  statement);
* ``unanswerable``: a statement sentence whose topic the question is about, with the gold
  answer ``UNANSWERABLE``;
* ``multi-sentence``: a span of one sentence, with a second sentence that shares a word with it
  (or follows it and refers back with a pronoun); the question names something by a fact of
  the second sentence.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

from cq2a.language.answers import answer_tokens
from cq2a.language.lexicon import CONTENT_UPOS, NOUN_UPOS
from cq2a.language.trees import subtree
from cq2a.models.records import (
    UNANSWERABLE,
    Answer,
    AnswerKind,
    Context,
    Evidence,
    ParsedContext,
    Sentence,
    Token,
)

#: A sentence a yes/no or unanswerable question can be about: a statement of some length.
MIN_STATEMENT_TOKENS = 6
#: Determiners of a noun that refers to one thing already named (English).
DEFINITE_DETERMINERS = frozenset({"the", "this", "these", "that", "those"})
#: Subject pronouns that refer back to the sentence before ("They were descended from ...").
SUBJECT_PRONOUNS = frozenset({"he", "she", "they"})
#: Answer kinds a multi-sentence question can ask for (spans that name something).
BRIDGE_ANSWER_KINDS = frozenset({AnswerKind.NAMED_ENTITY, AnswerKind.NUMBER, AnswerKind.NOUN_CHUNK})
#: Dependents that belong to a pivot's name: "King Charles III", "Norse raiders".
NAME_PARTS = frozenset({"compound", "flat", "flat:name", "amod", "nummod"})
#: Relations of a word that only modifies a noun: an answer of such words alone is no thing.
MODIFIER_DEPRELS = frozenset({"amod", "compound"})
#: Dependents of a sentence's root that a description of its subject leaves out: clauses,
#: conjuncts, punctuation and discourse words.
LOOSE_DEPRELS = frozenset(
    "punct advcl conj cc parataxis mark discourse vocative dep ccomp csubj nsubj nsubj:pass "
    "expl obl:tmod appos".split()
)
OBJECT_DEPRELS = frozenset({"obj", "iobj", "xcomp"})
#: Words a description's predicate keeps before it stops at a comma.
MIN_PREDICATE_WORDS = 3
#: Words past which a description's predicate also stops at a comma inside one of its phrases.
MAX_PREDICATE_WORDS = 12
CLAUSE_BREAKS = frozenset({",", ";", ":", "\u2013", "\u2014"})
#: The noun (and relative pronoun) a description names a pivot by, from its entity label.
KIND_NOUNS = {
    "PERSON": ("person", "who"),
    "NORP": ("people", "who"),
    "ORG": ("organization", "that"),
    "GPE": ("place", "that"),
    "LOC": ("place", "that"),
    "FAC": ("building", "that"),
    "EVENT": ("event", "that"),
    "LAW": ("law", "that"),
    "WORK_OF_ART": ("work", "that"),
    "LANGUAGE": ("language", "that"),
    "PRODUCT": ("product", "that"),
}


def is_statement(sentence: Sentence) -> bool:
    """A declarative sentence with a verb and a few content words, not a heading or a
    question."""
    words = [t for t in sentence.tokens if t.upos != "PUNCT"]
    return (
        len(words) >= MIN_STATEMENT_TOKENS
        and not sentence.text.rstrip().endswith("?")
        and any(t.upos in {"VERB", "AUX"} for t in words)
        and sum(t.upos in CONTENT_UPOS for t in words) >= 3
    )


def content_lemmas(sentence: Sentence, upos: frozenset[str] = CONTENT_UPOS) -> set[str]:
    return {t.lemma.lower() for t in sentence.tokens if t.upos in upos}


def _sentence_answer(
    context: Context, sentence: Sentence, kind: AnswerKind, text: str, number: int, prefix: str
) -> Answer:
    return Answer(
        id=f"{context.id}:{prefix}{number}",
        context_id=context.id,
        kind=kind,
        text=text,
        sentence=sentence.text,
        sentence_index=sentence.index,
        start=sentence.start,
        end=sentence.end,
        lemma=" ".join(t.lemma for t in sentence.tokens if t.upos != "PUNCT"),
        evidence=[Evidence.of_sentence(sentence)],
    )


def first_label(context_id: str) -> str:
    """Whether a context's yes/no targets start with "yes" or "no": alternating within a
    context, and across contexts by a stable hash of the id, so a run is balanced."""
    digest = hashlib.sha256(context_id.encode()).digest()
    return "yes" if digest[0] % 2 == 0 else "no"


def yes_no_targets(parsed: ParsedContext, context: Context) -> list[Answer]:
    """One yes/no target per statement sentence, "yes" and "no" in turn."""
    labels = ("yes", "no") if first_label(context.id) == "yes" else ("no", "yes")
    statements = [s for s in parsed.sentences if is_statement(s)]
    return [
        _sentence_answer(context, s, AnswerKind.YES_NO, labels[n % 2], n, "y")
        for n, s in enumerate(statements)
    ]


def unanswerable_targets(parsed: ParsedContext, context: Context) -> list[Answer]:
    """One unanswerable target per statement sentence: its topic, with no answer."""
    statements = [s for s in parsed.sentences if is_statement(s)]
    return [
        _sentence_answer(context, s, AnswerKind.UNANSWERABLE, UNANSWERABLE, n, "u")
        for n, s in enumerate(statements)
    ]


class Bridge(NamedTuple):
    """Two sentences a question can join: ``first`` holds the answer, and ``second`` is about
    ``pivot`` (a name or noun of ``first``, as token indices of ``first``), so a question can
    name the pivot by ``description``, what ``second`` says of it, instead of by its name."""

    first: Sentence
    second: Sentence
    pivot: tuple[int, int]
    description: str


def _pivot_span(sentence: Sentence, token: Token) -> tuple[int, int]:
    """The name a pivot token stands in: its named entity, or the token with the compounds,
    flat names and modifiers next to it ("King Charles III", "Norse raiders")."""
    for entity in sentence.entities:
        if entity.start <= token.index <= entity.end:
            return entity.start, entity.end
    parts = {token.index} | {
        t.index for t in sentence.tokens if t.head == token.index and t.deprel in NAME_PARTS
    }
    start = end = token.index
    while start - 1 in parts:
        start -= 1
    while end + 1 in parts:
        end += 1
    return start, end


def _subject(sentence: Sentence) -> Token | None:
    roots = {t.index for t in sentence.tokens if t.head == 0}
    return next(
        (t for t in sentence.tokens if t.head in roots and t.deprel.startswith("nsubj")), None
    )


def _predicate(sentence: Sentence, subject: Token) -> str:
    """What a sentence says of its subject: the root with its auxiliaries, objects and
    complements (its first oblique phrase when it has no object), without its clauses, its
    conjuncts or what precedes the subject ("were descended from Norse raiders")."""
    root = sentence.token(subject.head)
    dependents = [
        t for t in sentence.tokens
        if t.head == root.index and t.index > subject.index and t.deprel not in LOOSE_DEPRELS
    ]  # fmt: skip
    if any(t.deprel in OBJECT_DEPRELS for t in dependents):
        dependents = [t for t in dependents if not t.deprel.startswith("obl")]
    else:
        obliques = [t for t in dependents if t.deprel.startswith("obl")]
        dependents = [t for t in dependents if t not in obliques[1:]]
    words = {root.index}.union(*(subtree(sentence, t) for t in dependents))
    kept, depth = [], 0
    for token in sentence.tokens:  # without what it says in parentheses
        depth += token.text == "("
        if token.index in words and not depth:
            kept.append(token)
        depth -= token.text == ")" and depth > 0
    long = len(kept) > MAX_PREDICATE_WORDS
    for cut, token in enumerate(kept):  # up to a comma of its own, once it said something
        own = token.head == root.index or long  # a long one also at a comma inside a phrase
        if token.text in CLAUSE_BREAKS and own and cut >= MIN_PREDICATE_WORDS:
            kept = kept[:cut]
            break
    while kept and kept[-1].text in CLAUSE_BREAKS | {".", "!"}:
        kept.pop()
    return _words_text(sentence, kept)


def _words_text(sentence: Sentence, tokens: list[Token]) -> str:
    """The tokens as the sentence writes them: the sentence's own spacing between neighbours,
    one space across a gap."""
    text, previous = "", None
    for token in tokens:
        if previous is not None:
            gap = sentence.text[previous.end - sentence.start : token.start - sentence.start]
            text += gap if token.index == previous.index + 1 else " "
        text += sentence.text[token.start - sentence.start : token.end - sentence.start]
        previous = token
    return text


def _span_head(sentence: Sentence, span: tuple[int, int]) -> Token:
    """The word of a span whose head lies outside it ("embargo" of "oil embargo")."""
    words = [sentence.token(i) for i in range(span[0], span[1] + 1)]
    return next((t for t in words if not span[0] <= t.head <= span[1]), words[-1])


def _labels(sentence: Sentence, span: tuple[int, int]) -> list[str]:
    """The entity labels of exactly this span of tokens (PERSON, NORP, ORG...)."""
    return [e.label for e in sentence.entities if (e.start, e.end) == span]


def _description(first: Sentence, pivot: tuple[int, int], second: Sentence) -> str | None:
    """The pivot named by what ``second`` says of it: "the people who were descended from
    Norse raiders" (a name becomes the noun of its kind, a common noun stays)."""
    subject = _subject(second)
    if subject is None:
        return None
    labels = _labels(first, pivot)
    head = _span_head(first, pivot)
    if head.upos == "NOUN":  # the second sentence's own word for it: "the price" of "prices"
        noun = (subject if subject.upos == "NOUN" else head).text.lower()
        relative = "that"
    elif labels and labels[0] in KIND_NOUNS:
        noun, relative = KIND_NOUNS[labels[0]]
    else:
        return None
    predicate = _predicate(second, subject)
    if len(predicate.split()) < MIN_PREDICATE_WORDS - 1:
        return None  # "the organization that arranged" says too little
    return f"the {noun} {relative} {predicate}"


def _same_kind(second: Sentence, topic: Token, first: Sentence, pivot: tuple[int, int]) -> bool:
    """Whether the second sentence's subject can be the pivot: every word that modifies it
    there is in the pivot too ("The Norman language" is not "the Norse language", "the other
    industrialized nations" not "the industrialized nations")."""
    pivot_words = {first.token(i).lemma.lower() for i in range(pivot[0], pivot[1] + 1)}
    modifiers = [t for t in second.tokens if t.head == topic.index and t.deprel in NAME_PARTS]
    others = [t for t in second.tokens if t.head == topic.index and t.lemma.lower() == "other"]
    return not others and all(t.lemma.lower() in pivot_words for t in modifiers)


def _definite(sentence: Sentence, noun: Token) -> bool:
    """Whether a noun refers to one thing the text has named: a name, or a common noun with a
    definite or demonstrative determiner or a possessive ("the treaty", "these convictions",
    "its populations"); a bare plural ("Families with incomes below $60,000") is generic."""
    if noun.upos == "PROPN":
        return True
    return any(
        t.head == noun.index
        and (t.lemma.lower() in DEFINITE_DETERMINERS or t.deprel == "nmod:poss")
        for t in sentence.tokens
    )


def _may_stand_for(pronoun: Token, first: Sentence, pivot: tuple[int, int]) -> bool:
    """Whether a subject pronoun can refer back to the previous sentence's subject: "he" or
    "she" to a person, "they" to a people or a plural; "it" refers to too much to tell."""
    labels = _labels(first, pivot)
    if pronoun.text.lower() in {"he", "she"}:
        return "PERSON" in labels
    head = _span_head(first, pivot)
    return "NORP" in labels or head.feature("Number") == "Plur"


def _pivot(first: Sentence, second: Sentence) -> tuple[tuple[int, int], str] | None:
    """What ``second`` is about in ``first``, and its description: the subject of ``first``
    when ``second`` follows it with a subject pronoun that can stand for it ("They were
    descended from Norse raiders"), else the noun of ``first`` that is the subject of
    ``second`` ("The treaty offered ...")."""
    topic = _subject(second)
    pivot = None
    if topic is not None and topic.text.lower() in SUBJECT_PRONOUNS:
        subject = _subject(first) if second.index == first.index + 1 else None
        pivot = _pivot_span(first, subject) if subject else None
        if pivot and not _may_stand_for(topic, first, pivot):
            pivot = None
    elif topic is not None and topic.upos in NOUN_UPOS:
        same = [t for t in first.tokens if t.upos in NOUN_UPOS and t.lemma == topic.lemma]
        pivot = _pivot_span(first, same[0]) if same else None
        if pivot and _span_head(first, pivot).index != same[0].index:
            pivot = None  # "Harvard" of "The Harvard Museum of Natural History" is not it
        if pivot and not (_definite(second, topic) and _same_kind(second, topic, first, pivot)):
            pivot = None
    description = _description(first, pivot, second) if pivot else None
    return (pivot, description) if pivot and description else None


def bridges(parsed: ParsedContext) -> list[Bridge]:
    """Every ``Bridge`` of a context's statements, the nearest sentences first."""
    sentences = [s for s in parsed.sentences if is_statement(s)]
    pairs = []
    for first in sentences:
        for second in sentences:
            found = _pivot(first, second) if second.index != first.index else None
            if found:
                pairs.append(Bridge(first, second, *found))
    return sorted(pairs, key=lambda b: (abs(b.second.index - b.first.index), b.first.index))


def _pivot_chars(bridge: Bridge) -> tuple[int, int]:
    """The pivot's character span in the context."""
    start, end = bridge.pivot
    return bridge.first.token(start).start, bridge.first.token(end).end


def _pivot_text(bridge: Bridge) -> str:
    start, end = _pivot_chars(bridge)
    offset = bridge.first.start
    return bridge.first.text[start - offset : end - offset]


def _takes_bridge(answer: Answer, bridge: Bridge) -> bool:
    """An answer of the first sentence apart from the pivot, which its question names."""
    start, end = _pivot_chars(bridge)
    if answer.start is None or answer.end is None:
        return False
    return answer.end <= start or end <= answer.start


def _askable(answer: Answer, sentence: Sentence) -> bool:
    """A name, number or noun chunk a question can ask for on its own: not a lone common noun
    ("suit" of "followed suit") and not a modifier of a noun outside it ("French" of "the
    French lands")."""
    if answer.kind not in BRIDGE_ANSWER_KINDS or answer.upos in {"ADJ", "NOUN"}:
        return False
    if answer.start is None or answer.end is None:
        return False
    start, end = answer.start, answer.end
    inside = [t for t in sentence.tokens if start <= t.start and t.end <= end]
    words = {t.index for t in inside}
    return not inside or not all(
        t.deprel in MODIFIER_DEPRELS and t.head not in words for t in inside
    )


def multi_sentence_targets(
    parsed: ParsedContext, context: Context, ranked: Sequence[Answer]
) -> list[Answer]:
    """One target per ``Bridge``: the best-ranked name, number or noun chunk of the answer
    sentence that the bridge sentence does not mention, apart from the pivot its question
    names; evidence is both sentences."""
    by_index = {s.index: s for s in parsed.sentences}
    targets: list[Answer] = []
    used: set[str] = set()
    for bridge in bridges(parsed):
        first, second = bridge.first, bridge.second
        bridge_words = set(answer_tokens(second.text))
        for answer in ranked:
            key = " ".join(answer_tokens(answer.text))
            if (
                answer.sentence_index != first.index
                or not _askable(answer, first)
                or key in used
                or set(answer_tokens(answer.text)) <= bridge_words
                or not _takes_bridge(answer, bridge)
            ):
                continue
            used.add(key)
            evidence = [
                Evidence.of_sentence(by_index[i]) for i in sorted({first.index, second.index})
            ]
            targets.append(
                answer.model_copy(
                    update={
                        "id": f"{context.id}:m{len(targets)}",
                        "kind": AnswerKind.MULTI_SENTENCE,
                        "evidence": evidence,
                        "bridge": second.text,
                        "pivot": _pivot_text(bridge),
                        "description": bridge.description,
                    }
                )
            )
            break
    return targets
