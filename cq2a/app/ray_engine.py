"""The engine on Ray: the run's head in this process (the driver), each context and then each
chunk of evaluate on one of ``actors`` Ray actors, all sharing one PostgreSQL database for
checkpoints and the store.

Each actor builds the run's services and the compiled context graph once, and works up to
``contexts_at_once`` contexts at a time (a threaded actor). A context's thread id is the run's id
and the context's, so any actor can take over any context: it holds the context's lease
(``Leases``) while it works, resumes from the context's checkpoint if there is one, and once the
context ends upserts its state to the store and deletes its thread. When an actor dies, the
contexts it held go to a fresh actor and resume from their checkpoints.

Evaluate runs on the same actors once every context has ended: the accepted tests in chunks of
consecutive contexts (``chunk_size``), one chunk per actor at a time, each actor with its own SUT,
judge and embedder, writing its chunk's verdicts to the store (upserted by place, so a chunk
evaluated again by a fresh actor after its first actor died is written once). The driver then
combines the chunks' figures and usage.

Each context's events stream to the driver as they happen, through a Ray queue the driver owns
(an actor puts each event and waits until the queue holds it): the trace and the progress follow
every actor live, and a context's events are all in the trace before the driver settles it.

The spending cap holds for the whole run: the driver and every actor count against one meter in
the run's store (``cq2a.app.store_meter``), where each request reserves its worst case before it
is sent, so the requests of all the actors together cannot pass it; the driver also stops
handing out contexts once it is reached. The request rate holds for the whole run too: each
actor's limiter allows ``requests_per_second / actors`` (the driver sends requests only before
the actors start and after they end, at the full rate). The other request limits are each
actor's own: its ``concurrency`` and a local server's slots.
"""

from __future__ import annotations

import dataclasses
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from math import ceil
from typing import Any

import ray
from ray.exceptions import RayActorError, RayTaskError
from ray.util.queue import Queue

from cq2a.adapters.llm.usage import BudgetExceeded, SpendingMeter, Usage
from cq2a.app.engine import EVALUATE_CHUNK_CONTEXTS, Engine, EventHandler, PendingChunk
from cq2a.app.outcome import Outcome
from cq2a.app.postgres import Leases, PostgresDatabase, connect_saver
from cq2a.app.results import ResultFiles
from cq2a.app.rundir import RunPlan
from cq2a.app.store import EVALUATE_USAGE, RunStore
from cq2a.app.store_meter import store_meter
from cq2a.graph.graph import build_evaluate_graph
from cq2a.models.records import Context
from cq2a.nodes.context import contexts_at_once
from cq2a.nodes.evaluate import evaluate_started
from cq2a.runtime.services import services_for, share_meter
from cq2a.runtime.trace import trace_event

#: Fresh actors a run starts in place of dead ones, per actor asked for, before it gives up
#: (an actor that cannot start, say with its parser missing on its machine, dies every time).
REPLACEMENTS_PER_ACTOR = 3
#: Chunks of evaluate an actor works at once (one: its SUT answers one batch at a time).
EVALUATE_CHUNKS_AT_ONCE = 1
#: Chunks of evaluate per actor a run is cut into, at most (``EVALUATE_CHUNK_CONTEXTS``
#: contexts each): several, so that an actor that ends early takes another.
EVALUATE_CHUNKS_PER_ACTOR = 4
#: How often, in seconds, the driver passes on the events its actors queued while it waits for
#: a context to end.
EVENTS_EVERY_S = 0.25


class ContextWorker:
    """A Ray actor's state: the run's services, the context graph over its own checkpointer
    connection, the evaluate graph (built with its first chunk), the store, and the leases."""

    def __init__(self, plan: RunPlan, store_url: str, events: Queue) -> None:
        self.plan = plan
        self.events = events
        self.evaluate_graph: Any = None
        self.leases = Leases(store_url)
        store = RunStore(PostgresDatabase(store_url, plan.run_id, fresh=False))
        self.engine = Engine(plan, connect_saver(store_url), store)
        meter = store_meter(store_url, plan.run_id, plan.settings)
        run = share_meter(plan.settings, plan.run_id, meter)
        if plan.settings.sut.question_alone:  # the corpus the re-ask searches
            run.corpus_index(lambda: plan.contexts)

    def pid(self) -> int:
        return os.getpid()

    def evaluate_chunk(self, chunk: PendingChunk, place: tuple[int, int]) -> dict[str, Any]:
        """Evaluate one chunk of the run's accepted tests with this actor's SUT, judge and
        embedder, its events to the driver's queue; its verdicts and the chunk go to the
        store. Which worker evaluated it."""
        if self.evaluate_graph is None:
            self.evaluate_graph = build_evaluate_graph()
        self.engine.evaluate_chunk(self.evaluate_graph, chunk, place, self.events.put)
        return {"worker": os.getpid()}

    def run_context(self, seq: int, context: Context) -> dict[str, Any]:
        """Work one context under its lease, its events to the driver's queue as they happen;
        its final candidates and usage (none when another worker already finished it)."""
        thread_id = self.plan.thread_config(context.id)["configurable"]["thread_id"]
        state: dict[str, Any] = {}
        with self.leases.lease(thread_id):
            if not self.engine.store.has_context(context.id):
                state = self.engine.work_context(seq, context, self.events.put)
        return {
            "candidates": state.get("candidates") or [],
            "usage": state.get("usage") or Usage(),
            "worker": os.getpid(),
        }


