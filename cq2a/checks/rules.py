"""Constraint checks on a generated question (III-C1).

Each rule is one function returning a ``CheckResult``; ``check_question`` runs them all,
``rejection_reasons`` maps failures to the reasons recorded with a rejected candidate, and
``apply_constraints`` records both on a candidate's current attempt. ``check_round`` is the
graph's step: the checks over a context's waiting candidates, then near-duplicate removal
(``cq2a.checks.dedup``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from cq2a.checks.dedup import mark_duplicates
from cq2a.language.answers import described
from cq2a.language.deixis import ENGLISH, DeixisLexicon
from cq2a.language.detect import language_confidence, language_name
from cq2a.language.embeddings import SimilarityMatrix
from cq2a.language.lemmas import Lemmatizer, contains_run, lemma_words, occurs_in, without_articles
from cq2a.language.lexicon import (
    ARTICLES,
    CONTENT_UPOS,
    NON_LEXICAL_VERBS,
    NOUN_UPOS,
    shows_blank,
    words,
)
from cq2a.language.trees import QuestionParse
from cq2a.models.candidates import at_step, settle, with_attempt
from cq2a.models.records import (
    Answer,
    AnswerKind,
    Candidate,
    CheckResult,
    RejectReason,
    Sentence,
    Token,
)

#: ``paper``: the answer itself (case, punctuation, articles and inflection aside) must not be in
#: its question (III-C1). ``strict``: nor any noun of an answer phrase.
LeakRule = Literal["paper", "strict"]

COMPLETE = "completeness"
NO_LEAK = "no_leakage"
LENGTH = "length"
MENTIONS_ENTITIES = "mentions_entities"
FORM = "question_form"
GROUNDED = "grounded"
BOTH_SENTENCES = "both_sentences"
PREMISE = "stated_premise"
SELF_CONTAINED = "self_contained"
BORROWED = "no_borrowed_name"
LANGUAGE = "passage_language"

REASON_OF_CHECK = {
    COMPLETE: RejectReason.INCOMPLETE,
    NO_LEAK: RejectReason.LEAK,
    MENTIONS_ENTITIES: RejectReason.MISSING_ENTITY,
    FORM: RejectReason.WRONG_FORM,
    GROUNDED: RejectReason.UNGROUNDED,
    BOTH_SENTENCES: RejectReason.SINGLE_SENTENCE,
    PREMISE: RejectReason.FALSE_PREMISE,
    SELF_CONTAINED: RejectReason.NOT_SELF_CONTAINED,
    BORROWED: RejectReason.UNGROUNDED,
    LANGUAGE: RejectReason.WRONG_FORM,
}
#: A question whose passage's language lingua gives less confidence than this is written in
#: another language. Human questions of the tune parts never score under 0.22 (French, "Qu'est-ce
#: que l'Ouadia ?") or 0.27 (English, "What did Toyota rebrand its Forte as?").
OTHER_LANGUAGE_CONFIDENCE = 0.1
#: Words a yes/no question opens with (an auxiliary or modal before its subject; French
#: "Est-ce que ...").
YES_NO_OPENERS = NON_LEXICAL_VERBS - {"been", "being", "done", "doing", "having"} | {"est-ce"}
#: French subject inversion ("Les Normands ont-ils ...?", "A-t-il ...?"), a yes/no question
#: unless a question word opens it.
_INVERSION = re.compile(r"\w-(?:t-)?(?:il|elle|ils|elles|on)\b", re.IGNORECASE)
_FRENCH_QUESTION_WORDS = frozenset(
    "qui que qu quoi quel quelle quels quelles lequel laquelle où quand pourquoi comment "
    "combien".split()
)
#: A second question joined to the first (", and what was ..."): two golds, no one answer.
_SECOND_QUESTION = re.compile(
    r",\s*(?:and|or|et|ou)\s+(?:what|who|whom|whose|which|where|when|why|how|qui|que|quel|"
    r"quelle|quels|quelles|où|quand|pourquoi|comment|combien)\b",
    re.IGNORECASE,
)
#: Words that rank what a question asks about ("the first fief", "the only ruler").
RANKING_WORDS = frozenset({"first", "last", "only", "sole"})
#: The ranking words a yes/no question may swap for each other to make a "no".
ORDER_WORDS = frozenset({"first", "last"})
#: How a yes/no question asks "only" without the word ("Were there any other groups that gave
#: their name to Normandy besides the Normans?").
EXCLUSIVE = re.compile(
    r"\b(?:besides|apart from|other than|except|any other|no other|anyone else|anything else)\b",
    re.IGNORECASE,
)
#: Words that claim something of every member ("all birds", "always"): a yes/no question may
#: say one only where its sentence says how many ("all", "most", "some", "except"), or it asks
#: about what the passage is silent on. Not "never": a question copies it from a description
#: more often than it asks it ("a low never before seen by the team").
UNIVERSAL_WORDS = frozenset("all always every everyone everybody everything everywhere".split())
QUANTIFIER_WORDS = UNIVERSAL_WORDS | frozenset(
    "never none each both any most some many few several usually often".split()
)
#: Words that make the word after them a superlative ("the most prescribed").
SUPERLATIVE_MARKERS = frozenset({"most", "least"})
IRREGULAR_SUPERLATIVES = frozenset({"best", "worst"})
#: Dependents (UD relations, subtypes aside) that say which one a noun means ("acl" only
#: with words of its own).
IDENTIFYING_DEPRELS = frozenset({"nmod", "appos", "nummod", "flat"})
#: Marks that open a quotation.
QUOTE_MARKS = frozenset({"'", '"', "\u2018", "\u201c"})
#: Relations of a clause's arguments, and of clauses that an expletive "it" stands for.
ARGUMENT_DEPRELS = frozenset({"nsubj", "obj", "iobj", "obl", "nmod"})
CLAUSAL_DEPRELS = frozenset({"ccomp", "xcomp", "csubj", "advcl"})
CLAUSE_UPOS = frozenset({"VERB", "AUX"})
#: Words that name something on their own ("Harvard", "1636").
ANCHOR_UPOS = frozenset({"PROPN", "NUM"})
#: Words that can say what kind of thing a noun is: "the financial crisis", "the ruling class".
CLASSIFYING_UPOS = frozenset({"ADJ", "VERB"})
#: Entity labels (OntoNotes) of dates and amounts: they narrow a question, they name nothing.
AMOUNT_LABELS = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "MONEY", "PERCENT", "QUANTITY"})


def explanation_is_complete(answer: Answer, explanation: str, lemmatize: Lemmatizer) -> CheckResult:
    """III-C1 Completeness: the entity appears in the explanation; for a relation, the whole
    triple (both entities and the relation) does. Matched on words and on lemmas."""
    if answer.triple is None:
        parts = [answer.text]
    else:
        parts = [answer.triple.subject, answer.triple.relation, answer.triple.object]
    missing = [part for part in parts if not occurs_in(part, explanation, lemmatize)]
    if missing:
        return CheckResult(
            name=COMPLETE, passed=False, detail=f"explanation lacks {', '.join(missing)}"
        )
    return CheckResult(name=COMPLETE, passed=True)


def relation_verbs(answer: Answer, lemmatize: Lemmatizer) -> set[str]:
    """The lexical verbs (lemmas) of a relation answer: what a question must not give away."""
    verbs = {lemma for lemma, upos in lemmatize(answer.text) if upos == "VERB"}
    if answer.lemma:
        verbs.add(answer.lemma.lower())
    return verbs - NON_LEXICAL_VERBS


def leaked_words(
    answer: Answer, question: str, lemmatize: Lemmatizer, rule: LeakRule = "paper"
) -> list[str]:
    """What of ``answer`` shows in ``question`` (III-C1 "the answer itself must not appear in
    the generated question").

    ``paper``: the answer's text, as written or lemma for lemma (articles, case, punctuation
    and inflection aside); for a relation, any of its verbs (lemmas). ``strict`` also counts any
    noun of an answer phrase.
    """
    leaks: list[str] = []
    question_lemmas = lemma_words(question, lemmatize)
    context_lemmas = without_articles(
        words(answer.lemma or "")
    )  # the answer as parsed in its context
    if occurs_in(answer.text, question, lemmatize):
        leaks.append(answer.text)
    elif answer.kind is not AnswerKind.RELATION and contains_run(
        without_articles(question_lemmas), context_lemmas
    ):
        leaks.append(answer.lemma or "")
    if answer.kind is AnswerKind.RELATION:
        leaks += [verb for verb in relation_verbs(answer, lemmatize) if verb in question_lemmas]
    if rule == "strict" and answer.kind is AnswerKind.ENTITY_PHRASE:
        leaks += [n for n in answer.head_nouns if n.lower() in question_lemmas]
    return sorted(set(leaks))


def answer_leaks_into_question(
    answer: Answer, question: str, lemmatize: Lemmatizer, rule: LeakRule = "paper"
) -> CheckResult:
    """III-C1 Avoiding information leakage: the answer must not appear in its question."""
    leaks = leaked_words(answer, question, lemmatize, rule)
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


def ranks(text: str) -> set[str]:
    """The ranking words of a text, inside hyphenated words too ("first-ever")."""
    return {part for word in words(text) for part in word.split("-")} & RANKING_WORDS


def exclusive(text: str) -> set[str]:
    """{"only"} when a text says it without the word ("besides", "any other", "anyone else")."""
    return {"only"} if EXCLUSIVE.search(text) else set()


def universals(text: str) -> set[str]:
    """The words of a text that claim something of every member ("all", "always")."""
    return set(words(text)) & UNIVERSAL_WORDS


def says_how_many(text: str) -> bool:
    """Whether a text says of how many its statement holds ("in most birds", "except in some
    groups", "all biomass"), so that a question adding "all" or "always" to it can be told."""
    return bool(set(words(text)) & QUANTIFIER_WORDS) or bool(exclusive(text))


def superlatives(text: str, lemmatize: Lemmatizer) -> set[str]:
    """The superlatives of a text: "most" or "least" before another word ("the most
    prescribed"; not "most of", "at least"), "best" and "worst", and an adjective or adverb
    whose -est form the text has ("fastest", "largest", "biggest", "happiest")."""
    said = words(text)
    found = {
        f"{word} {after}"
        for before, word, after in zip(["", *said[:-1]], said, [*said[1:], ""], strict=True)
        if word in SUPERLATIVE_MARKERS and after not in {"", "of"} and before != "at"
    }
    found |= set(said) & IRREGULAR_SUPERLATIVES
    for lemma, upos in lemmatize(text):
        if upos in {"ADJ", "ADV"} and len(lemma) > 2:
            stem = lemma[:-1] if lemma[-1] in "ey" else lemma
            forms = {stem + "est", lemma + lemma[-1] + "est", stem + "iest"} - {lemma}
            found |= forms & set(said)
    return found


def question_adds_no_ranking(
    answer: Answer, question: str, lemmatize: Lemmatizer | None = None
) -> CheckResult:
    """A span question ranks its answer only as its sentences do: "What was the first fief
    formed by the Normans ...?" for "Duchy of Normandy", where the passage says "a great fief",
    asks about a fact the passage never states (a false premise), and its gold answers another
    question. Its cost on human questions is measured by ``evals.validity --rule-costs``.

    A yes/no question may rank only where its sentence ranks: "Were the Normans the only people
    who gave their name to Normandy?" asks about something the passage is silent on, so
    neither "yes" nor "no" is its answer, and no more is "Were there any other groups that gave
    their name to Normandy besides the Normans?" (``EXCLUSIVE``: "only" in other words); "Was
    Rollo the last ruler?" of "Rollo was their first ruler" swaps a rank the sentence gives,
    which is how a "no" question is made. Given ``lemmatize``, the same holds for a yes/no
    question's superlatives ("Is Vistaril the most prescribed preparation?" of a sentence that
    names it among others). And a yes/no question may claim something of every member ("all",
    "always", "every") only where its sentence says of how many its statement holds: "Are
    filoplumes and down present on the skin of all birds?" of "Filoplumes and down may arise
    from the apterylae" is silent, "Are contour feathers always distributed uniformly ...?" of
    "not uniformly distributed ... except in some groups" is a "no"."""
    yes_no = answer.kind is AnswerKind.YES_NO
    evidence = ranks(answer.sentence) | ranks(answer.bridge or "")
    if yes_no:
        evidence |= exclusive(answer.sentence) | exclusive(answer.bridge or "")
    if yes_no and evidence & ORDER_WORDS:
        evidence |= ORDER_WORDS
    asked = ranks(question) | (exclusive(question) if yes_no else set())
    if yes_no and not (says_how_many(answer.sentence) or says_how_many(answer.bridge or "")):
        asked |= universals(question)  # "Are filoplumes present on the skin of all birds?"
    added = sorted(asked - evidence)
    if yes_no and lemmatize is not None and not added:
        stated = superlatives(answer.sentence, lemmatize)
        added = [] if stated else sorted(superlatives(question, lemmatize))
    if added:
        said = ", ".join(f'"{word}"' for word in added)
        return CheckResult(
            name=PREMISE, passed=False, detail=f"says {said}, which its sentence does not"
        )
    return CheckResult(name=PREMISE, passed=True)


def is_yes_no_question(question: str) -> bool:
    """A question that opens with an auxiliary or a modal ("Did Rollo ...?", "Is it ...?")."""
    first = words(question)[:3]
    if first and first[0] in YES_NO_OPENERS:
        return True
    opening = {part for word in first for part in re.split(r"['’-]", word)}
    return bool(_INVERSION.search(question)) and not opening & _FRENCH_QUESTION_WORDS


#: Words a question cannot end on: an article, a conjunction, a preposition with no "?" after
#: it ("What did the University do to organize itself into"), or a possessive.
_OPEN_ENDS = ARTICLES | frozenset(
    "and or but nor of to in on at by for with from into onto upon over under about as than".split()
)


def is_cut_off(question: str) -> bool:
    """A question that stops in the middle of a phrase: no question mark, and its last word is
    one no question ends on ("What is the significance of Agassiz's")."""
    said = words(question)
    if not said or question.rstrip().endswith("?"):
        return False
    return said[-1] in _OPEN_ENDS or said[-1].endswith(("'s", "’s"))


def question_has_its_form(answer: Answer, question: str) -> CheckResult:
    """A question stands on its own: it does not copy the prompt's blank ("... incursions of
    _____ war bands ..."), does not stop in the middle of a phrase and does not ask a second
    question (", and what was ..."). A yes/no target needs a yes/no question; an unanswerable
    one must not be one (its only honest answer would be "no", not an abstention)."""
    if shows_blank(question):
        return CheckResult(name=FORM, passed=False, detail="copies the blank of its prompt")
    if is_cut_off(question):
        return CheckResult(name=FORM, passed=False, detail="stops in the middle of a phrase")
    if _SECOND_QUESTION.search(question):
        return CheckResult(name=FORM, passed=False, detail="asks two questions in one")
    yes_no = is_yes_no_question(question)
    if answer.kind is AnswerKind.YES_NO and not yes_no:
        return CheckResult(name=FORM, passed=False, detail="not a yes/no question")
    if answer.kind is AnswerKind.UNANSWERABLE and yes_no:
        return CheckResult(name=FORM, passed=False, detail="a yes/no question")
    return CheckResult(name=FORM, passed=True)


def _lemmas(text: str, lemmatize: Lemmatizer, upos: frozenset[str]) -> set[str]:
    return {lemma for lemma, tag in lemmatize(text) if tag in upos}


def explanation_is_grounded(answer: Answer, explanation: str, lemmatize: Lemmatizer) -> CheckResult:
    """Completeness for a yes/no target (III-C1 in spirit): the explanation quotes its sentence,
    sharing at least two of its content words."""
    shared = _lemmas(answer.sentence, lemmatize, CONTENT_UPOS) & _lemmas(
        explanation, lemmatize, CONTENT_UPOS
    )
    if len(shared) < 2:
        return CheckResult(name=COMPLETE, passed=False, detail="explanation does not quote it")
    return CheckResult(name=COMPLETE, passed=True)


ExplanationCheck = Callable[[Answer, str, Lemmatizer], CheckResult]


def explanation_check(answer: Answer) -> ExplanationCheck | None:
    """The check a generated question's explanation goes through for ``answer``'s kind, as
    ``check_question`` runs it: Completeness (III-C1) for a span or a relation, the quote of
    its sentence for yes/no; None for an unanswerable question, whose explanation no check
    reads."""
    kind = answer.kind.question_kind
    if kind == "unanswerable":
        return None
    return explanation_is_grounded if kind == "yesno" else explanation_is_complete


def question_is_grounded(answer: Answer, question: str, lemmatize: Lemmatizer) -> CheckResult:
    """An unanswerable question is about its sentence's topic: it names a noun of it."""
    if _lemmas(answer.sentence, lemmatize, NOUN_UPOS) & _lemmas(question, lemmatize, NOUN_UPOS):
        return CheckResult(name=GROUNDED, passed=True)
    return CheckResult(name=GROUNDED, passed=False, detail="names nothing of its sentence")


def question_uses_both_sentences(
    answer: Answer, question: str, lemmatize: Lemmatizer
) -> CheckResult:
    """A multi-sentence question uses a fact of its second sentence: with a pivot
    (``cq2a.answers.kinds.Bridge``), it names the pivot by its description, as the generator's
    question is rewritten to (``cq2a.generation.bridging``); without one, it has a content
    word that only the second sentence has."""
    if answer.pivot and answer.description:
        if described(question, answer.description):
            return CheckResult(name=BOTH_SENTENCES, passed=True)
        return CheckResult(
            name=BOTH_SENTENCES, passed=False, detail=f'does not contain "{answer.pivot}"'
        )
    only_bridge = _lemmas(answer.bridge or "", lemmatize, CONTENT_UPOS) - _lemmas(
        answer.sentence, lemmatize, CONTENT_UPOS
    )
    if only_bridge & _lemmas(question, lemmatize, CONTENT_UPOS):
        return CheckResult(name=BOTH_SENTENCES, passed=True)
    return CheckResult(
        name=BOTH_SENTENCES, passed=False, detail="uses nothing only the second sentence says"
    )


#: Letters of a word that must open a word of the passage for the word to be the passage's
#: ("Frankish" and "Francia", "Norman" and "Normandy").
NAME_STEM = 4


def _fold(word: str) -> str:
    """``word`` with case and accents aside."""
    folded = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in folded if not unicodedata.combining(c))


