"""Per-context trace events, sent to the graph's custom stream.

A run (``cq2a.run``) writes every event to ``trace.jsonl`` through structlog; outside a graph
run, events go to structlog directly.
"""

from __future__ import annotations

import time
from typing import Any

import structlog

log = structlog.get_logger("cq2a")


def emit(event: str, **fields: Any) -> dict[str, Any]:
    """Send one typed event to the custom stream (inside a graph run) or to the log."""
    record = {"event": event, "ts": round(time.time(), 3), **fields}
    try:
        from langgraph.config import get_stream_writer

        get_stream_writer()(record)
    except (RuntimeError, ImportError, KeyError):
        log.debug(event, **fields)
    return record