@dataclass
class Pending:
    """Work handed to an actor: a context (its place and itself) or a chunk of evaluate."""

    item: Any
    actor: Any


#: Submits one item of work to an actor; Ray's reference to its result.
Submit = Callable[[Any, Any], Any]


@dataclass
class RayEngine(Engine):
    store_url: str = ""
    address: str | None = None
    actors: int = 2
    _workers: list[Any] = field(default_factory=list)
    _replaced: int = 0
    _events: Queue | None = None

    def run(self, *, spent_before: Usage | None, on_event: EventHandler | None) -> Outcome:
        """The engine's run, with the driver's LLM clients counting against the run's meter in
        the store (made here, before any actor starts), which every actor counts against too.
        The actors serve the contexts and then evaluate, and go when the run ends."""
        meter = store_meter(self.store_url, self.plan.run_id, self.plan.settings, create=True)
        share_meter(self.plan.settings, self.plan.run_id, meter)
        try:
            return super().run(spent_before=spent_before, on_event=on_event)
        finally:
            self.stop_workers()

    def start_worker(self) -> Any:
        actor = ray.remote(ContextWorker).options(
            max_restarts=0, max_concurrency=contexts_at_once(self.plan.settings)
        )
        return actor.remote(actor_plan(self.plan, self.actors), self.store_url, self._events)

    def start_workers(self) -> None:
        """Ray, the events queue and the actors, unless started already."""
        if not ray.is_initialized():
            ray.init(address=self.address)
        if self._events is None:
            self._events = Queue()
        if not self._workers:
            self._workers = [self.start_worker() for _ in range(self.actors)]

    def stop_workers(self) -> None:
        for actor in self._workers:
            ray.kill(actor)
        self._workers = []
        if self._events is not None:
            self._events.shutdown()
            self._events = None

    def run_contexts(self, events: EventHandler) -> None:
        """Each context not yet in the store, on the actors; a context whose actor died goes to
        a fresh one. After the first error no context starts; those running end (or fail),
        then the error is raised."""
        done = self.store.finished_contexts()
        for thread_id in self.threads(done):  # a run killed before it let go of them
            self.saver.delete_thread(thread_id)
        todo = deque((seq, c) for seq, c in enumerate(self.plan.contexts) if c.id not in done)
        self.start_workers()
        self.work(
            todo,
            lambda actor, item: actor.run_context.remote(*item),
            contexts_at_once(self.plan.settings),
            lambda item, result: self.settle(item[1], result, events),
            events,
        )

    def run_evaluate(self, events: EventHandler) -> None:
        """The accepted tests against the SUT and the oracle, a chunk of contexts at a time on
        the actors (each with its own SUT, judge and embedder; ``EVALUATE_CHUNKS_AT_ONCE``
        per actor), each chunk's verdicts to the store by the actor that evaluated it; a
        chunk whose actor died goes to a fresh one. Then the figures and usage, from every
        chunk's, here."""
        if self.store.has_meta(EVALUATE_USAGE):
            return
        tests, evaluated, chunks = self.evaluate_chunks(self.chunk_size())
        events(evaluate_started(tests, evaluated, len(chunks)))
        places = {chunk.seq: (number, len(chunks)) for number, chunk in enumerate(chunks, 1)}
        if chunks:
            self.start_workers()
            self.work(
                deque(chunks),
                lambda actor, chunk: actor.evaluate_chunk.remote(chunk, places[chunk.seq]),
                EVALUATE_CHUNKS_AT_ONCE,
                lambda chunk, result: events(
                    trace_event("chunk_evaluated", chunk=chunk.seq, worker=result["worker"])
                ),
                events,
            )
        self.finish_evaluate()

    def chunk_size(self) -> int:
        """Contexts per chunk of evaluate: enough chunks for ``EVALUATE_CHUNKS_PER_ACTOR`` per
        actor, so the actors share the work evenly, and at most ``EVALUATE_CHUNK_CONTEXTS``."""
        share = ceil(len(self.plan.contexts) / (EVALUATE_CHUNKS_PER_ACTOR * self.actors))
        return max(1, min(EVALUATE_CHUNK_CONTEXTS, share))

    def work(
        self,
        todo: deque[Any],
        submit: Submit,
        at_once: int,
        settle: Callable[[Any, Any], None],
        events: EventHandler,
    ) -> None:
        """Every item of ``todo`` on the actors, ``at_once`` per actor, the actors' events
        passed on as they come; an item whose actor died goes back to ``todo`` for a fresh
        actor. After the first error (or the run's spending cap) nothing more starts; the
        items running end (or fail), then the error is raised."""
        meter = services_for(self.plan.settings, self.plan.run_id).llm.meter  # the store's
        running: dict[Any, Pending] = {}
        errors: list[BaseException] = []
        try:
            while self.hand_out(todo if not errors else deque(), running, submit, at_once):
                ready, _ = ray.wait(list(running), num_returns=1, timeout=EVENTS_EVERY_S)
                self.pass_on_events(events)
                if not ready:
                    continue
                pending = running.pop(ready[0])
                try:
                    result = ray.get(ready[0])
                except RayActorError as error:
                    self.replace(pending.actor, error, events)
                    todo.appendleft(pending.item)
                    continue
                except Exception as error:
                    errors.append(raised_in_actor(error))
                    continue
                settle(pending.item, result)
                errors += whole_run_cap(meter)
        finally:
            self.pass_on_events(events)
        if errors:
            raise errors[0]

    def hand_out(
        self, todo: deque[Any], running: dict[Any, Pending], submit: Submit, at_once: int
    ) -> bool:
        """Fill each actor's free places from ``todo``; whether anything is running."""
        for actor in self._workers:
            load = sum(p.actor is actor for p in running.values())
            for _ in range(min(at_once - load, len(todo))):
                item = todo.popleft()
                running[submit(actor, item)] = Pending(item, actor)
        return bool(running)

    def pass_on_events(self, events: EventHandler) -> None:
        """The events the actors queued since the last call, in the order they were queued."""
        if self._events is None:
            return
        waiting = self._events.qsize()
        for event in self._events.get_nowait_batch(waiting) if waiting else []:
            events(event)

    def settle(self, context: Context, result: dict[str, Any], events: EventHandler) -> None:
        """A context an actor finished (its events already passed on): which actor worked it,
        ``partial/``."""
        events(trace_event("context_worked", context_id=context.id, worker=result["worker"]))
        ResultFiles(self.plan.run_dir).save_context(result)

    def replace(self, actor: Any, error: RayActorError, events: EventHandler) -> None:
        """A fresh actor in place of one that died (once, however many contexts it held)."""
        for index, worker in enumerate(self._workers):
            if worker is not actor:
                continue
            self._replaced += 1
            if self._replaced > REPLACEMENTS_PER_ACTOR * self.actors:
                raise RuntimeError(f"{self._replaced} Ray actors died; the last: {error}")
            self._workers[index] = self.start_worker()
            events(trace_event("worker_replaced", error=str(error)[:500]))


def actor_plan(plan: RunPlan, actors: int) -> RunPlan:
    """The plan an actor works under: the run's, with an even share of ``requests_per_second``
    for each actor's rate limiter (one per process), so the actors together stay under it."""
    rate = plan.settings.requests_per_second
    if not rate:
        return plan
    settings = plan.settings.model_copy(update={"requests_per_second": rate / actors})
    return dataclasses.replace(plan, settings=settings)


def whole_run_cap(meter: SpendingMeter) -> list[BaseException]:
    """The cap, if reached by what the run's meter counted (every process's requests): then no
    further context starts."""
    try:
        meter.check()
    except BudgetExceeded as error:
        return [error]
    return []


def raised_in_actor(error: BaseException) -> BaseException:
    """What an actor's context raised, without Ray's wrapper: its message then reads as in a
    single-process run ("token cap reached: ..."), not after the actor's name, pid and colour
    codes."""
    if isinstance(error, RayTaskError) and isinstance(error.cause, BaseException):
        return error.cause
    return error