def _stem(word: str) -> str:
    return _fold(word)[:NAME_STEM]


@dataclass(frozen=True)
class Grounding:
    """What ``question_borrows_no_name`` reads: the passage, and the names the generation
    prompts' examples use (``cq2a.generation.questions.example_names``)."""

    passage: str
    example_names: frozenset[str]
    #: the passage's title (its article's, its document's), whose capitalised words are names
    title: str | None = None
    #: the passage's language (ISO 639-1), which its questions must be written in
    language: str | None = None

    @cached_property
    def stems(self) -> frozenset[str]:
        """The passage's words as names are matched to them, read once for all its
        questions."""
        return frozenset(_stem(word) for word in re.findall(r"\w+", self.passage))

    @cached_property
    def names(self) -> frozenset[str]:
        """The words the passage writes capitalised inside a sentence, and its title's: its
        names, to which a question's word written in lower case is matched ("algérienne",
        "Algérie")."""
        return passage_names(self.passage, self.title)


#: What ends a sentence, or opens a quotation, before a capitalised word that is no name.
_SENTENCE_OPENERS = frozenset('.!?…:«"“')


def passage_names(passage: str, title: str | None = None) -> frozenset[str]:
    """The words (accents and case aside) ``passage`` writes with a capital inside a
    sentence, not after a full stop or at its start, and every capitalised word of its
    ``title`` (a title is mostly names: "Algérie")."""
    names = {_fold(word) for word in re.findall(r"\w+", title or "") if word[:1].isupper()}
    for match in re.finditer(r"\w+", passage):
        if not match.group()[:1].isupper():
            continue
        before = match.start() - 1
        while before >= 0 and passage[before].isspace():
            before -= 1
        if before >= 0 and passage[before] not in _SENTENCE_OPENERS:
            names.add(_fold(match.group()))
    return frozenset(names)


