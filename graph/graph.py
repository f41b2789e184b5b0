"""The CQ2A graph: contexts fan out to a per-context subgraph, then the SUT is evaluated.

probe -> trust_judge -> (Send per context) extract -> generate -> check -> reask -> compare
                                                       ^   ^                           |
                                                       |   +-- rejected, attempts left +
                                                       |                               v
                                                       +---- coverage round: more --- cover
                                                             answers                   |
                                                                                       v
                                                                                   evaluate

``cq2a run`` runs the same nodes as three graphs, so that finished contexts leave the
checkpoint: the head (probe -> trust_judge) once, each context's subgraph as a thread of its
own, then evaluate over the accepted tests, a chunk of contexts at a time (``cq2a.app.engine``).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Send

from cq2a.graph.state import ContextState, EvaluateState, RunInput, RunOutput, RunState
from cq2a.models.records import Context
from cq2a.nodes.check import check
from cq2a.nodes.compare import compare, route_after_compare
from cq2a.nodes.context import run_context_graph
from cq2a.nodes.cover import cover, route_after_cover
from cq2a.nodes.evaluate import evaluate, evaluate_chunk
from cq2a.nodes.extract import extract
from cq2a.nodes.generate import generate
from cq2a.nodes.probe import probe, trust_judge
from cq2a.nodes.reask import reask
from cq2a.settings import Settings

#: The node that runs one context's subgraph. It keeps the name it has always had: a checkpoint
#: of an interrupted run names its pending branches by it, and ``--resume`` must find them.
PER_CONTEXT = "context"


def route_after_extract(state: ContextState) -> str:
    return "generate" if state.get("answers") else END


def build_context_graph(checkpointer: Any = None) -> CompiledStateGraph[Any, Settings, Any, Any]:
    """One context: extract, then generate/check/re-ask/compare until every slot is settled,
    then coverage rounds while they find answers to add. A subgraph of the run takes its
    checkpointer from the run's; ``cq2a run`` runs it as a thread of its own."""
    builder = StateGraph(ContextState, context_schema=Settings)
    builder.add_node("extract", extract)
    builder.add_node("generate", generate)
    builder.add_node("check", check)
    builder.add_node("reask", reask)
    builder.add_node("compare", compare)
    builder.add_node("cover", cover)
    builder.add_edge(START, "extract")
    builder.add_conditional_edges("extract", route_after_extract, ["generate", END])
    builder.add_edge("generate", "check")
    builder.add_edge("check", "reask")
    builder.add_edge("reask", "compare")
    builder.add_conditional_edges("compare", route_after_compare, ["generate", "cover"])
    builder.add_conditional_edges("cover", route_after_cover, ["generate", END])
    return builder.compile(checkpointer=checkpointer, name="cq2a-context")


def fan_out_contexts(state: RunState) -> list[Send] | str:
    contexts = state.get("contexts", [])
    if not contexts:
        return "evaluate"
    # Callers over the LangGraph API send plain dicts; the branches get typed records.
    return [Send(PER_CONTEXT, {"context": Context.model_validate(c)}) for c in contexts]


def build_graph(checkpointer: Any = None) -> CompiledStateGraph[Any, Settings, Any, Any]:
    """The whole run; pass a checkpointer (e.g. SqliteSaver) to make it resumable."""
    builder = StateGraph(
        RunState, input_schema=RunInput, output_schema=RunOutput, context_schema=Settings
    )
    builder.add_node("probe", probe)
    builder.add_node("trust_judge", trust_judge)
    # The run's schema, as a subgraph node gets: the branch's keys stay out of the run's
    # channels and checkpoints (the branch's input is its Send's, whatever the schema says).
    per_context: Any = run_context_graph(build_context_graph())
    builder.add_node(PER_CONTEXT, per_context, input_schema=RunState)
    builder.add_node("evaluate", evaluate)
    builder.add_edge(START, "probe")
    builder.add_edge("probe", "trust_judge")
    builder.add_conditional_edges("trust_judge", fan_out_contexts, [PER_CONTEXT, "evaluate"])
    builder.add_edge(PER_CONTEXT, "evaluate")
    builder.add_edge("evaluate", END)
    return builder.compile(checkpointer=checkpointer, name="cq2a")


def build_head_graph(checkpointer: Any = None) -> CompiledStateGraph[Any, Settings, Any, Any]:
    """What a run does before its contexts: probe the components and the judge, then trust it."""
    builder = StateGraph(RunState, context_schema=Settings)
    builder.add_node("probe", probe)
    builder.add_node("trust_judge", trust_judge)
    builder.add_edge(START, "probe")
    builder.add_edge("probe", "trust_judge")
    builder.add_edge("trust_judge", END)
    return builder.compile(checkpointer=checkpointer, name="cq2a-head")


def build_evaluate_graph() -> CompiledStateGraph[Any, Settings, Any, Any]:
    """What a run does after its contexts: evaluate the SUT on the accepted tests of one chunk
    of contexts (``cq2a run`` runs it once per chunk)."""
    builder = StateGraph(EvaluateState, context_schema=Settings)
    builder.add_node("evaluate", evaluate_chunk)
    builder.add_edge(START, "evaluate")
    builder.add_edge("evaluate", END)
    return builder.compile(name="cq2a-evaluate")


graph = build_graph()
