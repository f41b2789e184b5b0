"""Runners for peer test-set generators, each run by ``evals.peers_side_by_side`` with the
peer's own Python (its own virtual environment: peers are not project dependencies)."""
