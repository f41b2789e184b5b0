"""cq2a: test question-answering software with context-driven question generation (CQ2A)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Settings", "build_graph", "graph", "__version__"]

if TYPE_CHECKING:
    from cq2a.graph import build_graph, graph
    from cq2a.settings import Settings


def __getattr__(name: str) -> Any:
    # Lazy so that `import cq2a` stays cheap: the graph pulls in LangGraph.
    if name == "Settings":
        from cq2a.settings import Settings

        return Settings
    if name in {"build_graph", "graph"}:
        import cq2a.graph as graph_module

        return getattr(graph_module, name)
    raise AttributeError(f"module 'cq2a' has no attribute {name!r}")
