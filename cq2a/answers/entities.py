"""Entity answers (III-A1): noun and verb phrases and words of a parsed context that pass the
paper's rules, one function per rule, and their order within a context.

Phrases come from the parser's NP/VP spans (Stanza constituency trees, or spaCy dependency
subtrees); words are single nouns and verbs. III-C1's lexical validity is checked here, once, on
the answer itself (``answer_is_lexically_valid``): an invalid answer never reaches generation.
Relations (III-A2) are ``cq2a.answers.relations``; a context's pool and first slots are
``cq2a.answers.plan``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import zip_longest

from pydantic import BaseModel

from cq2a.language.lexicon import (
    CONTENT_UPOS,
    NON_LEXICAL_VERBS,
    NOUN_UPOS,
    is_pronoun_or_demonstrative,
    words,
)
from cq2a.models.records import (
    Answer,
    AnswerKind,
    CheckResult,
    Context,
    Evidence,
    ParsedContext,
    Phrase,
    Sentence,
    Token,
)

#: III-A1: "The length of the phrase must be at least two words."
MIN_PHRASE_WORDS = 2
#: UD relations under which a verb form modifies a word instead of predicating
#: (e.g. "the *conquered* lands" amod, "a region *called* Normandy" acl). ``acl:relcl`` is a
#: relative clause's own predicate and is not a modifier.
MODIFIER_DEPRELS = frozenset({"amod", "acl", "advmod", "nmod", "nmod:poss", "compound"})
#: Tokens left dangling at a phrase's edge once a clause is cut out ("the people ,").
EDGE_UPOS = frozenset({"PUNCT", "CCONJ"})
OPENING = {"(": ")", "[": "]", "{": "}"}
CLOSING = frozenset(OPENING.values())


class PhraseWords(BaseModel):
    """A phrase of one sentence with the tokens that remain after clause removal."""

    sentence: Sentence
    phrase: Phrase
    tokens: list[Token]


# ---- phrase rules (III-A1 "Phrases") ----


def strip_clause_tokens(sentence: Sentence, phrase: Phrase) -> list[Token]:
    """III-A1: remove the words of clauses embedded in a phrase, then punctuation and
    conjunctions left dangling at its edges."""
    dropped = set(phrase.clause_tokens)
    tokens = [sentence.token(i) for i in range(phrase.start, phrase.end + 1) if i not in dropped]
    while tokens and tokens[0].upos in EDGE_UPOS:
        tokens.pop(0)
    while tokens and tokens[-1].upos in EDGE_UPOS:
        tokens.pop()
    return tokens


def phrase_is_long_enough(tokens: Sequence[Token]) -> bool:
    """III-A1: a phrase has at least two words (punctuation is not a word); checked after
    clause removal, so a phrase reduced to one word is no longer a phrase."""
    return sum(token.upos != "PUNCT" for token in tokens) >= MIN_PHRASE_WORDS


def phrase_has_content_word(tokens: Sequence[Token]) -> bool:
    """III-C1 lexical validity applied to phrases: "all of them" or "it is" cannot be answers."""
    return any(token.upos in CONTENT_UPOS for token in tokens)


def brackets_are_balanced(text: str) -> bool:
    """A phrase must not cut a parenthetical or a quotation in half ("Norseman") raiders").

    Not a rule of the paper: the offline parser sometimes attaches half of a parenthetical,
    and such a span is not a usable answer.
    """
    depth: list[str] = []
    for char in text:
        if char in OPENING:
            depth.append(OPENING[char])
        elif char in CLOSING and (not depth or depth.pop() != char):
            return False
    return not depth and text.count('"') % 2 == 0


def drop_duplicate_phrases(answers: Iterable[Answer]) -> list[Answer]:
    """III-A1: duplicates are eliminated; the first occurrence of a surface text (compared
    case- and whitespace-insensitively) is kept."""
    seen: set[str] = set()
    kept: list[Answer] = []
    for answer in answers:
        key = " ".join(answer.text.casefold().split())
        if key not in seen:
            seen.add(key)
            kept.append(answer)
    return kept


# ---- word rules (III-A1 "Words") ----


def is_valid_noun(token: Token) -> bool:
    """III-A1: nouns must not include pronouns; only NOUN/PROPN with a letter or digit count."""
    return token.upos in NOUN_UPOS and any(ch.isalnum() for ch in token.text)


def is_modifier(token: Token) -> bool:
    """III-A1: the word functions as a modifier in the dependency relations."""
    return token.deprel in MODIFIER_DEPRELS


def is_infinitive(token: Token, sentence: Sentence) -> bool:
    """III-A1: the verb is a "to"-infinitive (it has a dependent "to" marker)."""
    return any(
        child.head == token.index and child.text.lower() == "to" and child.deprel in {"mark", "aux"}
        for child in sentence.tokens
    )


def is_valid_verb(token: Token, sentence: Sentence) -> bool:
    """III-A1: a lexical verb (not AUX, not be/have/do) that is neither a modifier nor an
    infinitive."""
    return (
        token.upos == "VERB"
        and token.lemma.lower() not in NON_LEXICAL_VERBS
        and not is_modifier(token)
        and not is_infinitive(token, sentence)
    )


def word_inside_phrase(token: Token, sentence_phrases: Iterable[PhraseWords]) -> bool:
    """III-A1: words already extracted as part of a phrase of the same sentence are excluded.

    ``sentence_phrases`` are the kept phrases of the token's own sentence.
    """
    return any(token.index in {t.index for t in kept.tokens} for kept in sentence_phrases)


# ---- building answers ----


def surface_text(text: str, tokens: Sequence[Token]) -> str:
    """The exact context text of ``tokens``; runs separated by removed words join with a space."""
    runs: list[list[Token]] = []
    for token in tokens:
        if runs and token.index == runs[-1][-1].index + 1:
            runs[-1].append(token)
        else:
            runs.append([token])
    return " ".join(text[run[0].start : run[-1].end] for run in runs)


def _noun_lemmas(tokens: Iterable[Token]) -> list[str]:
    return list(dict.fromkeys(t.lemma for t in tokens if t.upos in NOUN_UPOS))


def answer_from_tokens(
    context: Context, sentence: Sentence, tokens: Sequence[Token], kind: AnswerKind
) -> Answer:
    """An answer (without its id) for a run of tokens of one sentence."""
    words = [t for t in tokens if t.upos != "PUNCT"]
    word = tokens[0] if len(tokens) == 1 else None
    return Answer(
        id="",
        context_id=context.id,
        kind=kind,
        text=surface_text(context.context, tokens),
        sentence=sentence.text,
        sentence_index=sentence.index,
        start=tokens[0].start,
        end=tokens[-1].end,
        lemma=" ".join(t.lemma for t in words),
        upos=word.upos if word else None,
        head_nouns=_noun_lemmas(words),
        evidence=[Evidence.of_sentence(sentence)],
    )


def kept_phrases(sentence: Sentence) -> list[PhraseWords]:
    """III-A1 phrase rules: clause removal, then the length, content and bracket filters."""
    phrases = [
        PhraseWords(sentence=sentence, phrase=p, tokens=strip_clause_tokens(sentence, p))
        for p in sentence.phrases
    ]
    return [
        p
        for p in phrases
        if phrase_is_long_enough(p.tokens)
        and phrase_has_content_word(p.tokens)
        and brackets_are_balanced(" ".join(t.text for t in p.tokens))
    ]


def kept_words(sentence: Sentence, phrases: Sequence[PhraseWords]) -> list[Token]:
    """III-A1 word rules: valid nouns, then valid verbs, outside the sentence's phrases."""
    nouns = [t for t in sentence.tokens if is_valid_noun(t)]
    verbs = [t for t in sentence.tokens if is_valid_verb(t, sentence)]
    return [t for t in nouns + verbs if not word_inside_phrase(t, phrases)]