def question_in_passage_language(question: str, language: str) -> CheckResult:
    """A question is written in its passage's language (``OTHER_LANGUAGE_CONFIDENCE``): a
    small generator asked for French questions now and then writes English ones ("Where did
    Yoweri Kaguta grow up?"), which a French test suite cannot hold. Names in another
    language do not make one ("Dans quelle guerre ... du King's African Rifles ?")."""
    confidence, likeliest = language_confidence(question, language)
    if confidence < OTHER_LANGUAGE_CONFIDENCE:
        detail = f"written in {language_name(likeliest)}, not {language_name(language)}"
        return CheckResult(name=LANGUAGE, passed=False, detail=detail)
    return CheckResult(name=LANGUAGE, passed=True)


def question_borrows_no_name(
    question: str, grounding: Grounding, lemmatize: Lemmatizer
) -> CheckResult:
    """A question names no name of the prompts' examples that its passage never mentions
    ("Est-ce que ... a épuisé Rollon ?" of a passage on Jakob Böhme): the generator copied it
    from its example instead of reading the passage. A name counts as mentioned when a word of
    the passage begins with its first letters, accents and case aside."""
    borrowed = [
        lemma
        for lemma, tag in lemmatize(question)
        if tag == "PROPN"
        and lemma.lower() in grounding.example_names
        and _stem(lemma) not in grounding.stems
    ]
    if borrowed:
        names = ", ".join(dict.fromkeys(borrowed))
        detail = f"names {names}, which the passage never mentions"
        return CheckResult(name=BORROWED, passed=False, detail=detail)
    return CheckResult(name=BORROWED, passed=True)


