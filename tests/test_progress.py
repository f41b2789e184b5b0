"""Progress without a terminal: CI logs get a line per finished context and a heartbeat."""

from __future__ import annotations

import io

from rich.console import Console

from cq2a.app.progress import HEARTBEAT_S, RunProgress


def _progress() -> tuple[RunProgress, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    return RunProgress(console=console), out


def test_without_a_terminal_a_line_comes_per_context_and_on_the_heartbeat() -> None:
    progress, out = _progress()
    with progress:
        progress.handle({"event": "stage_started", "stage": "extract", "context_id": "c1"})
        assert out.getvalue() == ""  # nothing due yet: the run started a moment ago

        progress._last_line -= HEARTBEAT_S + 1
        progress.handle({"event": "candidate_accepted", "final": True})
        lines = out.getvalue().splitlines()
        assert len(lines) == 1 and "accepted 1" in lines[0]

        progress.handle({"event": "candidate_rejected", "final": True})
        assert len(out.getvalue().splitlines()) == 1  # the heartbeat was just printed

        progress.handle({"event": "context_finished", "context_id": "c1"})
        lines = out.getvalue().splitlines()
        assert len(lines) == 2 and "contexts finished 1" in lines[1] and "rejected 1" in lines[1]


def test_the_heartbeat_is_silent_when_nothing_moved() -> None:
    progress, out = _progress()
    with progress:
        progress.handle({"event": "context_finished", "context_id": "c1"})
        assert len(out.getvalue().splitlines()) == 1
        progress._last_line -= HEARTBEAT_S + 1
        progress.handle({"event": "stage_started", "stage": "generate", "context_id": "c2"})
        assert len(out.getvalue().splitlines()) == 1
