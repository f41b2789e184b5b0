"""The engine of ``cq2a run``: the run's head once, each context as a LangGraph thread of its own,
then evaluate; what each part produces goes to the run store as it ends.

A context's thread runs under the SQLite checkpointer, so a stopped or killed run resumes it
where it was; once it ends its final state goes to the store and its thread leaves the
checkpointer. The checkpoint then holds only the contexts in flight, and the process only what
they hold: neither grows with the contexts already done. The same engine runs over PostgreSQL
(``cq2a.app.postgres``), and ``cq2a.app.ray_engine`` hands its contexts to Ray actors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TextIO

import structlog
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph

from cq2a.adapters.llm.usage import Usage
from cq2a.app import outputs as out
from cq2a.app.checkpoint import saved_threads
from cq2a.app.outcome import Outcome, outcome_of_work
from cq2a.app.results import ResultFiles
from cq2a.app.rundir import HEAD_THREAD, RunPlan
from cq2a.app.store import (
    CONTEXT_LISTS,
    EVALUATE_USAGE,
    FIGURES,
    HEAD_DONE,
    HEAD_USAGE,
    JUDGE_PROBE,
    EvaluatedChunk,
    RunStore,
)
from cq2a.coverage.diversity import SuiteFigures, combine_parts, figures_of
from cq2a.graph.graph import build_context_graph, build_evaluate_graph, build_head_graph
from cq2a.models.records import Context
from cq2a.nodes.context import contexts_at_once
from cq2a.nodes.evaluate import evaluate_started
from cq2a.oracle.judge import ProbeResult
from cq2a.runtime.services import release_services, services_for
from cq2a.settings import Settings

EventHandler = Callable[[dict[str, Any]], None]

#: Contexts per chunk of evaluate: ``cq2a run`` evaluates the accepted tests of this many
#: contexts at a time and keeps each chunk's verdicts as it ends, so evaluate's memory is that
#: of one chunk, not of the run, and a resumed run evaluates only the chunks not kept.
EVALUATE_CHUNK_CONTEXTS = 200


@dataclass
class PendingChunk:
    """A chunk of evaluate still to run: its contexts, the place of the first among the run's
    contexts (``seq``) and of its first test among the run's tests (``first_test``)."""

    seq: int
    first_test: int
    contexts: list[str] = field(default_factory=list)


@dataclass
class EventSink:
    """The trace file and the caller's handler, fed by every thread of the run in turn."""

    trace_file: TextIO
    on_event: EventHandler | None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._tracer = structlog.wrap_logger(
            structlog.WriteLogger(self.trace_file),
            processors=[structlog.processors.JSONRenderer(default=str)],
        )

    def __call__(self, event: dict[str, Any]) -> None:
        with self._lock:
            self._tracer.msg(**event)
            if self.on_event is not None:
                self.on_event(event)


