"""Shared pytest fixtures."""

from collections.abc import Iterator

import pytest

from cq2a.testing.scripted_server import ScriptedLLMServer


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLMServer]:
    """A started scripted OpenAI-compatible server with empty rules (add them via `.rules.on`)."""
    with ScriptedLLMServer() as server:
        yield server