def _dependents(sentence: Sentence, head: Token) -> list[Token]:
    return [token for token in sentence.tokens if token.head == head.index]


def _has_digits(token: Token) -> bool:
    return any(ch.isdigit() for ch in token.text)


def _is_identified(sentence: Sentence, noun: Token, names: frozenset[str]) -> bool:
    """Whether a noun phrase says which one it means beyond its determiner: a prepositional
    modifier (or its stranded preposition, "the coast of"), a clause with words of its own, an
    apposition or a quotation, a number or a date, or a name, also inside a compound ("that
    year of the war", "this Norman ruler", "the 12th century", "the Norman architecture
    idiom")."""
    if _has_digits(noun) or _is_capitalised(noun) or _is_quoted_after(sentence, noun):
        return True
    if _is_made_from_a_name(noun, names):
        return True
    if _is_named_after(sentence, noun):
        return True
    return any(_identifies(sentence, noun, d, names) for d in _dependents(sentence, noun))


def _is_named_after(sentence: Sentence, noun: Token) -> bool:
    """ "the religious charity, al-Haramain Foundation": a name set off by a comma right after
    the noun is its apposition, wherever the parser attaches it, unless the name is a clause's
    subject ("After the war, Britain ...")."""
    after = sentence.tokens[noun.index : noun.index + 2]
    if len(after) < 2 or after[0].text != "," or after[1].upos != "PROPN":
        return False
    name = after[1]
    while name.deprel == "compound" and name.head > name.index:
        name = sentence.tokens[name.head - 1]
    return name.upos == "PROPN" and not name.deprel.startswith("nsubj")


