"""Structured output: the ``response_format`` that asks for a JSON schema, and the parse of a
completion into it (a ``Malformed`` record when it does not parse, never an exception)."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from langchain_core.utils.json import parse_json_markdown
from pydantic import BaseModel, ValidationError

from cq2a.settings import LLMSpec

T = TypeVar("T", bound=BaseModel)


class Malformed(BaseModel):
    """A structured completion that did not parse into its schema."""

    raw: str
    error: str


def response_format_for(spec: LLMSpec, schema: type[BaseModel]) -> dict[str, Any]:
    """The ``response_format`` for a JSON schema (llama.cpp's server turns it into a grammar
    that constrains decoding)."""
    json_schema = schema.model_json_schema()
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": json_schema, "strict": False},
    }


def parse_structured(text: str, schema: type[T]) -> T | Malformed:
    """Parse a completion into ``schema``; a fenced code block around the JSON is tolerated
    (LangChain's markdown JSON parser, with a strict JSON parser: a truncated output is
    malformed, not completed)."""
    try:
        return schema.model_validate(parse_json_markdown(text, parser=json.loads))
    except (ValidationError, ValueError) as error:
        return Malformed(raw=text[:2000], error=str(error).splitlines()[0][:300])
