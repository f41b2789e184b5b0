"""The graph's nodes (``cq2a.nodes``), one module each: read the state, call the step's one
entry in ``cq2a``, emit trace events, return the update."""
