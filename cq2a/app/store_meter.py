"""The spending meter of a run whose requests come from several processes (the Ray engine's
driver and its actors): one row in the run's PostgreSQL schema holds what the whole run spent
and the worst case of its requests in flight, so the cap holds for the run, not per process.

A reservation is one transaction that locks the row (``SELECT ... FOR UPDATE``), checks the caps
against what the row holds (``SpendingMeter.refusal``, so the same caps and messages as the
in-process meter) and adds the estimate: reservations from every process take turns, and two
reserving at once can never together pass a cap. Recording what a request used and releasing
its reservation are single UPDATEs, each atomic.

A process that dies with requests in flight never releases their reservations: they stay held
until the run ends, so the run may stop a little early by them. That errs on the safe side: a
request cut off by its process's death may still have been served and billed, and no process
will record what it used. A resumed run starts with no reservations (no process of the run
before it is alive) and with the most that the row or the run's own accounts say was spent.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from cq2a.adapters.llm.usage import SpendingMeter, Usage
from cq2a.app.postgres import schema_name
from cq2a.settings import Settings

CREATE = (
    """CREATE TABLE IF NOT EXISTS spending (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        requests BIGINT NOT NULL DEFAULT 0, cached BIGINT NOT NULL DEFAULT 0,
        prompt_tokens BIGINT NOT NULL DEFAULT 0, completion_tokens BIGINT NOT NULL DEFAULT 0,
        reserved_prompt BIGINT NOT NULL DEFAULT 0,
        reserved_completion BIGINT NOT NULL DEFAULT 0)""",
    "INSERT INTO spending (id) VALUES (1) ON CONFLICT (id) DO NOTHING",
)
READ = """SELECT requests, cached, prompt_tokens, completion_tokens, reserved_prompt,
    reserved_completion FROM spending WHERE id = 1"""
RESERVE = """UPDATE spending SET reserved_prompt = reserved_prompt + %s,
    reserved_completion = reserved_completion + %s WHERE id = 1"""
RECORD = """UPDATE spending SET requests = requests + %s, cached = cached + %s,
    prompt_tokens = prompt_tokens + %s, completion_tokens = completion_tokens + %s
    WHERE id = 1"""
RESUME = """UPDATE spending SET requests = GREATEST(requests, %s), cached = GREATEST(cached, %s),
    prompt_tokens = GREATEST(prompt_tokens, %s),
    completion_tokens = GREATEST(completion_tokens, %s),
    reserved_prompt = 0, reserved_completion = 0 WHERE id = 1"""


class StoreMeter(SpendingMeter):
    """A ``SpendingMeter`` whose accounts are the run's row in PostgreSQL, on a connection of
    its own that the process's threads take in turn."""

    def __init__(
        self,
        url: str,
        run_id: str,
        *,
        create: bool = False,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        price_per_1k_prompt: float = 0.0,
        price_per_1k_completion: float = 0.0,
    ) -> None:
        super().__init__(max_tokens, max_cost, price_per_1k_prompt, price_per_1k_completion)
        self._db = psycopg.connect(url, autocommit=True)
        schema = sql.Identifier(schema_name(run_id))
        if create:
            self._db.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
        self._db.execute(sql.SQL("SET search_path TO {}").format(schema))
        if create:
            with self._lock, self._db.transaction():
                for statement in CREATE:
                    self._db.execute(statement)

    def _row(self, *, lock: bool = False) -> tuple[Usage, Usage]:
        """What the run spent and what its requests in flight hold; ``lock``: until the
        transaction the caller holds ends, no other process may change them."""
        row = self._db.execute(READ + (" FOR UPDATE" if lock else "")).fetchone()
        if row is None:
            raise RuntimeError("the run's spending row is missing: its driver makes it first")
        requests, cached, prompt, completion, reserved_prompt, reserved_completion = row
        spent = Usage(
            requests=requests, cached=cached, prompt_tokens=prompt, completion_tokens=completion
        )
        return spent, Usage(prompt_tokens=reserved_prompt, completion_tokens=reserved_completion)

    @property
    def total(self) -> Usage:
        """What every process of the run spent so far."""
        with self._lock:
            return self._row()[0]

    @property
    def reserved(self) -> Usage:
        """The worst case of every process's requests in flight."""
        with self._lock:
            return self._row()[1]

    def reserve(self, estimate: Usage) -> None:
        """Hold ``estimate`` in the run's row, or raise BudgetExceeded if what every process
        spent and holds, and this request, could pass a cap."""
        with self._lock, self._db.transaction():
            spent, reserved = self._row(lock=True)
            refused = self.refusal(spent, reserved, estimate)
            if refused is not None:
                raise refused
            self._db.execute(RESERVE, (estimate.prompt_tokens, estimate.completion_tokens))

    def release(self, estimate: Usage) -> None:
        with self._lock:
            self._db.execute(RESERVE, (-estimate.prompt_tokens, -estimate.completion_tokens))

    def record(self, usage: Usage) -> None:
        with self._lock:
            self._db.execute(RECORD, usage_columns(usage))

    def resume_from(self, spent_before: Usage) -> None:
        """Start a resumed run: the most that the row or ``spent_before`` says was spent, and
        no reservations (the processes that held them are gone)."""
        with self._lock:
            self._db.execute(RESUME, usage_columns(spent_before))

    def close(self) -> None:
        self._db.close()


def usage_columns(usage: Usage) -> tuple[int, int, int, int]:
    return (usage.requests, usage.cached, usage.prompt_tokens, usage.completion_tokens)


def store_meter(url: str, run_id: str, settings: Settings, *, create: bool = False) -> StoreMeter:
    """The run's shared meter under the settings' caps; ``create``: make its row if missing
    (the driver, once, before any actor starts)."""
    return StoreMeter(
        url,
        run_id,
        create=create,
        max_tokens=settings.max_tokens,
        max_cost=settings.max_cost,
        price_per_1k_prompt=settings.price_per_1k_prompt,
        price_per_1k_completion=settings.price_per_1k_completion,
    )
