"""Answers people ask about, beside the paper's III-A1 set, and the ranking that fills a
per-context budget.

Human-written questions (SQuAD, NarrativeQA) ask most about names, dates, numbers and short
noun phrases, which the paper's word rules never propose on their own ("911" is neither a noun
nor a verb; "Rollo" is excluded as part of "their leader Rollo"). This module proposes, from the
same parse:

* ``named-entity`` and ``number``: the parser's NER spans, and the bare numbers inside a longer
  date or quantity ("1191" in "April 1191");
* ``noun-chunk``: base noun phrases (a noun with its determiners, modifiers and compounds, and
  the adjectives that follow it, the determiner dropped);
* ``modifier``: adjectives that say what kind a noun is ("rounded" arches);
* ``clause``: short embedded clauses, the answers to why and how questions;

and keeps the paper's phrases and words (``cq2a.answers.entities``). ``rank_answers`` orders them in
tiers (names and numbers, then noun chunks, then the rest), each tier taking the sentences in
turn so a budget is spread over the whole context; within a sentence, answers inside brackets
and adjectives come last; one item of a list ("Europe" in "Europe and the Near East") comes after
the rest of its tier; and an answer whose normalised text an earlier one has is dropped.
``evals.recall`` measures how many human answers a budget keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cq2a.answers.entities import (
    answer_from_tokens,
    answer_is_lexically_valid,
    numbered,
    paper_answers,
    round_robin,
)
from cq2a.language.answers import answer_tokens
from cq2a.language.lexicon import NOUN_UPOS, is_written_number
from cq2a.models.records import Answer, AnswerKind, Context, ParsedContext, Sentence, Token

#: OntoNotes labels of dates, times and amounts; every other NER label is a name.
NUMERIC_LABELS = frozenset({"DATE", "TIME", "CARDINAL", "QUANTITY", "MONEY", "PERCENT", "ORDINAL"})
#: Left dependents that belong to a base noun phrase ("the first Norman ruler's").
CHUNK_LEFT_DEPRELS = frozenset(
    {"det", "det:predet", "amod", "compound", "nummod", "nmod:poss", "flat", "advmod", "case"}
)
#: Right dependents that continue a name ("Rollo Smith" in UD's flat, "Charles III").
CHUNK_RIGHT_DEPRELS = frozenset({"flat", "flat:name", "fixed", "compound"})
#: The words of an adjective phrase after its noun that a base noun phrase keeps ("cuisine
#: méditerranéenne et saharienne"): one with a complement of its own is a reduced relative
#: clause ("shuttles open to the public"), not part of the base phrase.
ADJECTIVE_PHRASE_UPOS = frozenset({"ADJ", "ADV", "CCONJ", "PUNCT"})
#: Words that open a noun phrase without being part of what is asked ("the", "their").
LEADING_UPOS = frozenset({"DET", "PRON", "PUNCT", "CCONJ", "ADP", "PART"})
TRAILING_UPOS = frozenset({"PUNCT", "CCONJ", "ADP", "DET", "PART"})
#: Heads of the list items ``is_list_item`` ranks last: names, nouns, numbers and adjectives.
LIST_UPOS = frozenset({"NOUN", "PROPN", "NUM", "ADJ"})
#: UD relations of clauses embedded in a sentence.
CLAUSE_DEPRELS = frozenset({"advcl", "xcomp", "ccomp", "acl", "acl:relcl", "csubj"})
MAX_CLAUSE_TOKENS = 14

#: Ranking tiers: what human questions ask most comes first (evals/README.md#evalsrecall).
TIERS: tuple[frozenset[AnswerKind], ...] = (
    frozenset({AnswerKind.NAMED_ENTITY, AnswerKind.NUMBER}),
    frozenset({AnswerKind.NOUN_CHUNK}),
    frozenset(
        {
            AnswerKind.ENTITY_PHRASE,
            AnswerKind.MODIFIER,
            AnswerKind.ENTITY_WORD,
            AnswerKind.CLAUSE,
        }
    ),
)
#: Within a sentence, the order of kinds inside a tier.
KIND_ORDER = [
    AnswerKind.NAMED_ENTITY,
    AnswerKind.NUMBER,
    AnswerKind.NOUN_CHUNK,
    AnswerKind.ENTITY_PHRASE,
    AnswerKind.MODIFIER,
    AnswerKind.ENTITY_WORD,
    AnswerKind.CLAUSE,
]


def trim_edges(tokens: Sequence[Token]) -> list[Token]:
    """Drop determiners, possessive pronouns, prepositions and punctuation at the edges: "the
    Normans" is asked as "Normans", "in April 1191" as "April 1191". Numbers stay, whatever
    the tagger made of them ("100 000" tagged a determiner and a pronoun)."""
    kept = list(tokens)
    while kept and kept[0].upos in LEADING_UPOS and not is_written_number(kept[0].text):
        kept.pop(0)
    while kept and kept[-1].upos in TRAILING_UPOS and not is_written_number(kept[-1].text):
        kept.pop()
    return kept


def _children(sentence: Sentence) -> dict[int, list[Token]]:
    children: dict[int, list[Token]] = {}
    for token in sentence.tokens:
        children.setdefault(token.head, []).append(token)
    return children


def _subtree(sentence: Sentence, children: dict[int, list[Token]], index: int) -> list[int]:
    found, stack = [], [index]
    while stack:
        current = stack.pop()
        found.append(current)
        stack += [c.index for c in children.get(current, [])]
    return sorted(found)


def entity_answers(context: Context, sentence: Sentence) -> list[Answer]:
    """NER spans as ``named-entity`` or ``number`` answers, and the bare numbers inside a longer
    date or amount ("1906" in "the 1906 season"); a number written in groups ("100 000") is
    one number."""
    answers = []
    for span in sentence.entities:
        tokens = trim_edges([sentence.token(i) for i in range(span.start, span.end + 1)])
        if not tokens:
            continue
        numeric = span.label in NUMERIC_LABELS
        kind = AnswerKind.NUMBER if numeric else AnswerKind.NAMED_ENTITY
        answers.append(answer_from_tokens(context, sentence, tokens, kind))
        if numeric and len(tokens) > 1 and not all(is_written_number(t.text) for t in tokens):
            answers += [
                answer_from_tokens(context, sentence, [t], AnswerKind.NUMBER)
                for t in tokens
                if t.upos == "NUM"
            ]
    return answers


def bare_numbers(context: Context, sentence: Sentence) -> list[Answer]:
    """Numbers the NER did not label (the parse still tags them NUM)."""
    inside = {i for span in sentence.entities for i in range(span.start, span.end + 1)}
    return [
        answer_from_tokens(context, sentence, [t], AnswerKind.NUMBER)
        for t in sentence.tokens
        if t.upos == "NUM" and t.index not in inside and any(ch.isdigit() for ch in t.text)
    ]


def chunk_span(sentence: Sentence, children: dict[int, list[Token]], head: Token) -> list[Token]:
    """A noun's base phrase: the noun with the left dependents that run up to it without a gap
    (determiners, adjectives, compounds, numbers, possessors), and after it the name parts and
    the bare adjectives that follow it without a gap ("but utilitaire": French puts most
    adjectives after the noun)."""
    start = end = head.index
    for child in sorted(children.get(head.index, []), key=lambda t: -t.index):
        if child.index > head.index or child.deprel not in CHUNK_LEFT_DEPRELS:
            continue
        span = _subtree(sentence, children, child.index)
        if span[-1] != start - 1 or span != list(range(span[0], span[-1] + 1)):
            break
        start = span[0]
    for child in sorted(children.get(head.index, []), key=lambda t: t.index):
        if child.index < head.index:
            continue
        span = _subtree(sentence, children, child.index)
        adjective = child.deprel == "amod" and all(
            sentence.token(i).upos in ADJECTIVE_PHRASE_UPOS for i in span
        )
        if not (child.deprel in CHUNK_RIGHT_DEPRELS or adjective) or child.index != end + 1:
            break
        end = span[-1]
    return [sentence.token(i) for i in range(start, end + 1)]


def noun_chunks(context: Context, sentence: Sentence) -> list[Answer]:
    """Base noun phrases (``noun-chunk``), one per noun that heads one."""
    children = _children(sentence)
    answers = []
    for token in sentence.tokens:
        if token.upos not in NOUN_UPOS or token.deprel in {"compound", "flat", "fixed"}:
            continue
        tokens = trim_edges(chunk_span(sentence, children, token))
        if tokens:
            answers.append(answer_from_tokens(context, sentence, tokens, AnswerKind.NOUN_CHUNK))
    return answers


def modifiers(context: Context, sentence: Sentence) -> list[Answer]:
    """Adjectives that modify a noun ("rounded" arches, "silver" chains): ``what kind`` answers."""
    return [
        answer_from_tokens(context, sentence, [t], AnswerKind.MODIFIER)
        for t in sentence.tokens
        if t.upos == "ADJ"
        and t.deprel in {"amod", "compound"}
        and t.head
        and sentence.token(t.head).upos in NOUN_UPOS
    ]


def clauses(context: Context, sentence: Sentence) -> list[Answer]:
    """Short embedded clauses (at most ``MAX_CLAUSE_TOKENS`` words): why and how answers."""
    children = _children(sentence)
    answers = []
    for token in sentence.tokens:
        if token.deprel not in CLAUSE_DEPRELS or token.upos not in {"VERB", "AUX"}:
            continue
        span = _subtree(sentence, children, token.index)
        if span != list(range(span[0], span[-1] + 1)):
            continue
        tokens = trim_edges([sentence.token(i) for i in span])
        if 2 <= len(tokens) <= MAX_CLAUSE_TOKENS:
            answers.append(answer_from_tokens(context, sentence, tokens, AnswerKind.CLAUSE))
    return answers


def asked_answers(
    parsed: ParsedContext, context: Context, paper: Sequence[Answer] | None = None
) -> list[Answer]:
    """Every answer the module proposes for a context, then the paper's (``paper``, or
    ``paper_answers`` of the parse), unranked and without ids."""
    found: list[Answer] = []
    for sentence in parsed.sentences:
        found += entity_answers(context, sentence)
        found += bare_numbers(context, sentence)
        found += noun_chunks(context, sentence)
        found += modifiers(context, sentence)
        found += clauses(context, sentence)
    found += paper_answers(parsed, context) if paper is None else paper
    return [a for a in found if answer_is_lexically_valid(a).passed]


def is_aside(answer: Answer, text: str) -> bool:
    """An answer inside brackets ("Normands" in "(French: Normands)"), or an adjective
    ("Frankish" populations): both are seldom what a question asks for."""
    before = text[: answer.start or 0]
    return answer.upos == "ADJ" or before.count("(") > before.count(")")


def is_list_item(answer: Answer, sentence: Sentence | None) -> bool:
    """One item of a list whose other items lie outside the answer ("Europe" in "medieval
    Europe and even the Near East"): a question about it has the whole list for its answer
    unless it names the other items, which generated questions seldom do (the demo's
    "Which region ... did the Norman dynasty have a major impact on?" for "Europe")."""
    if sentence is None or answer.start is None or answer.end is None:
        return False
    inside = {t.index for t in sentence.tokens if answer.start <= t.start and t.end <= answer.end}
    heads = [sentence.token(i) for i in inside if sentence.token(i).head not in inside]
    if len(heads) != 1 or heads[0].upos not in LIST_UPOS:
        return False
    head = heads[0]
    first = head.head if head.deprel == "conj" else head.index
    items = {first} | {t.index for t in sentence.tokens if t.deprel == "conj" and t.head == first}
    return bool(items - inside)


def _by_sentence(answers: Iterable[Answer], text: str) -> list[Answer]:
    """One answer from each sentence in turn; within a sentence asides last, then by kind and
    position."""
    rank = {kind: n for n, kind in enumerate(KIND_ORDER)}
    return round_robin(
        sorted(
            answers,
            key=lambda a: (a.sentence_index, is_aside(a, text), rank[a.kind], a.start or 0),
        )
    )


def rank_answers(
    answers: Sequence[Answer], parsed: ParsedContext, text: str, budget: int | None = None
) -> list[Answer]:
    """The answers of the context ``text`` (parsed as ``parsed``) in the order a budget keeps
    them: tier by tier (``TIERS``), each tier taking the sentences in turn, its single items of
    a list last; an answer whose SQuAD-normalised text an earlier one has is dropped."""
    sentences = {s.index: s for s in parsed.sentences}
    seen: set[str] = set()
    ranked: list[Answer] = []
    for tier in TIERS:
        fresh = []
        for answer in _by_sentence((a for a in answers if a.kind in tier), text):
            key = " ".join(answer_tokens(answer.text))
            if key and key not in seen:
                seen.add(key)
                fresh.append(answer)
        # again: a sentence left only repeats is skipped; single items of a list after the rest
        items = [a for a in fresh if is_list_item(a, sentences.get(a.sentence_index))]
        rest = [a for a in fresh if a not in items]
        ranked += _by_sentence(rest, text) + _by_sentence(items, text)
    return ranked if budget is None else ranked[: max(budget, 0)]


def extract_asked(
    parsed: ParsedContext, context: Context, limit: int | None = None
) -> list[Answer]:
    """The ranked answers of one context, the first ``limit`` of them, with ids
    ``{context.id}:e{n}`` in rank order (a smaller limit yields a prefix of a larger one)."""
    return rank_asked_answers(parsed, context, paper_answers(parsed, context), limit)


def rank_asked_answers(
    parsed: ParsedContext, context: Context, paper: Sequence[Answer], limit: int | None = None
) -> list[Answer]:
    """``extract_asked`` given the context's ``paper_answers`` (III-A1), found once by the
    caller."""
    found = asked_answers(parsed, context, paper)
    return numbered(rank_answers(found, parsed, context.context, limit), context.id)
