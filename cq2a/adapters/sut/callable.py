"""A Python function as the software under test: per query ``(question, context) -> str`` or a
batch function ``(list[SUTQuery]) -> list[str]``, given directly or as ``"module:function"``.

With ``sut.input = "question"`` a per-query function is still called with two arguments, the
context ``None`` (``f(question, None)``), and a batch function gets ``SUTQuery`` items whose
``context`` is None. A retrieval system may return, in place of an answer string, a dict
``{"answer": ..., "contexts": [passage, ...]}`` (or a ``SUTAnswer``) naming what it
retrieved; a function with ``index(passages)`` as an attribute is handed the run's passages
first (see ``QASystem``)."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from cq2a.adapters.sut.base import SUTAnswer, SUTError, SUTQuery, check_answers


def import_callable(target: str) -> Callable[..., Any]:
    """Resolve ``"package.module:function"`` (dotted attributes allowed after the colon)."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise SUTError(f"callable SUT must be 'module:function', got {target!r}")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as error:
        raise SUTError(f"cannot import callable SUT {target!r}: {error}") from error
    if not callable(value):
        raise SUTError(f"{target!r} is not callable")
    return value


def takes_batch(function: Callable[..., Any]) -> bool:
    """A function with one positional parameter is a batch function; with two, per query."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) == 1


class CallableSUT:
    """Calls a Python function; ``batch`` forces the calling style instead of detecting it."""

    def __init__(
        self, function: Callable[..., Any] | str, *, batch: bool | None = None, name: str = ""
    ) -> None:
        target = import_callable(function) if isinstance(function, str) else function
        self._function = target
        self.batch = takes_batch(target) if batch is None else batch
        label = function if isinstance(function, str) else getattr(target, "__name__", "function")
        self.name = name or f"callable:{label}"

    def index(self, passages: Sequence[tuple[str, str]]) -> None:
        """Hand the run's passages to a function that retrieves (one with ``index``)."""
        index = getattr(self._function, "index", None)
        if callable(index):
            index(passages)

    def answer(self, items: list[SUTQuery]) -> list[str | SUTAnswer]:
        if not items:
            return []
        try:
            if self.batch:
                answers = self._function(items)
            else:
                answers = [self._function(item.question, item.context) for item in items]
        except SUTError:
            raise
        except Exception as error:
            raise SUTError(f"{self.name} raised {type(error).__name__}: {error}") from error
        return check_answers(self.name, answers, len(items))
