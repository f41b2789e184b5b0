"""Where one role's requests go, and with which key: the OpenAI API, an OpenAI-compatible server
(a llama.cpp server among them says how many slots it has), or a local llama.cpp server started
on first use."""

from __future__ import annotations

import os
from dataclasses import dataclass

from cq2a.adapters.llm.errors import LLMCallFailed
from cq2a.adapters.llm.local_server import get_local_server, server_slots
from cq2a.settings import LLMSpec


@dataclass(frozen=True)
class Endpoint:
    """Where one role's requests go, and how many sequences that server decodes at once
    (None: not a local server; the run's ``concurrency`` applies)."""

    base_url: str | None
    slots: int | None = None


def resolve_endpoint(spec: LLMSpec, model_dir: str | None = None, local_slots: int = 1) -> Endpoint:
    """Where requests for this spec go; starts the local server on first use."""
    if spec.backend == "openai":
        return Endpoint(spec.base_url)
    if spec.backend == "compatible":
        if not spec.base_url:
            raise ValueError("backend 'compatible' needs base_url (e.g. http://127.0.0.1:8000/v1)")

        # a llama.cpp server started elsewhere says how many slots it has; others say nothing
        return Endpoint(spec.base_url, server_slots(spec.base_url.rstrip("/")))

    server = get_local_server(spec.model, model_dir=model_dir, slots=local_slots)
    return Endpoint(server.base_url, server.slots)


def resolve_api_key(spec: LLMSpec) -> str:
    if spec.api_key is not None:
        return spec.api_key.get_secret_value()
    if spec.backend == "openai":
        key = os.environ.get("OPENAI_API_KEY")
        if not key:
            raise LLMCallFailed("backend 'openai' needs an API key: set OPENAI_API_KEY")
        return key
    return os.environ.get("OPENAI_API_KEY", "not-needed")