def _is_quoted_after(sentence: Sentence, noun: Token) -> bool:
    """ "the word 'Norman'": a quotation right after the noun says which one, wherever the
    parser attaches it."""
    following = sentence.tokens[noun.index : noun.index + 1]
    return any(t.text in QUOTE_MARKS and t.deprel != "case" for t in following)  # not "the kings'"


def _identifies(sentence: Sentence, noun: Token, dependent: Token, names: frozenset[str]) -> bool:
    relation = dependent.deprel.split(":")[0]
    if _has_digits(dependent) or dependent.upos in ANCHOR_UPOS:
        return True
    if dependent.deprel == "nmod:poss":
        return dependent.upos != "PRON"
    if relation == "acl":
        return _has_words(sentence, dependent)  # "the castle built in 1066", not "the base called"
    if relation == "compound":
        return _names_something(sentence, dependent)
    if relation == "amod":
        # an adjective made from a name ("the Frankish identity", "la cuisine algérienne")
        return _is_capitalised(dependent) or _is_made_from_a_name(dependent, names)
    return relation in IDENTIFYING_DEPRELS or _is_stranded(noun, dependent)


def _is_capitalised(token: Token) -> bool:
    """A capitalised word inside a sentence: a name, or a word made from one ("the third
    Crusade", "Frankish")."""
    return token.index > 1 and token.text[:1].isupper()


def _is_made_from_a_name(token: Token, names: frozenset[str]) -> bool:
    """A name, or an adjective made from one, written in lower case: an adjective whose first
    letters open a name of the passage ("algérienne" of "Algérie", "kabyles" of "Kabylie"),
    a noun the passage writes as a name ("les abbassides"). ``names`` (``passage_names``) is
    empty where the language capitalises such adjectives."""
    if token.upos == "ADJ":
        return any(_stem(token.text) == name[:NAME_STEM] for name in names)
    return token.upos in NOUN_UPOS and _fold(token.text) in names


def _is_stranded(noun: Token, dependent: Token) -> bool:
    """A preposition after its noun, whose object was moved away ("What continent is it off
    the coast of?")."""
    return dependent.deprel == "case" and dependent.index > noun.index


def _has_words(sentence: Sentence, head: Token) -> bool:
    return any(d.upos not in {"PUNCT", "PART"} for d in _dependents(sentence, head))


def _names_something(sentence: Sentence, token: Token) -> bool:
    """A proper noun or a number in ``token``'s subtree."""
    if token.upos in ANCHOR_UPOS or _has_digits(token):
        return True
    return any(_names_something(sentence, d) for d in _dependents(sentence, token))


