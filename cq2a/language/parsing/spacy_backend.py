"""The offline parser: spaCy's small English pipeline, converted to UD tokens and NP/VP spans.

spaCy's English models label dependencies with the ClearNLP scheme and have no constituency
parser, so this module (1) maps the labels to Universal Dependencies, re-attaching prepositions
the UD way, and (2) builds the phrases the paper reads from Stanza's constituency trees out of
dependency subtrees:

* NP: for every noun (NOUN/PROPN) that is not part of a multi-word name (``compound``), its whole
  subtree, plus its base chunk (left dependents up to the noun) when post-modifiers follow. This
  mirrors the Penn Treebank's ``(NP (NP base) PP/SBAR)`` nesting Stanza produces.
* VP: for every content verb, or a copula heading its clause, the verb with the auxiliaries,
  negation and adverbs right before it and all dependents to its right up to a coordination.
* clause_tokens: words of embedded clauses inside a phrase (relative, adverbial, complement,
  infinitival and prepositional-complement clauses), the analogue of S/SBAR nodes (III-A1).

Pipelines trained on Universal Dependencies treebanks (French ``fr_core_news_*``) label
dependencies in UD already: their labels are kept, and the same phrases are read from their
trees with UD's labels (``UD_SCHEME``), the preposition and determiner that head a UD noun's
subtree (``case``) left out of its NP, the copula and auxiliaries out of the VP heads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from cq2a.language.lexicon import NOUN_UPOS, is_written_number
from cq2a.language.parsing.base import (
    SPACY_FIX,
    SPACY_MODEL,
    ParserUnavailable,
    sentence_of,
    spacy_models,
)
from cq2a.models.records import Context, EntitySpan, ParsedContext, Phrase, Sentence, Token

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span
    from spacy.tokens import Token as SpacyToken

Relations = dict[int, tuple[int | None, str]]
PhraseLabel = Literal["NP", "VP"]

#: ClearNLP label -> UD label. ``prep``/``pobj``/``pcomp``/``agent`` are also re-attached (UD
#: makes the object the head and the preposition its ``case``/``mark``). Copulas are not
#: re-attached: ``attr``/``acomp``/``oprd`` stay dependents of the verb (labelled ``xcomp``), so
#: ``be`` remains an AUX head. ``dep`` and ``meta`` have no UD counterpart and map to ``dep``.
CLEARNLP_TO_UD: dict[str, str] = {
    "ROOT": "root",
    "acl": "acl",
    "acomp": "xcomp",
    "advcl": "advcl",
    "advmod": "advmod",
    "agent": "case",
    "amod": "amod",
    "appos": "appos",
    "attr": "xcomp",
    "aux": "aux",
    "auxpass": "aux:pass",
    "case": "case",
    "cc": "cc",
    "ccomp": "ccomp",
    "compound": "compound",
    "conj": "conj",
    "csubj": "csubj",
    "csubjpass": "csubj:pass",
    "dative": "iobj",
    "dep": "dep",
    "det": "det",
    "dobj": "obj",
    "expl": "expl",
    "intj": "discourse",
    "mark": "mark",
    "meta": "dep",
    "neg": "advmod",
    "nmod": "nmod",
    "npadvmod": "obl:npmod",
    "nsubj": "nsubj",
    "nsubjpass": "nsubj:pass",
    "nummod": "nummod",
    "oprd": "xcomp",
    "parataxis": "parataxis",
    "pcomp": "advcl",
    "pobj": "obl",
    "poss": "nmod:poss",
    "preconj": "cc:preconj",
    "predet": "det:predet",
    "prep": "case",
    "prt": "compound:prt",
    "punct": "punct",
    "quantmod": "advmod",
    "relcl": "acl:relcl",
    "xcomp": "xcomp",
}

#: ClearNLP labels whose subtree is an embedded clause (Penn S/SBAR).
CLAUSE_DEPS = frozenset({"relcl", "ccomp", "advcl", "xcomp", "csubj", "csubjpass", "parataxis"})
#: Labels whose dependent is preposition-like and heads an object in ClearNLP.
PREPOSITION_DEPS = frozenset({"prep", "agent", "dative"})
#: Heads after which a prepositional object is an ``obl`` rather than an ``nmod``.
PREDICATE_POS = frozenset({"VERB", "AUX", "ADJ", "ADV"})
#: Left dependents that belong to a verb phrase (Penn puts them inside the VP).
VP_LEFT_DEPS = frozenset({"aux", "auxpass", "neg", "advmod"})
VP_STOP_DEPS = frozenset({"cc", "conj"})
#: The longest quotation in guillemets kept inside one sentence (a name or a title).
MAX_QUOTATION_TOKENS = 12
#: A group of three digits after a number ("000" of "100 000").
THOUSANDS = re.compile(r"\d{3}(?:[.,]\d+)?")
#: Month names (lemmas) of the languages whose pipelines tag no dates (French).
MONTHS = frozenset(
    "janvier février mars avril mai juin juillet août septembre octobre novembre décembre".split()
)


@dataclass(frozen=True)
class Scheme:
    """The dependency labels a pipeline writes, as the phrase rules read them."""

    #: Labels whose subtree is an embedded clause (Penn S/SBAR).
    clause_deps: frozenset[str]
    #: Left dependents of a verb that belong to its phrase.
    vp_left_deps: frozenset[str]
    #: Dependents that are part of a name or fixed expression, not a noun of their own.
    name_parts: frozenset[str]
    #: Verbs or auxiliaries with these labels do not head a verb phrase of their own.
    not_vp_heads: frozenset[str]
    #: Left dependents that a noun's NP leaves out (UD's prepositions heading a noun's subtree).
    np_left_out: frozenset[str]
    #: Whether the labels are UD already (else ClearNLP, mapped by ``CLEARNLP_TO_UD``).
    ud: bool


CLEARNLP_SCHEME = Scheme(
    clause_deps=CLAUSE_DEPS,
    vp_left_deps=VP_LEFT_DEPS,
    name_parts=frozenset({"compound"}),
    not_vp_heads=frozenset({"aux", "auxpass"}),
    np_left_out=frozenset(),
    ud=False,
)
UD_SCHEME = Scheme(
    clause_deps=frozenset(
        {"acl:relcl", "ccomp", "advcl", "xcomp", "csubj", "csubj:pass", "parataxis"}
    ),
    vp_left_deps=frozenset(
        {"aux", "aux:pass", "aux:tense", "aux:caus", "advmod", "expl:pv", "expl:comp", "cop"}
    ),
    name_parts=frozenset({"compound", "flat", "flat:name", "flat:foreign", "fixed"}),
    not_vp_heads=frozenset({"aux", "aux:pass", "aux:tense", "aux:caus", "cop"}),
    np_left_out=frozenset({"case", "mark", "cc", "punct"}),
    ud=True,
)


def _root_relation(token: SpacyToken, scheme: Scheme) -> tuple[int | None, str]:
    head = None if token.head.i == token.i else token.head.i
    if scheme.ud:
        return head, "root" if head is None else token.dep_.lower()
    return head, CLEARNLP_TO_UD.get(token.dep_, "dep")


def _ud_relations(sent: Span, scheme: Scheme) -> Relations:
    """Map each token (doc index) to its UD (head doc index or None for root, deprel)."""
    relations = {token.i: _root_relation(token, scheme) for token in sent}
    if scheme.ud:
        return relations
    for token in sent:
        if token.dep_ == "aux" and token.tag_ == "TO":
            relations[token.i] = (relations[token.i][0], "mark")
        if token.dep_ in PREPOSITION_DEPS or (token.dep_ == "ROOT" and token.pos_ == "ADP"):
            _reattach_preposition(token, relations)
    return relations


def _reattach_preposition(prep: SpacyToken, relations: Relations) -> None:
    obj = next((c for c in prep.children if c.dep_ in {"pobj", "pcomp"}), None)
    if obj is None:
        return
    head = relations[prep.i][0]
    predicate = head is not None and prep.head.pos_ in PREDICATE_POS
    if obj.dep_ == "pcomp":
        label = "advcl" if predicate else "acl"
    elif prep.dep_ == "agent":
        label = "obl:agent"
    else:
        label = "obl" if predicate else "nmod"
    relations[obj.i] = (head, label if head is not None else "root")
    relations[prep.i] = (obj.i, "mark" if obj.dep_ == "pcomp" else "case")


def _np_start(noun: SpacyToken, scheme: Scheme) -> int:
    """Where a noun's NP begins: its subtree's left edge, past the prepositions (UD ``case``)
    that head it there ("de la Normandie" -> "la Normandie")."""
    start = noun.left_edge.i
    for child in noun.lefts:
        if child.left_edge.i != start or child.dep_.lower() not in scheme.np_left_out:
            break
        start = child.right_edge.i + 1
    return start


def _noun_phrase_spans(sent: Span, scheme: Scheme) -> Iterable[tuple[int, int, SpacyToken]]:
    for token in sent:
        if token.pos_ not in NOUN_UPOS or token.dep_.lower() in scheme.name_parts:
            continue
        start = _np_start(token, scheme)
        yield start, token.right_edge.i, token
        if token.i < token.right_edge.i:
            yield start, token.i, token


def _is_vp_head(token: SpacyToken, scheme: Scheme) -> bool:
    if token.pos_ == "VERB" and not scheme.ud:
        return True
    return token.pos_ in {"VERB", "AUX"} and token.dep_.lower() not in scheme.not_vp_heads


def _verb_phrase_span(verb: SpacyToken, scheme: Scheme) -> tuple[int, int]:
    start = verb.i
    for child in reversed(list(verb.lefts)):
        if child.dep_.lower() not in scheme.vp_left_deps or child.right_edge.i != start - 1:
            break
        start = child.left_edge.i
    end = verb.i
    for child in verb.rights:
        if child.dep_ in VP_STOP_DEPS:
            break
        if child.dep_ != "punct":
            end = child.right_edge.i
    return start, end


def _is_clause_root(token: SpacyToken, scheme: Scheme) -> bool:
    dep = token.dep_.lower()
    if dep in scheme.clause_deps or dep == "pcomp":
        return True
    if dep != "acl":
        return False
    if scheme.ud:  # an infinitival or subordinate clause: "le droit de voter"
        return token.pos_ in {"VERB", "AUX"} and any(c.dep_ == "mark" for c in token.lefts)
    return any(c.tag_ == "TO" for c in token.lefts)


def _clause_members(sent: Span, start: int, end: int, head: SpacyToken, scheme: Scheme) -> set[int]:
    members: set[int] = set()
    for token in sent.doc[start : end + 1]:
        if token.i != head.i and token.i not in members and _is_clause_root(token, scheme):
            members.update(t.i for t in token.subtree if start <= t.i <= end)
    return members


def _phrases(sent: Span, index_of: dict[int, int], scheme: Scheme) -> list[Phrase]:
    spans: list[tuple[int, int, SpacyToken, PhraseLabel]] = [
        (s, e, h, "NP") for s, e, h in _noun_phrase_spans(sent, scheme)
    ]
    spans += [(*_verb_phrase_span(t, scheme), t, "VP") for t in sent if _is_vp_head(t, scheme)]
    phrases: dict[tuple[str, int, int], Phrase] = {}
    for start, end, head, label in spans:
        kept = [index_of[i] for i in range(start, end + 1) if i in index_of]
        if not kept or (label, kept[0], kept[-1]) in phrases:
            continue
        members = _clause_members(sent, start, end, head, scheme)
        clause = sorted(index_of[i] for i in members if i in index_of)
        phrases[(label, kept[0], kept[-1])] = Phrase(
            label=label, start=kept[0], end=kept[-1], clause_tokens=clause
        )
    return sorted(phrases.values(), key=lambda p: (p.start, -p.end, p.label))


def _entities(sent: Span, index_of: dict[int, int], scheme: Scheme) -> list[EntitySpan]:
    """The NER spans of a sentence, in token indices of the shared representation. A UD
    pipeline's spans lose a leading preposition ("de France"), and get the dates its NER does
    not tag (French models tag persons, places, organisations and others only)."""
    spans = []
    for entity in sent.ents:
        words = list(entity)
        while scheme.ud and len(words) > 1 and words[0].pos_ == "ADP":
            words = words[1:]
        words = _english_possessive(sent, words[0].i) + words
        kept = [index_of[t.i] for t in words if t.i in index_of]
        if kept:
            spans.append(EntitySpan(label=entity.label_, start=kept[0], end=kept[-1]))
    if scheme.ud:
        dates = _dates(sent)
        spans += [
            EntitySpan(label="DATE", start=index_of[start], end=index_of[end])
            for start, end in dates
            if start in index_of and end in index_of
        ]
        taken = {i for entity in sent.ents for i in range(entity.start, entity.end)}
        taken |= {i for start, end in dates for i in range(start, end + 1)}
        spans += [
            EntitySpan(label=label, start=index_of[start], end=index_of[end])
            for label, start, end in _amounts(sent, taken)
            if start in index_of and end in index_of
        ]
    return spans


def _english_possessive(sent: Span, start: int) -> list[SpacyToken]:
    """ "King's African Rifles" in a French sentence: French tokenization cuts an English
    possessive as an elision ("King'" + "s"), and the NER then tags the name from the word
    after it; the capitalised owner and its "s" belong to the name."""
    if start - 2 < sent.start:
        return []
    owner, ending = sent.doc[start - 2], sent.doc[start - 1]
    elided = owner.text[-1:] in {"'", "\u2019"} and not owner.whitespace_
    if elided and owner.text[:1].isupper() and ending.text.lower() == "s":
        return [owner, ending]
    return []


def _amounts(sent: Span, taken: set[int]) -> list[tuple[str, int, int]]:
    """Numbers and amounts as the parse gives them, for pipelines whose NER tags none (French):
    a number in digits with the groups of three that follow it ("100 000", "28 250"), or a
    number word ("trois"), as ``CARDINAL``; with a "%" right after it as ``PERCENT`` ("50 %").
    Tokens of a name or a date (``taken``) are left to them."""
    amounts = []
    i = sent.start
    while i < sent.end:
        token = sent.doc[i]
        spelled = token.pos_ == "NUM" and token.like_num and not is_written_number(token.text)
        if i in taken or not (is_written_number(token.text) or spelled):
            i += 1
            continue
        end = i
        while (
            is_written_number(token.text)
            and end + 1 < sent.end
            and end + 1 not in taken
            and THOUSANDS.fullmatch(sent.doc[end + 1].text)
            and len(sent.doc[end].text.split(",")[0]) <= 3
        ):
            end += 1
        label = "CARDINAL"
        if end + 1 < sent.end and sent.doc[end + 1].text == "%":
            end, label = end + 1, "PERCENT"
        amounts.append((label, i, end))
        i = end + 1
    return amounts


def _dates(sent: Span) -> list[tuple[int, int]]:
    """Dates as the parse gives them: a month name with the day number before it and the year
    after it, where they are there ("le 15 juin 1815", "juin 1815"); month names from
    ``MONTHS``, by lemma."""
    dates = []
    for token in sent:
        if token.lemma_.lower() not in MONTHS:
            continue
        start = end = token.i
        before = sent.doc[start - 1] if start > sent.start else None
        if before is not None and before.like_num and len(before.text) <= 2:
            start -= 1
        after = sent.doc[end + 1] if end + 1 < sent.end else None
        if after is not None and after.like_num and len(after.text) == 4:
            end += 1
        if (start, end) != (token.i, token.i):
            dates.append((start, end))
    return dates


def _token(token: SpacyToken, index: int, head: int, deprel: str) -> Token:
    return Token(
        index=index,
        text=token.text,
        lemma=token.lemma_ or token.text,
        upos=token.pos_,
        xpos=token.tag_,
        head=head,
        deprel=deprel,
        start=token.idx,
        end=token.idx + len(token.text),
        morph=str(token.morph),
    )


def _ud_head(doc_index: int | None, relations: Relations, index_of: dict[int, int]) -> int:
    while doc_index is not None and doc_index not in index_of:
        doc_index = relations[doc_index][0]
    return 0 if doc_index is None else index_of[doc_index]


def _sentence(sent: Span, number: int, text: str, scheme: Scheme) -> Sentence | None:
    words = [t for t in sent if not t.is_space]
    if not words:
        return None
    index_of = {t.i: n for n, t in enumerate(words, start=1)}
    relations = _ud_relations(sent, scheme)
    tokens = [
        _token(t, index_of[t.i], _ud_head(head, relations, index_of), deprel)
        for t in words
        for head, deprel in [relations[t.i]]
    ]
    phrases = _phrases(sent, index_of, scheme)
    return sentence_of(number, text, tokens, phrases, _entities(sent, index_of, scheme))


def from_spacy_doc(
    doc: Doc,
    context_id: str,
    parser: str = f"spacy:{SPACY_MODEL}",
    scheme: Scheme = CLEARNLP_SCHEME,
) -> ParsedContext:
    """Convert a parsed spaCy ``Doc`` into the shared representation (pure; no model needed)."""
    sentences: list[Sentence] = []
    for sent in doc.sents:
        sentence = _sentence(sent, len(sentences), doc.text, scheme)
        if sentence is not None:
            sentences.append(sentence)
    return ParsedContext(context_id=context_id, parser=parser, sentences=sentences)


def paragraph_breaks(doc: Doc) -> Doc:
    """A blank line ends a sentence: a document's heading ("Travel" above "Travel must be
    booked...") is a sentence of its own, not the subject of the next one. And no sentence
    starts inside a short quotation in guillemets: French pipelines otherwise cut a quoted
    name ("L'association « Ulis Pêche | Passion » organise...")."""
    for token in doc[1:]:
        before = doc[token.i - 1]
        if before.is_space and before.text.count("\n") >= 2 and not token.is_space:
            token.is_sent_start = True
    for start, end in _quotations(doc):
        for token in doc[start + 1 : end + 1]:
            token.is_sent_start = False
    return doc


def _quotations(doc: Doc) -> list[tuple[int, int]]:
    """Token indices of each « » pair at most ``MAX_QUOTATION_TOKENS`` apart, with no sentence
    end inside."""
    pairs, opening = [], None
    for token in doc:
        if token.text == "«":
            opening = token.i
        elif token.text == "»" and opening is not None:
            inside = doc[opening + 1 : token.i]
            if len(inside) <= MAX_QUOTATION_TOKENS and not any(
                t.text in {".", "!", "?"} for t in inside
            ):
                pairs.append((opening, token.i))
            opening = None
    return pairs


def load_spacy(model: str = SPACY_MODEL, fix: str = SPACY_FIX) -> Language:
    """Load the spaCy pipeline, or raise ``ParserUnavailable`` naming the install command.
    Blank lines end sentences before the parser runs (``paragraph_breaks``)."""
    try:
        import spacy

        nlp = spacy.load(model)
    except (ImportError, OSError) as error:
        message = f"spaCy model {model!r} is not installed: run `{fix}`"
        raise ParserUnavailable(message) from error
    if not type(nlp).has_factory("paragraph_breaks"):
        type(nlp).component("paragraph_breaks", func=paragraph_breaks)
    if "parser" in nlp.pipe_names and "paragraph_breaks" not in nlp.pipe_names:
        nlp.add_pipe("paragraph_breaks", before="parser")
    return nlp


def scheme_of(nlp: Language) -> Scheme:
    """The label scheme of a pipeline's parser: ClearNLP (English models) or UD."""
    parser = nlp.get_pipe("parser") if "parser" in nlp.pipe_names else None
    labels = getattr(parser, "labels", ())
    return CLEARNLP_SCHEME if "pobj" in labels else UD_SCHEME


def installed_spacy_model(language: str) -> tuple[str, str]:
    """The first installed spaCy pipeline for ``language`` and its install command; the
    first listed one when none is (loading it then says what to install)."""
    import importlib.util

    candidates = spacy_models(language)
    for name, fix in candidates:
        if importlib.util.find_spec(name) is not None:
            return name, fix
    return candidates[0]


class SpacyParser:
    """Parses contexts with a spaCy pipeline loaded once."""

    def __init__(self, model: str = SPACY_MODEL, fix: str = SPACY_FIX) -> None:
        self.name = f"spacy:{model}"
        self._nlp = load_spacy(model, fix)
        self._scheme = scheme_of(self._nlp)

    def parse(self, context: Context) -> ParsedContext:
        return from_spacy_doc(self._nlp(context.context), context.id, self.name, self._scheme)

    def parse_many(self, contexts: list[Context], batch_size: int = 16) -> list[ParsedContext]:
        """Parse several contexts in one ``nlp.pipe`` stream (faster than one call each)."""
        docs = self._nlp.pipe((c.context for c in contexts), batch_size=batch_size)
        return [
            from_spacy_doc(d, c.id, self.name, self._scheme)
            for d, c in zip(docs, contexts, strict=True)
        ]
