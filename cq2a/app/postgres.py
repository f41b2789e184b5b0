"""A run's store and checkpoints in PostgreSQL (the ``distributed`` extra), shared by every
process that works on the run.

The store's tables live in a schema of the run's own (``cq2a_run_<run id>``), so runs sharing a
database never see each other's rows; the checkpointer's tables are LangGraph's, in the
database's default schema, where a thread id already names its run. A context is worked by one
process at a time: it holds the session-level advisory lock of its thread id while it works, and
a process that dies loses its session, so the lock goes with it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg import sql
from psycopg.rows import dict_row

from cq2a.app.checkpoint import checkpoint_serializer
from cq2a.app.store import RunStore

SCHEMES = ("postgresql://", "postgres://")
#: How long a worker waits for a context's lease before it gives the context back.
LEASE_WAIT_S = 60.0
LEASE_POLL_S = 0.2


class ContextBusy(RuntimeError):
    """Another live process holds this context's lease."""


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(SCHEMES)


def redacted(url: str) -> str:
    """The URL with its password replaced by ``***``: what logs and run.json may show."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit(parts._replace(netloc=netloc))


def schema_name(run_id: str) -> str:
    return f"cq2a_run_{run_id}"


class PostgresDatabase:
    """The store's database: one autocommit connection whose search path is the run's schema,
    shared by the threads of one process behind one lock."""

    def __init__(self, url: str, run_id: str, *, fresh: bool) -> None:
        self._db = psycopg.connect(url, autocommit=True)
        self._lock = threading.Lock()
        schema = sql.Identifier(schema_name(run_id))
        if fresh:
            self._db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(schema))
        self._db.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
        self._db.execute(sql.SQL("SET search_path TO {}").format(schema))

    def close(self) -> None:
        self._db.close()

    def create(self, statements: tuple[str, ...]) -> None:
        with self._lock, self._db.transaction():
            for statement in statements:
                self._db.execute(statement)

    def write(self, statement: str, rows: list[tuple[Any, ...]]) -> None:
        with self._lock, self._db.transaction(), self._db.cursor() as cursor:
            cursor.executemany(placeholders(statement), rows)

    def read(self, statement: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(placeholders(statement), args).fetchall()


def placeholders(statement: str) -> str:
    """The store's ``?`` placeholders as psycopg's ``%s`` (the store's SQL has no other ``?``
    and no ``%``)."""
    return statement.replace("?", "%s")


@contextmanager
def open_postgres_store(url: str, run_id: str, *, fresh: bool = False) -> Iterator[RunStore]:
    """The run's store in PostgreSQL; ``fresh``: drop what an earlier run of the same id left."""
    store = RunStore(PostgresDatabase(url, run_id, fresh=fresh))
    try:
        yield store
    finally:
        store.close()


def connect_saver(url: str) -> PostgresSaver:
    """A checkpointer on a connection of its own, as langgraph-checkpoint-postgres wants it."""
    conn = psycopg.connect(url, autocommit=True, row_factory=dict_row, prepare_threshold=0)
    return PostgresSaver(conn, serde=checkpoint_serializer())


@contextmanager
def open_postgres_checkpointer(url: str) -> Iterator[PostgresSaver]:
    """The checkpointer, its tables made or migrated (once, by the driver)."""
    saver = connect_saver(url)
    try:
        saver.setup()
        yield saver
    finally:
        saver.conn.close()


def checkpointed(saver: PostgresSaver, run_id: str) -> set[str]:
    """The run's threads the checkpointer holds (``connect_saver``'s: on one connection)."""
    conn = saver.conn
    assert isinstance(conn, psycopg.Connection)
    with saver.lock:
        rows = conn.execute(
            "SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id LIKE %s",
            (f"{run_id}:%",),
        ).fetchall()
    return {row["thread_id"] for row in rows}


class Leases:
    """Session-level advisory locks, one per thread id, on a connection of their own."""

    def __init__(self, url: str) -> None:
        self._db = psycopg.connect(url, autocommit=True)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    def _call(self, function: str, thread_id: str) -> bool:
        query = sql.SQL("SELECT {}(hashtext(%s))").format(sql.Identifier(function))
        with self._lock:
            row = self._db.execute(query, (thread_id,)).fetchone()
        return bool(row and row[0])

    @contextmanager
    def lease(self, thread_id: str, wait_s: float = LEASE_WAIT_S) -> Iterator[None]:
        """Hold the thread's lease while the block runs; a holder that died frees it when
        PostgreSQL notices its session ended, so wait a while before giving up."""
        deadline = time.monotonic() + wait_s
        while not self._call("pg_try_advisory_lock", thread_id):
            if time.monotonic() > deadline:
                raise ContextBusy(f"{thread_id} is being worked by another process")
            time.sleep(LEASE_POLL_S)
        try:
            yield
        finally:
            self._call("pg_advisory_unlock", thread_id)
