"""Shared pytest fixtures."""

from collections.abc import Iterator

import pytest

from cq2a.language.parsing import Parser, get_parser, parser_available
from cq2a.testing.scripted_server import ScriptedLLMServer
from tests.services import Postgres, running_postgres


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLMServer]:
    """A started scripted OpenAI-compatible server with empty rules (add them via `.rules.on`)."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture(scope="session")
def spacy_parser() -> Parser:
    """The offline default parser (real model), or a skip naming its install command."""
    usable, fix = parser_available("spacy")
    if not usable:
        pytest.skip(f"spaCy model missing: {fix}")
    return get_parser("spacy")


@pytest.fixture(scope="session")
def french_parser() -> Parser:
    """The French spaCy parser, part of the offline set-up (never a skip)."""
    available, fix = parser_available("spacy", "fr")
    assert available, f"the French spaCy model is part of the offline set-up: {fix}"
    return get_parser("spacy", "fr")


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A throwaway PostgreSQL cluster for the session (see tests/services.py)."""
    with running_postgres() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def postgres_url(postgres: Postgres) -> str:
    """`postgresql://postgres@127.0.0.1:PORT/cq2a_test`, trust auth, loopback only."""
    return postgres.url
