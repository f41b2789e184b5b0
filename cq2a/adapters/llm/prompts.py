"""Prompt templates live as text files in ``prompts/`` (package ``cq2a.prompts``), by name."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from string import Template

from cq2a.language.detect import language_name

#: ``prompts/`` of a source checkout, used when ``cq2a.prompts`` is not importable (not installed).
_CHECKOUT_PROMPTS = Path(__file__).resolve().parents[1] / "prompts"


@cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.txt``; raises FileNotFoundError naming the prompt."""
    try:
        resource = resources.files("cq2a.prompts").joinpath(f"{name}.txt")
    except ModuleNotFoundError:
        resource = _CHECKOUT_PROMPTS / f"{name}.txt"
    if not resource.is_file():
        raise FileNotFoundError(f"no prompt named {name!r} in cq2a/prompts")
    return resource.read_text(encoding="utf-8").strip()


def render_prompt(name: str, **values: object) -> str:
    """Fill a template's ``$placeholders``; a missing value raises KeyError naming it."""
    return Template(load_prompt(name)).substitute({k: str(v) for k, v in values.items()})


def system_prompt(name: str, language: str | None) -> str:
    """The system prompt ``name`` for a passage in ``language``: the language's own file where
    wording matters (``prompts/<language>/<name>.txt``: the generation prompts in French, with
    a French example), else the English one followed by the language requirement
    (``_with_requirement``). English's is the file itself."""
    own = _language_file(name, language)
    return own if own is not None else _with_requirement(load_prompt(name), language)


def own_prompt(name: str, language: str | None) -> str:
    """``prompts/<language>/<name>.txt`` where the language has its own wording of a passage
    of a prompt (the French requirement that questions stand alone, with French examples),
    else the English file."""
    own = _language_file(name, language)
    return own if own is not None else load_prompt(name)


def _language_file(name: str, language: str | None) -> str | None:
    """``prompts/<language>/<name>.txt`` for a language other than English that has one."""
    if language in (None, "en"):
        return None
    try:
        return load_prompt(f"{language}/{name}")
    except FileNotFoundError:
        return None


def _with_requirement(system: str, language: str | None) -> str:
    """A system prompt for a passage in ``language`` (ISO 639-1): English's unchanged, any
    other's followed by ``prompts/language_requirement.txt`` naming the language, so that
    questions, answers and explanations come in the passage's language."""
    if language in (None, "en"):
        return system
    requirement = render_prompt("language_requirement", language=language_name(language))
    return f"{system}\n\n{requirement}"
