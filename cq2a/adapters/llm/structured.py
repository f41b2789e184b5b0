"""Structured output: the ``response_format`` that asks for a JSON schema, and the parse of a
completion into it (a ``Malformed`` record when it does not parse, never an exception)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.utils.json import parse_json_markdown, parse_partial_json
from pydantic import BaseModel, ValidationError

from cq2a.settings import LLMSpec

T = TypeVar("T", bound=BaseModel)

#: The word a streamed output may still be in the middle of.
_LAST_WORD = re.compile(r"\w+$")


class Malformed(BaseModel):
    """A structured completion that did not parse into its schema."""

    raw: str
    error: str


def response_format_for(
    spec: LLMSpec,
    schema: type[BaseModel],
    max_items: int | None = None,
    max_length: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The ``response_format`` for a JSON schema (llama.cpp's server turns it into a grammar
    that constrains decoding). ``max_items``: the most items the schema's lists may hold, so a
    model asked for one question writes one, not two of which one is thrown away;
    ``max_length``: the most characters of some of its string properties, by name."""
    json_schema = schema.model_json_schema()
    if max_items is not None or max_length:
        json_schema = bounded(json_schema, max_items, max_length or {})
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": json_schema, "strict": False},
    }


def bounded(
    json_schema: dict[str, Any], max_items: int | None, max_length: Mapping[str, int]
) -> dict[str, Any]:
    """``json_schema`` with ``maxItems`` on each of its top-level list properties and
    ``maxLength`` on the top-level string properties ``max_length`` names."""

    def bound(name: str, prop: dict[str, Any]) -> dict[str, Any]:
        if prop.get("type") == "array" and max_items is not None:
            return {**prop, "maxItems": max_items}
        if prop.get("type") == "string" and name in max_length:
            return {**prop, "maxLength": max_length[name]}
        return prop

    properties = json_schema.get("properties", {})
    return {**json_schema, "properties": {name: bound(name, p) for name, p in properties.items()}}


def parse_structured(text: str, schema: type[T]) -> T | Malformed:
    """Parse a completion into ``schema``; a fenced code block around the JSON is tolerated
    (LangChain's markdown JSON parser, with a strict JSON parser: a truncated output is
    malformed, not completed)."""
    try:
        return schema.model_validate(parse_json_markdown(text, parser=json.loads))
    except (ValidationError, ValueError) as error:
        return Malformed(raw=text[:2000], error=str(error).splitlines()[0][:300])


@dataclass(frozen=True)
class Until:
    """Stop a structured completion as soon as what it has written is ``enough``: the words a
    check reads are there, and what the model would write after them would be thrown away.

    ``enough`` gets the output written so far up to its last whole word (the word being written
    may go on: "Norman" of "Normandy" never counts), its open strings, lists and objects
    closed; the output kept is that closed prefix. ``name`` says which rule stops it, for the
    cache key (a choice cut short is another output than the whole one)."""

    name: str
    enough: Callable[[dict[str, Any]], bool]

    def reached(self, text: str) -> str | None:
        """The output to keep, once ``text`` (written so far) is enough; else None."""
        whole_words = _LAST_WORD.sub("", text)
        try:
            written = parse_partial_json(whole_words)
        except (ValueError, TypeError):
            return None
        if not isinstance(written, dict) or not self.enough(written):
            return None
        return json.dumps(written, ensure_ascii=False)
