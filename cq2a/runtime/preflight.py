"""Before a run spends anything: every component it needs loads and answers once.

The parser parses a sentence, the embedder embeds two strings, the software under test answers
one tiny question and every LLM endpoint lists its models. A missing piece fails in seconds with
the exact fix, not after generation has been paid for. The judge probe (``cq2a.oracle.judge``) runs
right after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cq2a.adapters.sut.base import SUTQuery, answer_within
from cq2a.models.records import Context
from cq2a.runtime.services import Services

PREFLIGHT_CONTEXT = "The Normans gave their name to Normandy, a region in France."
PREFLIGHT_QUESTION = "To which region did the Normans give their name?"


class PreflightFailed(RuntimeError):
    """A component the run needs is missing or broken; the message says how to fix it."""


class JudgeProbeFailed(RuntimeError):
    """The judge could not tell a plainly wrong answer from an equivalent one."""


def _check(component: str, fix: str, step: Callable[[], Any]) -> None:
    try:
        step()
    except Exception as error:
        cause = str(error).strip().rstrip(".") or type(error).__name__
        raise PreflightFailed(f"{component} unavailable: {cause}. {fix}") from error


def check_parser(services: Services) -> None:
    context = Context(id="preflight", context=PREFLIGHT_CONTEXT)
    _check(
        f"parser {services.settings.parser!r}",
        "Run `cq2a doctor` for the install command.",
        lambda: services.parser.parse(context),
    )


def check_embedder(services: Services) -> None:
    _check(
        f"embedding model {services.settings.embedding_model!r}",
        "Run `cq2a doctor` for the install command.",
        lambda: services.embedder.similarity_pairs(["Normandy"], ["the region of Normandy"]),
    )


def check_sut(services: Services) -> None:

    spec = services.settings.sut

    def ask() -> None:
        context = None if spec.question_alone else PREFLIGHT_CONTEXT
        query = SUTQuery(question=PREFLIGHT_QUESTION, context=context)
        answers = answer_within(services.sut, [query], spec)
        if len(answers) != 1:
            raise ValueError(f"{len(answers)} answers for 1 question")

    _check(
        f"software under test {spec.kind}:{spec.model}",
        "Check --sut (KIND:MODEL) and that the system is up.",
        ask,
    )


def check_llm_endpoints(services: Services) -> None:
    """Every distinct endpoint of the three roles lists its models (a GET, no tokens spent)."""
    settings = services.settings
    models = ", ".join(dict.fromkeys(s.model for s in (settings.generator, settings.judge)))
    _check(
        f"LLM {models}",
        "Check the model name (a catalog name or a .gguf path for backend=local; "
        "`cq2a doctor` lists them) and the backend.",
        lambda: services.llm,
    )
    runtime = services.llm
    seen: set[str | None] = set()
    for role, client in (
        ("generator", runtime.generator),
        ("reasker", runtime.reasker),
        ("judge", runtime.judge),
    ):
        if client.base_url in seen:
            continue
        seen.add(client.base_url)
        where = client.base_url or "api.openai.com"
        _check(
            f"{role} LLM at {where}",
            "Check that the server is up and the URL and key are right (cq2a doctor).",
            client.list_models,
        )


def run_preflight(services: Services) -> None:
    """Raise ``PreflightFailed`` on the first component that does not work."""
    check_parser(services)
    check_embedder(services)
    check_llm_endpoints(services)
    check_sut(services)
