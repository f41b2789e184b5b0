"""Multi-sentence questions (``cq2a.answers.kinds``): the generator writes a question about the
answer's sentence that names its pivot, and the pivot's phrase in the question is then replaced
by what the second sentence says of it ("Which region of France took its name from the
Normans?" -> "... from the people who were descended from Norse raiders?"). A small model asked
to do both at once names the pivot anyway; naming it by its description is the step that makes
the question need the second sentence, so it is done on the parse, not left to the model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from cq2a.language.answers import answer_tokens, described
from cq2a.language.trees import QuestionParse, subtree
from cq2a.models.records import AnswerKind, Candidate, Sentence, Token

#: Share of a question's words the pivot's phrase may take: more means the parse went wrong.
MAX_PHRASE_SHARE = 0.6
POSSESSIVE_MARKS = frozenset({"'s", "'", "\u2019s", "\u2019"})


def _asks(token: Token) -> bool:
    return token.xpos.startswith("W") or token.feature("PronType") == "Int"


class Phrase(NamedTuple):
    """Where a question names the pivot (characters ``start`` to ``end``), and, when it names
    it as a possessive, what it possesses ("main campus" of "Harvard's main campus")."""

    start: int
    end: int
    possessed: str | None = None


def pivot_phrase(sentence: Sentence, pivot: str) -> Phrase | None:
    """The phrase of ``sentence`` that names ``pivot``: the last word of the question that is
    a word of the pivot, with the determiners and modifiers before it and an "of" phrase after
    it ("the treaty of Saint-Clair-sur-Epte" for "treaty"), or, for a possessive, with the
    noun phrase it possesses ("Harvard's main campus"). None when the question does not name
    it, names it as a modifier of another noun ("the Duchy border"), or the phrase would hold
    the question word or most of the question."""
    words = set(answer_tokens(pivot))
    tokens = sentence.tokens
    named = [t for t in tokens if t.text.casefold() in words or t.lemma.casefold() in words]
    if not named:
        return None
    head = named[-1]
    after = tokens[head.index] if head.index < len(tokens) else None
    if after is not None and after.upos in {"NOUN", "PROPN"}:
        return None
    start = head.index
    while start > 1 and not _asks(tokens[start - 2]) and _modifies(tokens[start - 2]):
        start -= 1
    end, possessed = head.index, None
    if after is not None and after.text in POSSESSIVE_MARKS:
        owner = head.head
        if head.deprel != "nmod:poss" or owner <= after.index:
            return None
        possessed = tokens[after.index : owner]  # between the mark and the possessed noun
        end = owner
    for child in (t for t in tokens if t.head == head.index and t.index > head.index):
        marks = [t for t in tokens if t.head == child.index and t.deprel == "case"]
        if child.deprel.startswith("nmod") and [m.lemma.lower() for m in marks] == ["of"]:
            end = max(end, max(subtree(sentence, child)))
    phrase = tokens[start - 1 : end]
    if any(_asks(t) for t in phrase) or len(phrase) > MAX_PHRASE_SHARE * len(tokens):
        return None
    owned = " ".join(t.text for t in possessed) if possessed else None
    return Phrase(phrase[0].start, phrase[-1].end, owned)


def _modifies(token: Token) -> bool:
    """A word that can stand before a noun inside its phrase: a determiner, a possessive, an
    adjective, a number or a noun of a compound."""
    possessive = token.upos == "PRON" and token.feature("Poss") == "Yes"
    return token.upos in {"DET", "ADJ", "NUM", "NOUN", "PROPN"} or possessive


def bridged(question: str, pivot: str, description: str, parse: QuestionParse) -> str | None:
    """``question`` with its pivot's phrase replaced by ``description``; None when the question
    does not name the pivot where a phrase can stand in for it."""
    if described(question, description):
        return None  # written with the description already (from the feedback)
    sentences = list(parse(question))
    if len(sentences) != 1:
        return None
    phrase = pivot_phrase(sentences[0], pivot)
    if phrase is None:
        return None
    text = f"the {phrase.possessed} of {description}" if phrase.possessed else description
    if phrase.start == 0:
        text = text[0].upper() + text[1:]
    return question[: phrase.start] + text + question[phrase.end :]


def bridge_questions(candidates: Sequence[Candidate], parse: QuestionParse) -> list[Candidate]:
    """Each multi-sentence candidate's new question with its pivot named by the second
    sentence (``bridged``); the generator's own question is kept on the attempt. A question
    that does not name its pivot stays as written, and its checks reject it."""
    out = []
    for candidate in candidates:
        answer = candidate.answer
        if (
            answer.kind is not AnswerKind.MULTI_SENTENCE
            or not answer.pivot
            or not answer.description
            or candidate.error is not None
            or not candidate.attempts
            or candidate.current.as_generated is not None
            or not candidate.current.question
        ):
            out.append(candidate)
            continue
        attempt = candidate.current
        rewritten = bridged(attempt.question, answer.pivot, answer.description, parse)
        if rewritten is None:
            out.append(candidate)
            continue
        update = {"question": rewritten, "as_generated": attempt.question}
        attempts = [*candidate.attempts[:-1], attempt.model_copy(update=update)]
        out.append(candidate.model_copy(update={"attempts": attempts}))
    return out
