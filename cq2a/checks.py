"""Constraint checks on a generated question (III-C1).

Each rule is one function returning a ``CheckResult``; ``check_question`` runs them all and
``rejection_reasons`` maps failures to the reasons recorded with a rejected candidate.
"""

from __future__ import annotations

from cq2a.lexicon import (
    FUNCTION_WORDS,
    NON_LEXICAL_VERBS,
    is_pronoun_or_demonstrative,
    mentions,
    same_word,
    words,
)
from cq2a.models import Answer, AnswerKind, CheckResult, RejectReason

LEXICAL = "lexical_validity"
COMPLETE = "completeness"
NO_LEAK = "no_leakage"
LENGTH = "length"
MENTIONS_ENTITIES = "mentions_entities"

REASON_OF_CHECK = {
    LEXICAL: RejectReason.LEXICAL,
    COMPLETE: RejectReason.INCOMPLETE,
    NO_LEAK: RejectReason.LEAK,
    MENTIONS_ENTITIES: RejectReason.INCOMPLETE,
}


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
    return CheckResult(name=LEXICAL, passed=True)


def explanation_is_complete(answer: Answer, explanation: str) -> CheckResult:
    """III-C1 Completeness: the entity appears in the explanation; for a relation, the whole
    triple (both entities and the relation) does."""
    if answer.triple is None:
        parts = [answer.text]
    else:
        parts = [answer.triple.subject, answer.triple.relation, answer.triple.object]
    missing = [part for part in parts if not mentions(explanation, part)]
    if missing:
        return CheckResult(
            name=COMPLETE, passed=False, detail=f"explanation lacks {', '.join(missing)}"
        )
    return CheckResult(name=COMPLETE, passed=True)


def leaked_words(answer: Answer, question: str) -> list[str]:
    """The words by which ``answer`` shows in ``question``: the answer itself, its lemma, and
    for phrases any of its nouns (III-C1)."""
    question_words = words(question)
    leaks: list[str] = []
    if mentions(question, answer.text):
        leaks.append(answer.text)
    lemmas: list[str] = []
    if answer.kind is AnswerKind.ENTITY_PHRASE:
        lemmas = list(answer.head_nouns)
    elif answer.lemma:
        lemmas = [answer.lemma.lower()]
    if answer.kind is AnswerKind.RELATION:
        lemmas += [
            w for w in words(answer.text) if w not in NON_LEXICAL_VERBS and w not in FUNCTION_WORDS
        ]
    for lemma in lemmas:
        if any(same_word(token, lemma.lower()) for token in question_words):
            leaks.append(lemma)
    return sorted(set(leaks))


def answer_leaks_into_question(answer: Answer, question: str) -> CheckResult:
    """III-C1 Avoiding information leakage: the answer must not appear in its question."""
    leaks = leaked_words(answer, question)
    if leaks:
        return CheckResult(name=NO_LEAK, passed=False, detail=f"question contains {leaks}")
    return CheckResult(name=NO_LEAK, passed=True)


def question_length_is_ok(question: str, min_chars: int, max_chars: int) -> CheckResult:
    """Table I: each question exceeds 25 characters; overly long ones are cut off too."""
    length = len(question.strip())
    if length < min_chars:
        return CheckResult(name=LENGTH, passed=False, detail=f"too_short: {length} chars")
    if length > max_chars:
        return CheckResult(name=LENGTH, passed=False, detail=f"too_long: {length} chars")
    return CheckResult(name=LENGTH, passed=True)


def question_mentions_both_entities(answer: Answer, question: str) -> CheckResult:
    """Table I, relation prompt, requirement 3: the question mentions Entity1 and Entity2.

    An entity counts as mentioned when one of its content words (longer than three letters, or
    its only word) is in the question, since questions may shorten long noun phrases."""
    if answer.triple is None:
        return CheckResult(name=MENTIONS_ENTITIES, passed=True)
    question_words = set(words(question))
    missing = []
    for entity in (answer.triple.subject, answer.triple.object):
        entity_words = words(entity)
        content = [w for w in entity_words if len(w) > 3] or entity_words
        if not question_words.intersection(content):
            missing.append(entity)
    if missing:
        return CheckResult(
            name=MENTIONS_ENTITIES, passed=False, detail=f"question omits {', '.join(missing)}"
        )
    return CheckResult(name=MENTIONS_ENTITIES, passed=True)


def check_question(
    answer: Answer, question: str, explanation: str, *, min_chars: int, max_chars: int
) -> list[CheckResult]:
    """All III-C1 constraints for one candidate question."""
    return [
        answer_is_lexically_valid(answer),
        explanation_is_complete(answer, explanation),
        answer_leaks_into_question(answer, question),
        question_length_is_ok(question, min_chars, max_chars),
        question_mentions_both_entities(answer, question),
    ]


def rejection_reasons(results: list[CheckResult]) -> list[RejectReason]:
    reasons: list[RejectReason] = []
    for result in results:
        if result.passed:
            continue
        if result.name == LENGTH:
            too_long = result.detail.startswith("too_long")
            reasons.append(RejectReason.TOO_LONG if too_long else RejectReason.TOO_SHORT)
        else:
            reasons.append(REASON_OF_CHECK[result.name])
    return list(dict.fromkeys(reasons))
