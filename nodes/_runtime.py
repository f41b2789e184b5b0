"""What every node needs: the run's services, built from the settings LangGraph passes as the
runtime context (``graph.invoke(..., context=settings)``); each step's limits come from
``cq2a.runtime.steps``; and the run's corpus, for a SUT that gets the question alone."""

from __future__ import annotations

from functools import partial
from typing import Any

from langgraph.config import get_config
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.runtime import Runtime

from cq2a.consistency.reask import CorpusSearch
from cq2a.models.records import Context
from cq2a.runtime.services import Services, services_for
from cq2a.settings import Settings


def services(runtime: Runtime[Settings]) -> Services:
    """The services of this run, keyed so runs do not share a spending meter: by the config's
    ``run_id`` where the run spans several threads (``cq2a run``: one per context), else by
    the thread id."""
    settings = runtime.context
    try:
        configurable = get_config().get("configurable", {})
    except RuntimeError:
        configurable = {}
    run_key = configurable.get("run_id") or configurable.get("thread_id", "default")
    return services_for(settings, str(run_key))


def corpus_search(runtime: Runtime[Settings]) -> CorpusSearch | None:
    """With ``sut.input == "question"``, the search of the run's corpus that the re-ask runs
    a question through (``corpus_top_k`` passages); else None.

    The index lives on the run's services, not in the graph state: a BM25 index is not
    serialisable, and copying every context into each context's branch would write the corpus
    once per context into the checkpoint. The run's first node (``probe``) indexes the
    run's ``contexts`` (``cq2a run`` indexes them itself before its contexts' threads start,
    on a resume too). A resumed run (``cq2a run --resume``, or a server that restarted) does
    not run ``probe`` again and starts with fresh services, so the index is rebuilt here, once,
    from the ``contexts`` the run's root checkpoint holds: the same contexts the run began
    with, whatever inputs the resuming command was given."""
    run = services(runtime)
    if not run.settings.sut.question_alone:
        return None
    index = run.corpus_index(checkpointed_contexts)
    return partial(index.top, k=run.settings.corpus_top_k)


def checkpointed_contexts() -> list[Context]:
    """The contexts of this run, read from its thread's root checkpoint (none without one)."""
    configurable: dict[str, Any] = get_config().get("configurable", {})
    saver = configurable.get(CONFIG_KEY_CHECKPOINTER)
    if saver is None:
        return []
    root = {"configurable": {"thread_id": configurable.get("thread_id"), "checkpoint_ns": ""}}
    saved = saver.get_tuple(root)
    values = saved.checkpoint.get("channel_values", {}) if saved else {}
    return [Context.model_validate(c) for c in values.get("contexts", [])]
