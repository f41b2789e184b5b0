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
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from cq2a.language.lexicon import NOUN_UPOS
from cq2a.language.parsing.base import SPACY_FIX, SPACY_MODEL, ParserUnavailable, sentence_of
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


def _root_relation(token: SpacyToken) -> tuple[int | None, str]:
    head = None if token.head.i == token.i else token.head.i
    return head, CLEARNLP_TO_UD.get(token.dep_, "dep")


def _ud_relations(sent: Span) -> Relations:
    """Map each token (doc index) to its UD (head doc index or None for root, deprel)."""
    relations = {token.i: _root_relation(token) for token in sent}
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


def _noun_phrase_spans(sent: Span) -> Iterable[tuple[int, int, SpacyToken]]:
    for token in sent:
        if token.pos_ not in NOUN_UPOS or token.dep_ == "compound":
            continue
        yield token.left_edge.i, token.right_edge.i, token
        if token.i < token.right_edge.i:
            yield token.left_edge.i, token.i, token


def _is_vp_head(token: SpacyToken) -> bool:
    if token.pos_ == "VERB":
        return True
    return token.pos_ == "AUX" and token.dep_ not in {"aux", "auxpass"}


def _verb_phrase_span(verb: SpacyToken) -> tuple[int, int]:
    start = verb.i
    for child in reversed(list(verb.lefts)):
        if child.dep_ not in VP_LEFT_DEPS or child.right_edge.i != start - 1:
            break
        start = child.left_edge.i
    end = verb.i
    for child in verb.rights:
        if child.dep_ in VP_STOP_DEPS:
            break
        if child.dep_ != "punct":
            end = child.right_edge.i
    return start, end


def _is_clause_root(token: SpacyToken) -> bool:
    if token.dep_ in CLAUSE_DEPS or token.dep_ == "pcomp":
        return True
    return token.dep_ == "acl" and any(c.tag_ == "TO" for c in token.lefts)


def _clause_members(sent: Span, start: int, end: int, head: SpacyToken) -> set[int]:
    members: set[int] = set()
    for token in sent.doc[start : end + 1]:
        if token.i != head.i and token.i not in members and _is_clause_root(token):
            members.update(t.i for t in token.subtree if start <= t.i <= end)
    return members


def _phrases(sent: Span, index_of: dict[int, int]) -> list[Phrase]:
    spans: list[tuple[int, int, SpacyToken, PhraseLabel]] = [
        (s, e, h, "NP") for s, e, h in _noun_phrase_spans(sent)
    ]
    spans += [(*_verb_phrase_span(t), t, "VP") for t in sent if _is_vp_head(t)]
    phrases: dict[tuple[str, int, int], Phrase] = {}
    for start, end, head, label in spans:
        kept = [index_of[i] for i in range(start, end + 1) if i in index_of]
        if not kept or (label, kept[0], kept[-1]) in phrases:
            continue
        members = _clause_members(sent, start, end, head)
        clause = sorted(index_of[i] for i in members if i in index_of)
        phrases[(label, kept[0], kept[-1])] = Phrase(
            label=label, start=kept[0], end=kept[-1], clause_tokens=clause
        )
    return sorted(phrases.values(), key=lambda p: (p.start, -p.end, p.label))


def _entities(sent: Span, index_of: dict[int, int]) -> list[EntitySpan]:
    """The NER spans of a sentence, in token indices of the shared representation."""
    spans = []
    for entity in sent.ents:
        kept = [index_of[t.i] for t in entity if t.i in index_of]
        if kept:
            spans.append(EntitySpan(label=entity.label_, start=kept[0], end=kept[-1]))
    return spans


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
    )


def _ud_head(doc_index: int | None, relations: Relations, index_of: dict[int, int]) -> int:
    while doc_index is not None and doc_index not in index_of:
        doc_index = relations[doc_index][0]
    return 0 if doc_index is None else index_of[doc_index]


def _sentence(sent: Span, number: int, text: str) -> Sentence | None:
    words = [t for t in sent if not t.is_space]
    if not words:
        return None
    index_of = {t.i: n for n, t in enumerate(words, start=1)}
    relations = _ud_relations(sent)
    tokens = [
        _token(t, index_of[t.i], _ud_head(head, relations, index_of), deprel)
        for t in words
        for head, deprel in [relations[t.i]]
    ]
    return sentence_of(number, text, tokens, _phrases(sent, index_of), _entities(sent, index_of))


def from_spacy_doc(
    doc: Doc, context_id: str, parser: str = f"spacy:{SPACY_MODEL}"
) -> ParsedContext:
    """Convert a parsed spaCy ``Doc`` into the shared representation (pure; no model needed)."""
    sentences: list[Sentence] = []
    for sent in doc.sents:
        sentence = _sentence(sent, len(sentences), doc.text)
        if sentence is not None:
            sentences.append(sentence)
    return ParsedContext(context_id=context_id, parser=parser, sentences=sentences)


def paragraph_breaks(doc: Doc) -> Doc:
    """A blank line ends a sentence: a document's heading ("Travel" above "Travel must be
    booked...") is a sentence of its own, not the subject of the next one."""
    for token in doc[1:]:
        before = doc[token.i - 1]
        if before.is_space and before.text.count("\n") >= 2 and not token.is_space:
            token.is_sent_start = True
    return doc


def load_spacy(model: str = SPACY_MODEL) -> Language:
    """Load the spaCy pipeline, or raise ``ParserUnavailable`` naming the install command.
    Blank lines end sentences before the parser runs (``paragraph_breaks``)."""
    try:
        import spacy

        nlp = spacy.load(model)
    except (ImportError, OSError) as error:
        message = f"spaCy model {model!r} is not installed: run `{SPACY_FIX}`"
        raise ParserUnavailable(message) from error
    if not type(nlp).has_factory("paragraph_breaks"):
        type(nlp).component("paragraph_breaks", func=paragraph_breaks)
    if "parser" in nlp.pipe_names and "paragraph_breaks" not in nlp.pipe_names:
        nlp.add_pipe("paragraph_breaks", before="parser")
    return nlp


class SpacyParser:
    """Parses contexts with a spaCy pipeline loaded once."""

    def __init__(self, model: str = SPACY_MODEL) -> None:
        self.name = f"spacy:{model}"
        self._nlp = load_spacy(model)

    def parse(self, context: Context) -> ParsedContext:
        return from_spacy_doc(self._nlp(context.context), context.id, self.name)

    def parse_many(self, contexts: list[Context], batch_size: int = 16) -> list[ParsedContext]:
        """Parse several contexts in one ``nlp.pipe`` stream (faster than one call each)."""
        docs = self._nlp.pipe((c.context for c in contexts), batch_size=batch_size)
        return [from_spacy_doc(d, c.id, self.name) for d, c in zip(docs, contexts, strict=True)]
