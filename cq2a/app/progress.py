"""Live progress of a run in the terminal (rich), fed by the run's trace events."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

#: Without a terminal (CI logs, a redirected stderr) a line is printed when a context finishes,
#: and at most this often in between while the counts move, so a long run is never silent.
HEARTBEAT_S = 30.0


class RunProgress:
    """Counts contexts, candidates, accepted tests, bugs and tokens as events arrive."""

    def __init__(
        self, *, enabled: bool = True, follow: bool = False, console: Console | None = None
    ) -> None:
        self.enabled = enabled
        self.follow = follow
        self.console = console or Console(stderr=True)
        self.started = time.monotonic()
        self._last_line = self.started
        self._printed: dict[str, int] = {}
        self.counts = {
            "contexts started": 0,
            "contexts finished": 0,
            "questions": 0,
            "accepted": 0,
            "rejected": 0,
            "bugs": 0,
            "tokens": 0,
        }
        self.total_contexts: int | None = None
        self._live: Live | None = None

    def __enter__(self) -> RunProgress:
        if self.enabled and self.console.is_terminal:
            self._live = Live(self._table(), console=self.console, refresh_per_second=4)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.__exit__(None, None, None)

    def handle(self, event: dict[str, Any]) -> None:
        name = event.get("event")
        counts = event.get("counts") or {}
        usage = event.get("usage") or {}
        self.counts["tokens"] += int(usage.get("prompt_tokens", 0)) + int(
            usage.get("completion_tokens", 0)
        )
        if name == "run_started":
            self.total_contexts = int(event.get("contexts", 0))
        elif name == "run_estimate" and self.enabled:
            total = event["total"]
            self.console.print(
                f"estimate: about {total['requests']} LLM requests and {total['total_tokens']} "
                "tokens (default rates; `cq2a estimate --from RUN` measures them on a run)"
            )
        elif name == "stage_started" and event.get("stage") == "extract":
            self.counts["contexts started"] += 1
        elif name == "context_finished":
            self.counts["contexts finished"] += 1
        elif name == "stage_finished" and event.get("stage") == "generate":
            self.counts["questions"] += int(counts.get("questions", 0))
        elif name == "candidate_accepted" and event.get("final"):
            self.counts["accepted"] += 1
        elif name == "candidate_rejected" and event.get("final"):
            self.counts["rejected"] += 1
        elif name == "stage_finished" and event.get("stage") == "evaluate":  # one per chunk
            self.counts["bugs"] += int(counts.get("bugs", 0))
        if self.follow:
            self.console.print_json(data=event)
        if self._live is not None:
            self._live.update(self._table())
        elif self.enabled and not self.follow and self._is_due(event):
            self.console.print(self._line())
            self._last_line = time.monotonic()
            self._printed = dict(self.counts)

    def _is_due(self, event: dict[str, Any]) -> bool:
        """A context or the evaluation finished, or the heartbeat is due and something moved."""
        is_evaluate = event.get("event") == "stage_finished" and event.get("stage") == "evaluate"
        if event.get("event") == "context_finished" or is_evaluate:
            return True
        moved = self.counts != self._printed
        return moved and time.monotonic() - self._last_line >= HEARTBEAT_S

    def _line(self) -> str:
        elapsed = time.monotonic() - self.started
        parts = [f"{key} {value}" for key, value in self.counts.items()]
        return f"[{elapsed:6.0f}s] " + ", ".join(parts)

    def _table(self) -> Table:
        table = Table(title="cq2a run", show_header=False)
        for key, value in self.counts.items():
            table.add_row(key, str(value))
        elapsed = time.monotonic() - self.started
        table.add_row("elapsed", f"{elapsed:.0f}s")
        finished = self.counts["contexts finished"]
        started = self.counts["contexts started"]
        if finished and self.total_contexts:
            remaining = elapsed / finished * (self.total_contexts - finished)
            table.add_row("remaining", f"~{remaining:.0f}s")
        elif started:
            table.add_row("remaining", "estimating")
        return table