def _sentence_answers(context: Context, sentence: Sentence) -> list[Answer]:
    """Noun phrases, verb phrases, nouns, then verbs of one sentence."""
    phrases = kept_phrases(sentence)
    ordered = [p for p in phrases if p.phrase.label == "NP"]
    ordered += [p for p in phrases if p.phrase.label == "VP"]
    answers = [
        answer_from_tokens(context, sentence, p.tokens, AnswerKind.ENTITY_PHRASE) for p in ordered
    ]
    words = kept_words(sentence, phrases)
    return answers + [
        answer_from_tokens(context, sentence, [t], AnswerKind.ENTITY_WORD) for t in words
    ]


def round_robin(answers: Iterable[Answer]) -> list[Answer]:
    """One answer from each sentence in turn, keeping each sentence's own order; sentences take
    their turns in the order their first answer comes."""
    queues: dict[int, list[Answer]] = {}
    for answer in answers:
        queues.setdefault(answer.sentence_index, []).append(answer)
    return [a for layer in zip_longest(*queues.values()) for a in layer if a is not None]


#: SQuAD's human answers are a few words long; longer phrases make vaguer targets.
CONCISE_WORDS = 4


def _concise_first(answers: Sequence[Answer]) -> list[Answer]:
    """Within each sentence, answers of at most CONCISE_WORDS words come first (stable)."""
    return sorted(answers, key=lambda a: (a.sentence_index, len(a.text.split()) > CONCISE_WORDS))


