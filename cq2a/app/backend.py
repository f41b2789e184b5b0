"""Where a run's work happens and where its state lives: this process with SQLite files in the
run directory (the default), this process with PostgreSQL, or Ray actors with PostgreSQL.

Only the checkpointer and the store differ between the first two, and the engine between the
last two; the run directory's result files are written the same way from the store.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver

from cq2a.app import outputs as out
from cq2a.app.checkpoint import open_checkpointer
from cq2a.app.engine import Engine
from cq2a.app.rundir import HEAD_THREAD, RunPlan
from cq2a.app.store import RunStore, open_store


@dataclass(frozen=True)
class Backend:
    """``store``: a ``postgresql://`` URL, or None for the run directory's SQLite files;
    ``ray_address``: the cluster to join (None: ``RAY_ADDRESS`` or a new local one)."""

    engine: Literal["local", "ray"] = "local"
    store: str | None = None
    ray_address: str | None = None
    ray_actors: int = 2

    def __post_init__(self) -> None:
        if self.store is not None and not self.store.startswith(("postgresql://", "postgres://")):
            raise ValueError(f"--store takes a postgresql:// URL, not {self.store!r}")
        if self.engine == "ray" and self.store is None:
            raise ValueError(
                "--engine ray needs --store postgresql://...: every worker reads and writes it"
            )
        if self.ray_actors < 1:
            raise ValueError("--ray-actors must be at least 1")

    def public(self) -> dict[str, Any]:
        """What run.json records: the store's URL without its password."""
        store = None
        if self.store is not None:
            from cq2a.app.postgres import redacted  # the distributed extra, only when used

            store = redacted(self.store)
        return {"engine": self.engine, "store": store or "sqlite", "ray_actors": self.ray_actors}


@contextmanager
def open_engine(plan: RunPlan, backend: Backend, *, fresh: bool) -> Iterator[Engine]:
    """The engine over the run's checkpointer and store; ``fresh``: a PostgreSQL run starts
    without what an earlier run of the same id left (the SQLite files were removed already)."""
    if backend.store is None:
        with (
            open_checkpointer(plan.run_dir) as saver,
            open_store(plan.run_dir / out.STORE) as store,
        ):
            yield Engine(plan, saver, store)
        return
    from cq2a.app.postgres import open_postgres_checkpointer, open_postgres_store

    with (
        open_postgres_checkpointer(backend.store) as pg_saver,
        open_postgres_store(backend.store, plan.run_id, fresh=fresh) as pg_store,
    ):
        if fresh:
            forget_threads(plan, pg_saver)
        yield engine_for(plan, backend, pg_saver, pg_store)


def engine_for(
    plan: RunPlan, backend: Backend, saver: BaseCheckpointSaver[Any], store: RunStore
) -> Engine:
    if backend.engine == "local":
        return Engine(plan, saver, store)
    from cq2a.app.ray_engine import RayEngine  # Ray loads only for the runs that use it

    assert backend.store is not None  # checked by Backend
    return RayEngine(
        plan,
        saver,
        store,
        store_url=backend.store,
        address=backend.ray_address,
        actors=backend.ray_actors,
    )


def forget_threads(plan: RunPlan, saver: BaseCheckpointSaver[Any]) -> None:
    """Delete the checkpoints an earlier, interrupted run of the same id left."""
    for part in [HEAD_THREAD, *(c.id for c in plan.contexts)]:
        saver.delete_thread(plan.thread_config(part)["configurable"]["thread_id"])
