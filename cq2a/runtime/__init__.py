"""Runtime plumbing between the graph and the stages: the registry of a run's services and the
trace events."""
