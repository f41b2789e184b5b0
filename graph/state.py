"""The state of a run (all contexts) and of one context's subgraph, with their reducers."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict, TypeVar

from cq2a.adapters.llm.usage import Usage, add_usage
from cq2a.coverage.diversity import DiversityPart, SuiteFigures
from cq2a.models.records import Answer, Candidate, Context, ContextPlan, Skip, Verdict
from cq2a.oracle.judge import ProbeResult

Item = TypeVar("Item")


def union(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Reducer: ids of finished contexts, each once, in first-seen order."""
    return list(dict.fromkeys([*(left or []), *(right or [])]))


def merge_by_id(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """Reducer: upsert records by ``id``, keeping first-seen order.

    Within a context a candidate is replaced by its newer version; across contexts ids are
    prefixed by the context id, so merging the branches' lists only appends.
    """
    merged = {item.id: item for item in left or []}
    for item in right or []:
        merged[item.id] = item
    return list(merged.values())


class RunInput(TypedDict):
    """What a caller passes: the contexts to test."""

    contexts: list[Context]


class RunOutput(TypedDict, total=False):
    """What a run returns."""

    plans: list[ContextPlan]
    answers: list[Answer]
    candidates: list[Candidate]
    verdicts: list[Verdict]
    skipped: list[Skip]
    usage: Usage
    judge_probe: ProbeResult | None
    figures: SuiteFigures | None


class RunState(TypedDict, total=False):
    contexts: list[Context]
    plans: Annotated[list[ContextPlan], merge_by_id]
    answers: Annotated[list[Answer], merge_by_id]
    candidates: Annotated[list[Candidate], merge_by_id]
    skipped: Annotated[list[Skip], merge_by_id]
    usage: Annotated[Usage, add_usage]
    verdicts: list[Verdict]
    judge_probe: ProbeResult | None
    figures: SuiteFigures | None
    finished: Annotated[list[str], union]


class EvaluateState(TypedDict, total=False):
    """One chunk of ``cq2a run``'s evaluate: the run's contexts (its corpus), the chunk's
    accepted candidates and plans, and its place (``chunk`` of ``chunks``); what it produced:
    its verdicts, its LLM usage and its part of the suite's figures."""

    contexts: list[Context]
    candidates: list[Candidate]
    plans: list[ContextPlan]
    chunk: int
    chunks: int
    verdicts: list[Verdict]
    usage: Usage
    part: DiversityPart


class ContextState(TypedDict, total=False):
    """One context's branch; only the keys it shares with RunState flow back to the run."""

    context: Context
    plans: Annotated[list[ContextPlan], merge_by_id]
    answers: Annotated[list[Answer], merge_by_id]
    candidates: Annotated[list[Candidate], merge_by_id]
    skipped: Annotated[list[Skip], merge_by_id]
    usage: Annotated[Usage, add_usage]
    rounds: int
    #: Whether every slot given so far is settled (the coverage round decides what next).
    settled: bool
    #: Set by the node that ends the context (or finds no answer in it).
    finished: Annotated[list[str], union]
