"""The files of a run directory, written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

TEST_CASES = "test_cases.jsonl"
REJECTED = "rejected.jsonl"
PENDING = "pending.jsonl"
#: The accepted candidates of each finished context, in ``partial/``.
ACCEPTED = "accepted.jsonl"
CANDIDATES = "candidates.jsonl"
BUGS = "bugs.jsonl"
VERDICTS = "verdicts.jsonl"
ANSWERS = "answers.jsonl"
SKIPPED = "skipped.jsonl"
RUN = "run.json"
TRACE = "trace.jsonl"
CHECKPOINTS = "checkpoints.sqlite"
#: What each finished context produced, the verdicts and the run's figures (``cq2a.app.store``).
STORE = "run.sqlite"
LLM_CACHE = "llm_cache.sqlite"
#: The whole input's passages, for a retrieval SUT of a run limited to its first contexts.
CORPUS = "corpus.jsonl"
PARTIAL = "partial"


def _line(record: BaseModel | dict[str, Any]) -> str:
    if isinstance(record, BaseModel):
        return record.model_dump_json()
    return json.dumps(record, default=str)


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def write_jsonl(path: Path, records: Iterable[BaseModel | dict[str, Any]]) -> int:
    lines = [_line(record) for record in records]
    write_atomic(path, "".join(f"{line}\n" for line in lines))
    return len(lines)


class JsonlFile:
    """A JSONL file written a batch at a time, so its records never need to be in memory at
    once; it replaces the file of its name only when ``jsonl_files`` completes."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        self.path, self._tmp = path, Path(tmp)
        self._handle = os.fdopen(fd, "w", encoding="utf-8")

    def add(self, records: Iterable[BaseModel | dict[str, Any]]) -> None:
        for record in records:
            self._handle.write(_line(record) + "\n")

    def close(self, *, keep: bool) -> None:
        self._handle.close()
        if keep:
            os.replace(self._tmp, self.path)
        else:
            self._tmp.unlink(missing_ok=True)


@contextmanager
def jsonl_files(directory: Path, *names: str) -> Iterator[dict[str, JsonlFile]]:
    """One ``JsonlFile`` per name in ``directory``; each replaces its file if the block ends
    without an error, and none does otherwise."""
    files = {name: JsonlFile(directory / name) for name in names}
    try:
        yield files
    except BaseException:
        for file in files.values():
            file.close(keep=False)
        raise
    for file in files.values():
        file.close(keep=True)


def append_jsonl(path: Path, records: Iterable[BaseModel | dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for record in records:
            handle.write(_line(record) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_json(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=2, default=str) + "\n")


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))
