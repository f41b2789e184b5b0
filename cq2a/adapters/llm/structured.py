"""Structured output: the ``response_format`` that asks for a JSON schema, and the parse of a
completion into it (a ``Malformed`` record when it does not parse, never an exception)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from langchain_core.utils.json import parse_json_markdown
from pydantic import BaseModel, ValidationError

from cq2a.settings import LLMSpec

T = TypeVar("T", bound=BaseModel)


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
    if max_items is not None:
        json_schema = bounded_lists(json_schema, max_items)
    if max_length:
        json_schema = bounded_strings(json_schema, max_length)
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": json_schema, "strict": False},
    }


def bounded_lists(json_schema: dict[str, Any], max_items: int) -> dict[str, Any]:
    """``json_schema`` with ``maxItems`` on each of its top-level list properties."""
    properties = {
        name: {**prop, "maxItems": max_items} if prop.get("type") == "array" else prop
        for name, prop in json_schema.get("properties", {}).items()
    }
    return {**json_schema, "properties": properties}


def bounded_strings(json_schema: dict[str, Any], max_length: Mapping[str, int]) -> dict[str, Any]:
    """``json_schema`` with ``maxLength`` on the top-level string properties named."""
    properties = {
        name: {**prop, "maxLength": max_length[name]}
        if name in max_length and prop.get("type") == "string"
        else prop
        for name, prop in json_schema.get("properties", {}).items()
    }
    return {**json_schema, "properties": properties}


def parse_structured(text: str, schema: type[T]) -> T | Malformed:
    """Parse a completion into ``schema``; a fenced code block around the JSON is tolerated
    (LangChain's markdown JSON parser, with a strict JSON parser: a truncated output is
    malformed, not completed)."""
    try:
        return schema.model_validate(parse_json_markdown(text, parser=json.loads))
    except (ValidationError, ValueError) as error:
        return Malformed(raw=text[:2000], error=str(error).splitlines()[0][:300])
