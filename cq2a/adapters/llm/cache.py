"""A replayable LLM response cache in SQLite.

Keyed by the model's identity, the messages, the sampling parameters and the seed, so a repeated
run with the same settings makes no request and gets the same outputs. Hits are counted, which
LangChain's own cache interface does not expose.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any


def cache_key(payload: dict[str, Any]) -> str:
    """A stable digest of everything that changes a response."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


class LLMCache:
    """SQLite table of request digest -> list of completion texts."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        with self._lock, self._db:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS completions ("
                "key TEXT PRIMARY KEY, request TEXT NOT NULL, outputs TEXT NOT NULL)"
            )

    def get(self, key: str) -> list[str] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT outputs FROM completions WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def put(self, key: str, request: dict[str, Any], outputs: list[str]) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO completions (key, request, outputs) VALUES (?, ?, ?)",
                (key, json.dumps(request, default=str), json.dumps(outputs)),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM completions").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