@dataclass
class Engine:
    plan: RunPlan
    saver: BaseCheckpointSaver[Any]
    store: RunStore

    def __post_init__(self) -> None:
        self.context_graph = build_context_graph(checkpointer=self.saver)

    def run(self, *, spent_before: Usage | None, on_event: EventHandler | None) -> Outcome:
        """Run what is left of the run; ``spent_before``: what a resumed run spent before,
        which its spending cap covers. Nothing raised here loses work: a stop or any other
        error is returned as the outcome, and everything finished is in the store."""
        plan = self.plan
        with (
            (plan.run_dir / out.TRACE).open("a", encoding="utf-8") as trace_file,
            outcome_of_work() as outcome,
        ):
            events = EventSink(trace_file, on_event)
            run = services_for(plan.settings, plan.run_id)
            if spent_before is not None:
                run.llm.meter.resume_from(spent_before)
            self.run_head(events)
            if plan.settings.sut.question_alone:  # the corpus the re-ask searches
                run.corpus_index(lambda: plan.contexts)
            self.run_contexts(events)
            self.run_evaluate(events)
        return outcome

    def run_head(self, events: EventHandler) -> None:
        """Probe the components and the judge, once; a head stopped after its probe resumes
        at ``trust_judge``."""
        if self.store.has_meta(HEAD_DONE):
            return
        config = self.plan.thread_config(HEAD_THREAD)
        graph = build_head_graph(checkpointer=self.saver)
        started = self.saver.get_tuple(config) is not None
        first = None if started else {"contexts": self.plan.contexts}
        for mode, chunk in graph.stream(
            first, config, context=self.plan.settings, stream_mode=["custom", "updates"]
        ):
            if mode == "custom":
                events(chunk)
                continue
            for update in chunk.values():
                if update and "judge_probe" in update:
                    self.store.set_meta(JUDGE_PROBE, update["judge_probe"])
                if update and "usage" in update:
                    self.store.set_meta(HEAD_USAGE, update["usage"])
        self.store.set_meta(HEAD_DONE, "yes")
        self.saver.delete_thread(config["configurable"]["thread_id"])

    def run_contexts(self, events: EventHandler) -> None:
        """Each context not yet in the store, ``contexts_at_once`` at a time. After the first
        error no context starts; those running end (or fail), then the error is raised."""
        done = self.store.finished_contexts()
        for thread_id in self.threads(done):  # a run killed before it let go of them
            self.saver.delete_thread(thread_id)
        todo = ((seq, c) for seq, c in enumerate(self.plan.contexts) if c.id not in done)
        at_once = contexts_at_once(self.plan.settings)
        errors: list[BaseException] = []
        running: set[Future[None]] = set()
        with ThreadPoolExecutor(at_once, thread_name_prefix="cq2a-context") as pool:
            while True:
                while not errors and len(running) < at_once:
                    following = next(todo, None)
                    if following is None:
                        break
                    running.add(pool.submit(self.run_context, *following, events))
                if not running:
                    break
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                errors += [e for f in finished if (e := f.exception()) is not None]
        if errors:
            raise errors[0]

    def run_context(self, seq: int, context: Context, events: EventHandler) -> None:
        """One context's thread (``work_context``); then its tests go to ``partial/``."""
        state = self.work_context(seq, context, events)
        ResultFiles(self.plan.run_dir).save_context(state)

    def work_context(self, seq: int, context: Context, events: EventHandler) -> dict[str, Any]:
        """One context's thread, from its checkpoint if it has one; once it ends, its state
        goes to the store and the thread leaves the checkpointer. Its final state."""
        config = self.plan.thread_config(context.id)
        started = self.saver.get_tuple(config) is not None
        for event in self.context_graph.stream(
            None if started else {"context": context},
            config,
            context=self.plan.settings,
            stream_mode="custom",
        ):
            events(event)
        state = self.context_graph.get_state(config).values
        self.store.save_context(context.id, seq, state)
        self.saver.delete_thread(config["configurable"]["thread_id"])
        return state

    def run_evaluate(self, events: EventHandler) -> None:
        """Evaluate the SUT on the accepted tests the store holds, ``EVALUATE_CHUNK_CONTEXTS``
        contexts at a time: each chunk's verdicts go to the store as it ends, so evaluate holds
        one chunk's tests and verdicts, and a resumed run evaluates only the chunks not kept.
        Then the run's figures and evaluate's usage, from every chunk's, and the run's services
        are released."""
        if self.store.has_meta(EVALUATE_USAGE):
            return
        tests, evaluated, chunks = self.evaluate_chunks()
        events(evaluate_started(tests, evaluated, len(chunks)))
        graph = build_evaluate_graph()
        for number, chunk in enumerate(chunks, 1):
            self.evaluate_chunk(graph, chunk, (number, len(chunks)), events)
        self.finish_evaluate()

    def evaluate_chunks(self, size: int | None = None) -> tuple[int, int, list[PendingChunk]]:
        """The run's number of tests, the number a stopped run already evaluated, and the
        chunks left: runs of at most ``size`` (by default ``EVALUATE_CHUNK_CONTEXTS``)
        consecutive contexts that no kept chunk covers, each with the place of its first
        context and of its first test."""
        size = size or EVALUATE_CHUNK_CONTEXTS
        done = {context_id for chunk in self.store.evaluated() for context_id in chunk.contexts}
        tests = evaluated = 0
        chunks: list[PendingChunk] = []
        current: PendingChunk | None = None
        for seq, (context_id, count) in enumerate(self.store.accepted_counts()):
            if context_id in done:
                current = None
                evaluated += count
            else:
                if current is None or len(current.contexts) >= size:
                    current = PendingChunk(seq=seq, first_test=tests)
                    chunks.append(current)
                current.contexts.append(context_id)
            tests += count
        return tests, evaluated, chunks

    def evaluate_chunk(
        self,
        graph: CompiledStateGraph[Any, Settings, Any, Any],
        chunk: PendingChunk,
        place: tuple[int, int],
        events: EventHandler,
    ) -> None:
        """Evaluate one chunk's accepted tests (against the run's whole corpus); its verdicts,
        then the chunk itself, go to the store."""
        candidates, plans = [], []
        for context_id in chunk.contexts:
            record = self.store.context(context_id)
            candidates += [c for c in record.candidates if c.status == "accepted"]
            plans += record.plans
        state: dict[str, Any] = {"contexts": self.plan.contexts, "chunk": place[0]}
        state |= {"candidates": candidates, "plans": plans, "chunks": place[1]}
        config: RunnableConfig = {"configurable": {"run_id": self.plan.run_id}}
        stream: Iterator[Any] = graph.stream(
            state, config, context=self.plan.settings, stream_mode=["custom", "updates"]
        )
        for mode, update in stream:
            if mode == "custom":
                events(update)
            elif result := update.get("evaluate"):
                self.store.save_verdicts(result["verdicts"], chunk.first_test)
                kept = EvaluatedChunk(
                    contexts=chunk.contexts, usage=result["usage"], part=result["part"]
                )
                self.store.save_evaluated(chunk.seq, kept)

    def finish_evaluate(self) -> None:
        """The run's figures and evaluate's usage from its chunks, then its services are
        released: once, after the last chunk, since the run's cache and spending meter serve
        every chunk."""
        kept = self.store.evaluated()
        figures = figures_of(combine_parts(c.part for c in kept), self.plan.settings.mix())
        self.store.set_meta(FIGURES, figures)
        self.store.set_meta(EVALUATE_USAGE, sum((c.usage for c in kept), Usage()))
        release_services(self.plan.run_id)  # the run is over: its cache closes, its meter goes

    def threads(self, contexts: Iterable[str]) -> Iterator[str]:
        """The checkpointed threads of these contexts."""
        saved = self.saved_threads()
        for context_id in contexts:
            thread_id = self.plan.thread_config(context_id)["configurable"]["thread_id"]
            if thread_id in saved:
                yield thread_id

    def saved_threads(self) -> set[str]:
        """The run's threads the checkpointer holds."""
        if isinstance(self.saver, SqliteSaver):
            return saved_threads(self.saver)
        from cq2a.app.postgres import checkpointed  # the distributed extra, only when used

        return checkpointed(self.saver, self.plan.run_id)  # type: ignore[arg-type]

    def in_flight(self) -> Iterator[dict[str, Any]]:
        """The checkpointed state of each context that began and did not end."""
        done = self.store.finished_contexts()
        for thread_id in self.threads(c.id for c in self.plan.contexts if c.id not in done):
            yield self.context_graph.get_state({"configurable": {"thread_id": thread_id}}).values

    def spent(self) -> Usage:
        """What the run spent so far, the contexts in flight included."""
        usage = self.store.usage()
        for state in self.in_flight():
            usage += state.get("usage") or Usage()
        return usage

    def parts(self) -> Iterator[Mapping[str, Any]]:
        """The run's work, one context at a time: each finished context's record from the
        store, in input order, then the state of each context in flight when the run stopped.
        Read one at a time, so writing the results holds no more than one context's work."""
        for record in self.store.contexts():
            yield {key: getattr(record, key) for key in CONTEXT_LISTS}
        for state in self.in_flight():
            yield {key: state.get(key) or [] for key in CONTEXT_LISTS}

    def values(self) -> dict[str, Any]:
        """The run's results beside its work (``parts``): the contexts finished, what the run
        spent, the verdicts, the judge's probe and the suite's figures."""
        return {
            "finished": sorted(self.store.finished_contexts()),
            "usage": self.spent(),
            "verdicts": self.store.verdicts(),
            "judge_probe": self.store.meta(JUDGE_PROBE, ProbeResult),
            "figures": self.store.meta(FIGURES, SuiteFigures),
        }
