"""The paper's parser (III-A1): Stanza's English pipeline with constituency trees.

NP and VP constituents become phrase spans; the words of clauses nested inside a phrase
(S, SBAR, SBARQ, SINV, SQ) become its ``clause_tokens``. Needs the Stanza English models,
which are downloaded on first use when the machine is online.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

from cq2a.language.parsing.base import (
    CLAUSE_LABELS,
    STANZA_MWT_PROCESSORS,
    STANZA_PROCESSORS,
    ParserUnavailable,
    sentence_of,
    stanza_fix,
)
from cq2a.models.records import Context, EntitySpan, ParsedContext, Phrase, Sentence, Token

if TYPE_CHECKING:
    from stanza.models.common.doc import Document, Word
    from stanza.models.common.doc import Sentence as StanzaSentence
    from stanza.models.constituency.parse_tree import Tree

#: Constituents read as phrases: the Penn Treebank's NP and VP, and the French Treebank's
#: verbal nucleus (VN) as a verb phrase.
PHRASE_LABELS: dict[str, Literal["NP", "VP"]] = {"NP": "NP", "VP": "VP", "VN": "VP"}


def _word_offsets(word: Word) -> tuple[int, int]:
    """Character span of a word; words split from a multi-word token take the token's span."""
    if word.start_char is not None and word.end_char is not None:
        return word.start_char, word.end_char
    return word.parent.start_char, word.parent.end_char


def _token(word: Word) -> Token:
    start, end = _word_offsets(word)
    return Token(
        index=word.id,
        text=word.text,
        lemma=word.lemma or word.text,
        upos=word.upos or "X",
        xpos=word.xpos or "",
        head=word.head or 0,
        deprel=word.deprel or "dep",
        start=start,
        end=end,
        morph=word.feats or "",
    )


def _leaf_count(tree: Tree) -> int:
    return 1 if tree.is_leaf() else sum(_leaf_count(child) for child in tree.children)


def _walk(tree: Tree, first: int) -> Iterator[tuple[Tree, int, int]]:
    """Yield every constituent with its 1-based inclusive leaf span, parents before children."""
    last = first + _leaf_count(tree) - 1
    yield tree, first, last
    offset = first
    for child in tree.children:
        if not child.is_leaf():
            yield from _walk(child, offset)
        offset += _leaf_count(child)


def _clause_tokens(phrase: Tree, first: int) -> list[int]:
    """Indices of words under clause nodes strictly inside ``phrase`` (III-A1)."""
    tokens: set[int] = set()
    for node, start, end in _walk(phrase, first):
        if node is not phrase and node.label in CLAUSE_LABELS:
            tokens.update(range(start, end + 1))
    return sorted(tokens)


def phrases_from_tree(tree: Tree) -> list[Phrase]:
    """NP/VP constituents of a constituency tree as phrase spans, deduplicated by span."""
    phrases: dict[tuple[str, int, int], Phrase] = {}
    for node, start, end in _walk(tree, 1):
        label = PHRASE_LABELS.get(node.label)
        if label is not None and (label, start, end) not in phrases:
            clause = _clause_tokens(node, start)
            phrases[(label, start, end)] = Phrase(
                label=label, start=start, end=end, clause_tokens=clause
            )
    return sorted(phrases.values(), key=lambda p: (p.start, -p.end, p.label))


def _entities(sentence: StanzaSentence, tokens: list[Token]) -> list[EntitySpan]:
    """The NER spans of a sentence (Stanza's ``ner`` processor), as word indices."""
    spans = []
    for entity in getattr(sentence, "ents", None) or []:
        inside = [t.index for t in tokens if entity.start_char <= t.start < entity.end_char]
        if inside:
            spans.append(EntitySpan(label=entity.type, start=inside[0], end=inside[-1]))
    return spans


def _sentence(sentence: StanzaSentence, number: int, text: str) -> Sentence:
    tokens = [_token(word) for word in sentence.words]
    tree = sentence.constituency
    if tree is not None and _leaf_count(tree) != len(tokens):
        message = f"sentence {number}: tree has {_leaf_count(tree)} leaves for {len(tokens)} words"
        raise ValueError(message)
    phrases = phrases_from_tree(tree) if tree is not None else []
    return sentence_of(number, text, tokens, phrases, _entities(sentence, tokens))


def from_stanza_document(
    doc: Document, context_id: str, parser: str = "stanza:en"
) -> ParsedContext:
    """Convert a Stanza ``Document`` (words + constituency trees) into the shared representation."""
    sentences = [
        _sentence(sentence, number, doc.text or "")
        for number, sentence in enumerate(s for s in doc.sentences if s.words)
    ]
    return ParsedContext(context_id=context_id, parser=parser, sentences=sentences)


def processors(language: str) -> str:
    """The processors of a language's pipeline: English's, others with multi-word tokens."""
    return STANZA_PROCESSORS if language == "en" else STANZA_MWT_PROCESSORS


def _build_pipeline(model_dir: str | None, language: str) -> Any:
    import stanza

    options: dict[str, Any] = {"processors": processors(language), "download_method": None}
    if model_dir is not None:
        options["dir"] = model_dir
    return stanza.Pipeline(language, verbose=False, **options)


def _pipeline_or_none(model_dir: str | None, language: str) -> Any | None:
    # Stanza signals missing resources with several exception types (FileNotFoundError,
    # ResourcesFileNotFoundError, ValueError, ...): any failure here means "models missing".
    try:
        return _build_pipeline(model_dir, language)
    except Exception:
        return None


def load_stanza(
    model_dir: str | None = None,
    download: Callable[..., Any] | None = None,
    language: str = "en",
) -> Any:
    """Load Stanza's pipeline for ``language``, downloading its models once if they are
    missing."""
    try:
        import stanza
    except ImportError as error:
        raise ParserUnavailable("stanza is not installed: run `pip install stanza`") from error
    pipeline = _pipeline_or_none(model_dir, language)
    if pipeline is not None:
        return pipeline
    options = {"dir": model_dir} if model_dir is not None else {}
    try:
        fetch = download or stanza.download
        fetch(language, processors=processors(language), verbose=False, **options)
        return _build_pipeline(model_dir, language)
    except Exception as error:  # offline, every download failure means the same thing
        message = (
            f"Stanza models for {language!r} are missing and could not be downloaded: "
            f"run `{stanza_fix(language)}` on a machine with internet access"
        )
        raise ParserUnavailable(message) from error


class StanzaParser:
    """Parses contexts with one language's Stanza pipeline loaded once."""

    def __init__(self, model_dir: str | None = None, language: str = "en") -> None:
        self.name = f"stanza:{language}"
        self._nlp = load_stanza(model_dir, language=language)

    def parse(self, context: Context) -> ParsedContext:
        return from_stanza_document(self._nlp(context.context), context.id, self.name)
