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

from cq2a.language.answers import answer_tokens
from cq2a.language.lexicon import CONTENT_UPOS, NOUN_UPOS
from cq2a.models.records import (
    UNANSWERABLE,
    Answer,
    AnswerKind,
    Context,
    Evidence,
    ParsedContext,
    Sentence,
)

#: A sentence a yes/no or unanswerable question can be about: a statement of some length.
MIN_STATEMENT_TOKENS = 6
#: Subjects that refer back to the sentence before ("They were descended from ...").
ANAPHORA = frozenset("he she it they his her its their this these".split())
#: Answer kinds a multi-sentence question can ask for (spans that name something).
BRIDGE_ANSWER_KINDS = frozenset({AnswerKind.NAMED_ENTITY, AnswerKind.NUMBER, AnswerKind.NOUN_CHUNK})


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


def bridges(parsed: ParsedContext) -> list[tuple[Sentence, Sentence]]:
    """Pairs (answer sentence, bridge sentence): the bridge shares a noun with the answer
    sentence, or follows it and opens by referring back to it ("They ...")."""
    sentences = [s for s in parsed.sentences if is_statement(s)]
    pairs = []
    for first in sentences:
        for second in sentences:
            if second.index == first.index:
                continue
            shared = content_lemmas(first, NOUN_UPOS) & content_lemmas(second, NOUN_UPOS)
            opener = second.tokens[0].text.lower() if second.tokens else ""
            refers_back = second.index == first.index + 1 and opener in ANAPHORA
            if shared or refers_back:
                pairs.append((first, second))
    return sorted(pairs, key=lambda pair: (abs(pair[1].index - pair[0].index), pair[0].index))


def multi_sentence_targets(
    parsed: ParsedContext, context: Context, ranked: Sequence[Answer]
) -> list[Answer]:
    """One target per sentence pair (``bridges``): the best-ranked name, number or noun chunk
    of the answer sentence that the bridge sentence does not mention; evidence is both."""
    by_index = {s.index: s for s in parsed.sentences}
    targets: list[Answer] = []
    used: set[str] = set()
    for first, second in bridges(parsed):
        bridge_words = set(answer_tokens(second.text))
        for answer in ranked:
            key = " ".join(answer_tokens(answer.text))
            if (
                answer.sentence_index != first.index
                or answer.kind not in BRIDGE_ANSWER_KINDS
                or key in used
                or set(answer_tokens(answer.text)) <= bridge_words
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
                    }
                )
            )
            break
    return targets
