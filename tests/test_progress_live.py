"""Trace events reach the caller while the contexts run, not when one of them ends: a run with
more contexts than it runs at once, whose progress heartbeat must show work before any context
finishes. Every role is played by the scripted server, which answers slowly."""

from __future__ import annotations

import io
import time
from typing import Any

import pytest
from rich.console import Console

from cq2a.app import progress as progress_module
from cq2a.app.progress import RunProgress
from cq2a.app.run import run_pipeline
from cq2a.runtime.services import release_services
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker


@pytest.fixture(autouse=True)
def fresh_runtimes():
    release_services()
    yield
    release_services()


def test_a_contexts_events_arrive_before_any_context_finishes(tmp_path, monkeypatch):
    monkeypatch.setattr(progress_module, "HEARTBEAT_S", 0.0)
    out = io.StringIO()
    progress = RunProgress(console=Console(file=out, force_terminal=False, width=200))
    arrivals: list[tuple[float, dict[str, Any], str]] = []

    def on_event(event: dict[str, Any]) -> None:
        progress.handle(event)
        arrivals.append((time.time(), event, out.getvalue()))

    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(3))
    with ScriptedLLMServer(latency_s=0.2) as server:
        worker.script().install(server.rules)
        settings = worker.settings_for(server.base_url, concurrency=2)
        with progress:
            summary = run_pipeline(input_path, tmp_path / "run", settings, on_event=on_event)
    assert summary.status == "finished", summary.message

    first_finish = min(e["ts"] for _, e, _ in arrivals if e["event"] == "context_finished")
    live = [
        printed
        for arrived, event, printed in arrivals
        if event["event"] == "stage_finished" and event.get("stage") == "generate"
        if arrived < first_finish
    ]
    # both contexts that run at once wrote their questions long before either finished
    assert len(live) >= 2
    heartbeat = live[-1].splitlines()[-1]
    assert "contexts started 2, contexts finished 0, questions" in heartbeat
    assert "questions 0" not in heartbeat
