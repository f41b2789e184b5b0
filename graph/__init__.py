"""The compiled CQ2A graph (``graph``) and its builders."""

from cq2a.graph.graph import build_context_graph, build_graph, graph

__all__ = ["build_context_graph", "build_graph", "graph"]