def _points_at_the_text(
    sentence: Sentence, token: Token, lexicon: DeixisLexicon, names: frozenset[str]
) -> bool:
    """ "the passage", "the author": a noun naming the text, asked about as it is and not as a
    kind ("what document", "the author of Hamlet")."""
    if token.upos != "NOUN" or token.lemma.lower() not in lexicon.text_nouns:
        return False
    asked = any(d.lemma.lower() in lexicon.interrogatives for d in _dependents(sentence, token))
    return not asked and not _is_identified(sentence, token, names)


def _demonstrative_without_referent(
    sentence: Sentence, token: Token, lexicon: DeixisLexicon, names: frozenset[str]
) -> bool:
    """ "this reason", "that year", "what was that": a demonstrative determiner on a noun that
    nothing else identifies, or a demonstrative pronoun as an argument (a relative "that" heads
    no argument of its own clause's head noun, and is left alone)."""
    if token.lemma.lower() not in lexicon.demonstratives:
        return False
    if token.upos == "DET" and token.deprel == "det" and token.head:
        noun = sentence.tokens[token.head - 1]
        return noun.upos == "NOUN" and not _is_identified(sentence, noun, names)
    if token.upos == "PRON" and token.deprel.split(":")[0] in ARGUMENT_DEPRELS and token.head:
        return sentence.tokens[token.head - 1].deprel != "acl:relcl"
    return False


def _is_expletive(sentence: Sentence, token: Token, lexicon: DeixisLexicon) -> bool:
    """ "How long did it take to build ...", "What does it mean when ...": an "it" whose head
    has a clause after it stands for that clause, not for a thing."""
    if token.deprel == "expl":
        return True
    if not token.head or token.lemma.lower() not in lexicon.expletives:
        return False
    return any(
        d.deprel.split(":")[0] in CLAUSAL_DEPRELS
        and d.upos in CLAUSE_UPOS
        and d.index > token.index
        for d in _dependents(sentence, sentence.tokens[token.head - 1])
    )


def _pronoun_without_antecedent(
    sentence: Sentence, token: Token, lexicon: DeixisLexicon, seen_noun: bool
) -> bool:
    """ "What did he do?": a third-person pronoun as an argument or possessor with no noun
    before it in the question to refer to."""
    if token.upos != "PRON" or token.lemma.lower() not in lexicon.anaphoric_pronouns:
        return False
    if token.deprel.split(":")[0] not in ARGUMENT_DEPRELS and token.deprel != "nmod:poss":
        return False
    return not seen_noun and not _is_expletive(sentence, token, lexicon)


def _asks_for_subject(token: Token, lexicon: DeixisLexicon) -> bool:
    """ "Who gave their name to ...": an interrogative subject binds the pronouns after it."""
    return (
        token.upos == "PRON"
        and token.deprel.startswith("nsubj")
        and token.lemma.lower() in lexicon.interrogatives
    )


def _unanchored_definite(
    sentence: Sentence, token: Token, lexicon: DeixisLexicon, names: frozenset[str]
) -> bool:
    """ "the school", "the main campus": a definite common noun that nothing in its own phrase
    identifies, whatever else the question names ("When did Saudi Arabia join the embargo?").
    Nouns with one referent anywhere ("the world") are left alone."""
    if token.upos != "NOUN" or token.deprel.split(":")[0] not in ARGUMENT_DEPRELS:
        return False
    if token.deprel == "nmod:poss":
        return False
    if token.lemma.lower() in lexicon.unique_nouns:
        return False
    articles = [d for d in _dependents(sentence, token) if d.deprel == "det"]
    definite = any(d.lemma.lower() in lexicon.definite_articles for d in articles)
    if not definite or _is_classified(sentence, token, lexicon):
        return False
    return not _is_identified(sentence, token, names)


def _is_classified(sentence: Sentence, noun: Token, lexicon: DeixisLexicon) -> bool:
    """ "the financial crisis", "the ruling class", "the uncooperative countries": an adjective
    that says what kind of thing the noun is makes a description a reader can place with the
    rest of the question. One that places or counts it ("the main campus", "the first
    building", "the best students": ``lexicon.relative_adjectives``, ordinals, comparatives
    and superlatives) does not. Only for a definite noun: "the given text" and "this
    important reason" still lean on the passage."""
    return any(
        _classifies(sentence, d, lexicon) for d in _dependents(sentence, noun) if d.deprel == "amod"
    )


def _classifies(sentence: Sentence, adjective: Token, lexicon: DeixisLexicon) -> bool:
    """An adjective on its own (an adverb at most: "the highly rated school"); one with words
    of its own is a predicate the parser hung on the noun ("the school able to bring",
    "le point culminant de l'île")."""
    return (
        adjective.upos in CLASSIFYING_UPOS
        and adjective.lemma.lower() not in lexicon.relative_adjectives
        and adjective.feature("NumType") != "Ord"
        and adjective.feature("Degree") not in {"Cmp", "Sup"}
        and adjective.xpos not in lexicon.superlative_tags
        and all(d.deprel == "advmod" for d in _dependents(sentence, adjective))
    )


