"""The run store: what each finished context produced, the verdicts, and the run's own figures,
in a SQLite file of the run directory, or in a PostgreSQL schema of the run's own
(``cq2a.app.postgres``) that workers on several machines share.

A context's thread leaves the checkpointer once its final state is here, so neither the
checkpoint nor the process grows with the contexts already done. Every write is keyed (a
context's id, a test's id, a name): writing one twice, as a resumed run may, replaces it. The
SQL is what PostgreSQL accepts too, placeholders aside: each database says how it runs it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, TypeAdapter

from cq2a.adapters.llm.usage import Usage
from cq2a.coverage.diversity import DiversityPart
from cq2a.models.records import Answer, Candidate, ContextPlan, Skip, Verdict

Record = TypeVar("Record", bound=BaseModel)

#: Meta keys: the run this store belongs to; the head's and evaluate's results and usage.
RUN_ID = "run_id"
JUDGE_PROBE = "judge_probe"
HEAD_USAGE = "head_usage"
HEAD_DONE = "head_done"
FIGURES = "figures"
EVALUATE_USAGE = "evaluate_usage"

#: The lists of a context's final state the store keeps, each with its record type.
CONTEXT_LISTS: dict[str, TypeAdapter[Any]] = {
    "plans": TypeAdapter(list[ContextPlan]),
    "answers": TypeAdapter(list[Answer]),
    "candidates": TypeAdapter(list[Candidate]),
    "skipped": TypeAdapter(list[Skip]),
}

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS contexts (
        context_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, plans TEXT NOT NULL,
        answers TEXT NOT NULL, candidates TEXT NOT NULL, skipped TEXT NOT NULL,
        usage TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS verdicts (
        test_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, verdict TEXT NOT NULL)""",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS evaluated (
        first_context TEXT PRIMARY KEY, seq INTEGER NOT NULL, chunk TEXT NOT NULL)""",
)

SAVE_CONTEXT = """INSERT INTO contexts
    (context_id, seq, plans, answers, candidates, skipped, usage)
    VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (context_id) DO UPDATE SET seq = excluded.seq, plans = excluded.plans,
    answers = excluded.answers, candidates = excluded.candidates,
    skipped = excluded.skipped, usage = excluded.usage"""
SAVE_VERDICT = """INSERT INTO verdicts (test_id, seq, verdict) VALUES (?, ?, ?)
    ON CONFLICT (test_id) DO UPDATE SET seq = excluded.seq, verdict = excluded.verdict"""
SAVE_EVALUATED = """INSERT INTO evaluated (first_context, seq, chunk) VALUES (?, ?, ?)
    ON CONFLICT (first_context) DO UPDATE SET seq = excluded.seq, chunk = excluded.chunk"""
SAVE_META = """INSERT INTO meta (key, value) VALUES (?, ?)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value"""


class ContextRecord(BaseModel):
    """What one finished context produced: its final subgraph state, less its input."""

    context_id: str
    plans: list[ContextPlan] = []
    answers: list[Answer] = []
    candidates: list[Candidate] = []
    skipped: list[Skip] = []
    usage: Usage = Usage()


class EvaluatedChunk(BaseModel):
    """One chunk of a run's evaluate, kept once its verdicts are: the contexts it covered, in
    input order, what its LLM calls spent, and its part of the suite's figures. A resumed run
    evaluates only the contexts no kept chunk covers."""

    contexts: list[str]
    usage: Usage = Usage()
    part: DiversityPart = DiversityPart()


def settled_plan(plan: ContextPlan) -> ContextPlan:
    """A finished context's plan without its pool. The pool (every target the context could be
    asked about, each with its evidence: most of a stored context's bytes) is the working set
    of the context's coverage rounds; once the context ends nothing reads it, and the run's end
    reads every stored plan back at once, so keeping it grew the run's peak with each context.
    """
    return plan.model_copy(update={"pool": []})


class Database(Protocol):
    """Where a store's rows live: statements with ``?`` placeholders, each write one
    transaction."""

    def create(self, statements: tuple[str, ...]) -> None: ...

    def write(self, sql: str, rows: list[tuple[Any, ...]]) -> None: ...

    def read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...

    def close(self) -> None: ...


class SqliteDatabase:
    """One connection, shared by the threads that finish contexts, behind one lock."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    def create(self, statements: tuple[str, ...]) -> None:
        with self._lock, self._db:
            for statement in statements:
                self._db.execute(statement)

    def write(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with self._lock, self._db:
            self._db.executemany(sql, rows)

    def read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()


class RunStore:
    """The run's records over one database; its tables are made if missing."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._db.create(SCHEMA)

    def close(self) -> None:
        self._db.close()

    def _write(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self._db.write(sql, rows)

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self._db.read(sql, args)

    def save_context(self, context_id: str, seq: int, state: dict[str, Any]) -> None:
        """Keep a context's final state (the lists it produced and what it spent), its plans
        without their pools (``settled_plan``)."""
        kept = state | {"plans": [settled_plan(plan) for plan in state.get("plans") or []]}
        lists = [
            CONTEXT_LISTS[key].dump_json(kept.get(key) or []).decode() for key in CONTEXT_LISTS
        ]
        usage = (state.get("usage") or Usage()).model_dump_json()
        self._write(SAVE_CONTEXT, [(context_id, seq, *lists, usage)])

    def finished_contexts(self) -> set[str]:
        return {row[0] for row in self._read("SELECT context_id FROM contexts")}

    def has_context(self, context_id: str) -> bool:
        """Whether this context's final state is kept (one row looked up, not every id read)."""
        return bool(self._read("SELECT 1 FROM contexts WHERE context_id = ?", (context_id,)))

    def context_ids(self) -> list[str]:
        """The finished contexts' ids, in input order."""
        return [row[0] for row in self._read("SELECT context_id FROM contexts ORDER BY seq")]

    def contexts(self) -> Iterator[ContextRecord]:
        """The finished contexts in input order, read one at a time."""
        for context_id in self.context_ids():
            yield self.context(context_id)

    def context(self, context_id: str) -> ContextRecord:
        """One finished context's record."""
        row = self._read(
            "SELECT plans, answers, candidates, skipped, usage FROM contexts WHERE context_id = ?",
            (context_id,),
        )[0]
        lists = {
            key: adapter.validate_json(text)
            for (key, adapter), text in zip(CONTEXT_LISTS.items(), row, strict=False)
        }
        return ContextRecord(
            context_id=context_id, **lists, usage=Usage.model_validate_json(row[-1])
        )

    def accepted_counts(self) -> Iterator[tuple[str, int]]:
        """Each finished context's id and number of accepted candidates (its tests), in input
        order, read one at a time: the candidates are counted, not validated, so that evaluate
        can size its chunks and number its verdicts without holding or building the records."""
        for context_id in self.context_ids():
            (text,) = self._read(
                "SELECT candidates FROM contexts WHERE context_id = ?", (context_id,)
            )[0]
            yield context_id, sum(c.get("status") == "accepted" for c in json.loads(text))

    def usage(self) -> Usage:
        """What the finished parts of the run spent: the head, the contexts, evaluate."""
        total = Usage()
        for (text,) in self._read("SELECT usage FROM contexts"):
            total += Usage.model_validate_json(text)
        total += self.meta(HEAD_USAGE, Usage) or Usage()
        evaluated = self.meta(EVALUATE_USAGE, Usage)
        if evaluated is None:  # evaluate stopped part way: the chunks it kept
            evaluated = sum((chunk.usage for chunk in self.evaluated()), Usage())
        return total + evaluated

    def save_verdicts(self, verdicts: list[Verdict], first: int = 0) -> None:
        """Keep verdicts in run order; ``first``: the place of the first (a chunk's verdicts
        follow those of the chunks before it)."""
        rows = [(v.test_id, first + n, v.model_dump_json()) for n, v in enumerate(verdicts)]
        self._write(SAVE_VERDICT, rows)

    def save_evaluated(self, seq: int, chunk: EvaluatedChunk) -> None:
        """Keep an evaluated chunk (its verdicts are kept first); ``seq``: its place in the run."""
        self._write(SAVE_EVALUATED, [(chunk.contexts[0], seq, chunk.model_dump_json())])

    def evaluated(self) -> list[EvaluatedChunk]:
        """The evaluated chunks kept, in run order."""
        rows = self._read("SELECT chunk FROM evaluated ORDER BY seq")
        return [EvaluatedChunk.model_validate_json(text) for (text,) in rows]

    def verdicts(self) -> list[Verdict]:
        rows = self._read("SELECT verdict FROM verdicts ORDER BY seq")
        return [Verdict.model_validate_json(text) for (text,) in rows]

    def set_meta(self, key: str, value: BaseModel | str | None) -> None:
        text = value.model_dump_json() if isinstance(value, BaseModel) else json.dumps(value)
        self._write(SAVE_META, [(key, text)])

    def has_meta(self, key: str) -> bool:
        return bool(self._read("SELECT 1 FROM meta WHERE key = ?", (key,)))

    def meta(self, key: str, kind: type[Record]) -> Record | None:
        """The record kept under ``key`` (None: none kept, or None was)."""
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        value = json.loads(rows[0][0]) if rows else None
        return None if value is None else kind.model_validate(value)

    def text(self, key: str) -> str | None:
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else None


@contextmanager
def open_store(path: Path) -> Iterator[RunStore]:
    store = RunStore(SqliteDatabase(path))
    try:
        yield store
    finally:
        store.close()