def _apart_first(answers: Sequence[Answer]) -> list[Answer]:
    """Answers whose span overlaps none taken before them come first, so a capped list covers
    more of the context; the overlapping ones follow in the same order."""
    taken: list[tuple[int, int]] = []
    apart: list[Answer] = []
    overlapping: list[Answer] = []
    for answer in answers:
        span = (answer.start or 0, answer.end or 0)
        if any(span[0] < end and start < span[1] for start, end in taken):
            overlapping.append(answer)
        else:
            taken.append(span)
            apart.append(answer)
    return apart + overlapping


def paper_answers(parsed: ParsedContext, context: Context) -> list[Answer]:
    """III-A1: the phrases and words of every sentence that pass the paper's rules, without
    duplicates, in sentence order (no ids yet)."""
    found = [a for s in parsed.sentences for a in _sentence_answers(context, s)]
    # III-C1 lexical validity is a property of the answer: an invalid one never reaches generation
    found = [a for a in found if answer_is_lexically_valid(a).passed]
    return drop_duplicate_phrases(found)


def extract_entities(
    parsed: ParsedContext, context: Context, limit: int | None = None
) -> list[Answer]:
    """III-A1: entity answers (phrases and words) of one context, in a stable order.

    Per sentence: noun phrases, verb phrases, nouns, then verbs, with answers of at most four
    words before longer ones; sentences are then taken in turn (round-robin), and answers that
    overlap an earlier one move behind those that do not, so a ``limit`` keeps concise answers
    spread over the whole context. Ids are ``{context.id}:e{n}`` in that order, so a smaller
    limit yields a prefix of a larger one.
    """
    return rank_paper_answers(paper_answers(parsed, context), context.id, limit)


def rank_paper_answers(
    answers: Sequence[Answer], context_id: str, limit: int | None = None
) -> list[Answer]:
    """The ``paper_answers`` of one context in ``extract_entities``' order, the first ``limit``
    of them, numbered by ``numbered``."""
    ordered = _apart_first(round_robin(_concise_first(answers)))
    if limit is not None:
        ordered = ordered[: max(limit, 0)]
    return numbered(ordered, context_id)


def numbered(answers: Iterable[Answer], context_id: str) -> list[Answer]:
    """The entity answers of one context with ids ``{context_id}:e{n}`` in their order."""
    return [a.model_copy(update={"id": f"{context_id}:e{n}"}) for n, a in enumerate(answers)]


# ---- III-C1 lexical validity, checked once on the answer ----


#: The name of the III-C1 lexical-validity check in a ``CheckResult``.
LEXICAL = "lexical_validity"


def answer_is_lexically_valid(answer: Answer) -> CheckResult:
    """III-C1 Lexical validity: no personal or demonstrative pronoun and no non-lexical verb
    (e.g. "he", "that", "is") may serve as an answer."""
    text = answer.text
    if is_pronoun_or_demonstrative(text):
        return CheckResult(name=LEXICAL, passed=False, detail=f"{text!r} is a pronoun")
    tokens = words(text)
    is_single_verb = answer.kind is AnswerKind.RELATION or answer.upos in {"VERB", "AUX"}
    if is_single_verb and tokens and all(token in NON_LEXICAL_VERBS for token in tokens):
        return CheckResult(name=LEXICAL, passed=False, detail=f"{text!r} is not a lexical verb")
    if answer.upos == "AUX":
        return CheckResult(name=LEXICAL, passed=False, detail=f"{text!r} is an auxiliary")
    if text.endswith(("'", "\u2019")):
        # a word cut at an elision ("King'" of a French parse of "King's"), or a possessive
        # whose owner is the answer ("the Normans'")
        return CheckResult(name=LEXICAL, passed=False, detail=f"{text!r} ends at an apostrophe")
    return CheckResult(name=LEXICAL, passed=True)