def leaning_words(
    sentences: Sequence[Sentence],
    lexicon: DeixisLexicon = ENGLISH,
    passage_names: frozenset[str] = frozenset(),
) -> list[str]:
    """What in a parsed question leans on its passage, each as "word (why)". ``passage_names``
    (``Grounding.names``) are read only where the language writes a name's adjective in lower
    case (``lexicon.lowercase_name_adjectives``)."""
    names = passage_names if lexicon.lowercase_name_adjectives else frozenset()
    found: list[str] = []
    seen_noun = False
    for sentence in sentences:
        for token in sentence.tokens:
            if _points_at_the_text(sentence, token, lexicon, names):
                found.append(f"{token.text} (names the text)")
            elif _demonstrative_without_referent(sentence, token, lexicon, names):
                found.append(f"{token.text} (points into the passage)")
            elif _pronoun_without_antecedent(sentence, token, lexicon, seen_noun):
                found.append(f"{token.text} (no antecedent)")
            elif _unanchored_definite(sentence, token, lexicon, names):
                found.append(f"the {token.text} (names nothing the corpus can tell apart)")
            seen_noun = seen_noun or token.upos in NOUN_UPOS or _asks_for_subject(token, lexicon)
    if not found and _names_nothing(sentences, lexicon, names):
        found.append("(names nothing but dates and amounts)")
    return found


def _dates_a_definite_noun(sentence: Sentence, token: Token, lexicon: DeixisLexicon) -> bool:
    """ "1973" in "the 1973 oil crisis": a date inside the phrase of a definite noun that
    follows it, which makes a name of the phrase ("post 2008 undergraduates" is no name)."""
    head = sentence.tokens[token.head - 1] if token.head else None
    if head is None or head.upos != "NOUN" or head.index < token.index:
        return False
    articles = [d for d in _dependents(sentence, head) if d.deprel == "det"]
    return any(d.lemma.lower() in lexicon.definite_articles for d in articles)


def _names_nothing(
    sentences: Sequence[Sentence], lexicon: DeixisLexicon, names: frozenset[str]
) -> bool:
    """ "What is the total cost of attendance in 2012-13?", "How many courses must
    undergraduates take?": no name in the whole question, only common nouns, dates and
    amounts, so nothing says whose cost or which undergraduates. A capitalised word inside the
    question is a name whatever its tag. A date before its noun
    ("the 1973 oil crisis") names an event, a superlative ("the world's largest library
    system"), a noun with one referent anywhere ("the market") or a quoted
    term ("what does 'float' mean") singles out what it asks about."""
    for sentence in sentences:
        amounts = {
            index
            for entity in sentence.entities
            if entity.label in AMOUNT_LABELS
            for index in range(entity.start, entity.end + 1)
        }
        dates = {
            index
            for entity in sentence.entities
            if entity.label == "DATE"
            for index in range(entity.start, entity.end + 1)
        }
        if any(entity.label not in AMOUNT_LABELS for entity in sentence.entities):
            return False
        for token in sentence.tokens:
            if (token.upos == "PROPN" or _is_capitalised(token)) and token.index not in amounts:
                return False  # the parser takes a rare name for a verb: "Who kicked Ethelred out?"
            if token.index in dates and _dates_a_definite_noun(sentence, token, lexicon):
                return False
            if token.xpos in lexicon.superlative_tags or token.text in lexicon.quotation_marks:
                return False
            if _is_made_from_a_name(token, names):
                return False
            if token.upos == "NOUN" and token.lemma.lower() in lexicon.unique_nouns:
                return False
    return True


def question_stands_alone(
    sentences: Sequence[Sentence],
    lexicon: DeixisLexicon = ENGLISH,
    passage_names: frozenset[str] = frozenset(),
) -> CheckResult:
    """For a system that gets the question alone (``sut.input == "question"``): the question
    names what it asks about, so that over a whole corpus only its own passage answers it. Read
    off its parse (UD tags and lemmas, ``lexicon`` for the closed classes): it may not name
    the text ("according to the passage"), point with a demonstrative at something nothing
    else identifies ("for this reason"), use a third-person pronoun with no noun before it
    ("What did he do?"), or rest on a definite noun that nothing in its phrase identifies,
    even beside a name ("When was the school founded?", "Who founded the school in 1636?").
    A name's adjective identifies its noun ("the Frankish identity"); in a language that
    writes it in lower case ("la cuisine algérienne"), it is known by a name of the passage
    (``passage_names``, ``Grounding.names``). Not in the paper, whose SUT reads the passage
    (III-C1's spirit: a question is judged as the SUT will see it)."""
    leaning = leaning_words(sentences, lexicon, passage_names)
    if leaning:
        return CheckResult(
            name=SELF_CONTAINED, passed=False, detail=f"leans on its passage: {', '.join(leaning)}"
        )
    return CheckResult(name=SELF_CONTAINED, passed=True)


