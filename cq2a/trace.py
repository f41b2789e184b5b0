"""Per-context trace events: to the graph's custom stream and to structlog."""

from __future__ import annotations

import time
from typing import Any

import structlog

log = structlog.get_logger("cq2a")


def emit(event: str, **fields: Any) -> dict[str, Any]:
    """Send one typed event to the custom stream (when inside a graph run) and to the log."""
    record = {"event": event, "ts": round(time.time(), 3), **fields}
    try:
        from langgraph.config import get_stream_writer

        get_stream_writer()(record)
    except (RuntimeError, ImportError):
        pass  # called outside a graph run
    log.debug(event, **fields)
    return record