def check_question(
    answer: Answer,
    question: str,
    explanation: str,
    *,
    lemmatize: Lemmatizer,
    min_chars: int,
    max_chars: int,
    leak_rule: LeakRule = "paper",
    parse_question: QuestionParse | None = None,
    deixis: DeixisLexicon = ENGLISH,
    grounding: Grounding | None = None,
) -> list[CheckResult]:
    """The III-C1 constraints on one candidate question. Lexical validity is a property of the
    answer alone, checked once at extraction (``answer_is_lexically_valid``).

    Yes/no and unanswerable questions have no span answer to leak or to explain: a yes/no
    question must have its form, an explanation that quotes its sentence and no rank its
    sentence does not give, an unanswerable one must be about its sentence's topic. A span
    question may not rank its answer ("first", "only") where its sentences do not. A
    multi-sentence question has the span checks and must use its second sentence. Given
    ``parse_question`` (a SUT that gets the question alone), every question must also stand
    alone (``question_stands_alone``, with the closed classes of the question's language,
    ``deixis``). Given ``grounding``, no question of any kind may name what only the prompts'
    examples name (``question_borrows_no_name``), and, given the passage's language, every
    question must be written in it (``question_in_passage_language``)."""
    results = _question_checks(
        answer, question, explanation, lemmatize, min_chars, max_chars, leak_rule
    )
    if grounding is not None:
        results.append(question_borrows_no_name(question, grounding, lemmatize))
        if grounding.language:
            results.append(question_in_passage_language(question, grounding.language))
    if parse_question is not None:
        names = grounding.names if grounding is not None else frozenset()
        results.append(question_stands_alone(parse_question(question), deixis, names))
    return results


def _question_checks(
    answer: Answer,
    question: str,
    explanation: str,
    lemmatize: Lemmatizer,
    min_chars: int,
    max_chars: int,
    leak_rule: LeakRule,
) -> list[CheckResult]:
    length = question_length_is_ok(question, min_chars, max_chars)
    kind = answer.kind.question_kind
    explain = explanation_check(answer)
    explained = [explain(answer, explanation, lemmatize)] if explain is not None else []
    if kind == "yesno":
        return [
            question_has_its_form(answer, question),
            *explained,
            length,
            question_adds_no_ranking(answer, question, lemmatize),
        ]
    if kind == "unanswerable":
        return [
            question_has_its_form(answer, question),
            question_is_grounded(answer, question, lemmatize),
            length,
        ]
    results = [
        *explained,
        answer_leaks_into_question(answer, question, lemmatize, leak_rule),
        length,
        question_mentions_both_entities(answer, question),
        question_has_its_form(answer, question),
        question_adds_no_ranking(answer, question),
    ]
    if kind == "multi_sentence":
        results.append(question_uses_both_sentences(answer, question, lemmatize))
    return results


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


def apply_constraints(
    candidate: Candidate,
    lemmatize: Lemmatizer,
    *,
    min_chars: int,
    max_chars: int,
    leak_rule: LeakRule,
    parse_question: QuestionParse | None = None,
    deixis: DeixisLexicon = ENGLISH,
    grounding: Grounding | None = None,
) -> Candidate:
    """Run the III-C1 checks on the current attempt and record any rejection reasons; a
    question that passes them all goes on to be re-asked."""
    attempt = candidate.current
    results = check_question(
        candidate.answer,
        attempt.question,
        attempt.explanation,
        lemmatize=lemmatize,
        min_chars=min_chars,
        max_chars=max_chars,
        leak_rule=leak_rule,
        parse_question=parse_question,
        deixis=deixis,
        grounding=grounding,
    )
    reasons = rejection_reasons(results)
    checked = with_attempt(candidate, checks=results, reasons=reasons)
    return checked if reasons else checked.model_copy(update={"next_step": "reask"})


#: Where a question that passed its checks in an earlier round waits, until accepted.
PAST_CHECKS = ("reask", "compare")


@dataclass(frozen=True, kw_only=True)
class CheckLimits:
    """What ``check_round`` reads from a run's settings."""

    #: Question length bounds, in characters.
    min_question_chars: int
    max_question_chars: int
    leak_rule: LeakRule
    #: Similarity over which a question is a near-duplicate of an earlier one.
    dedup_threshold: float
    #: Generation attempts per slot, after which a rejected slot is settled.
    max_attempts: int


def check_round(
    candidates: Sequence[Candidate],
    lemmatize: Lemmatizer,
    similarity_matrix: SimilarityMatrix,
    limits: CheckLimits,
    parse_question: QuestionParse | None = None,
    deixis: DeixisLexicon = ENGLISH,
    grounding: Grounding | None = None,
) -> list[Candidate]:
    """III-C1 over every candidate waiting for its checks, then near-duplicate removal; returns
    every candidate of the context, settled. ``parse_question`` is given when the SUT gets the
    question alone: each question must then stand alone too (``deixis``: its language's
    closed classes). ``grounding``: the passage and the prompts' example names, which no
    question may borrow."""
    checked = [
        apply_constraints(
            candidate,
            lemmatize,
            min_chars=limits.min_question_chars,
            max_chars=limits.max_question_chars,
            leak_rule=limits.leak_rule,
            parse_question=parse_question,
            deixis=deixis,
            grounding=grounding,
        )
        for candidate in at_step(candidates, "check")
    ]
    passed = at_step(checked, "reask")
    # Questions kept from earlier rounds win over this round's: accepted ones, and those still
    # on their way to acceptance.
    earlier = [c for c in candidates if c.status == "accepted" or c.next_step in PAST_CHECKS]
    deduped = (
        mark_duplicates(passed, earlier, similarity_matrix, limits.dedup_threshold)
        if passed
        else []
    )
    by_id = {c.id: c for c in [*checked, *deduped]}
    # Every slot leaves settled, including one of an older checkpoint whose generation failed
    # on its last attempt (see Candidate's implied step).
    return [settle(by_id.get(c.id, c), limits.max_attempts) for c in candidates]
