"""Which files an input names: one file, a folder (recursively) or a glob, each with the name
its passages are known by (the path relative to the folder, or the file's name)."""

from __future__ import annotations

import glob
from collections.abc import Iterator
from pathlib import Path

from cq2a.documents.readers import DOCUMENT_SUFFIXES

_GLOB_CHARACTERS = frozenset("*?[")


def is_glob(text: str) -> bool:
    return bool(_GLOB_CHARACTERS & set(text))


def names_documents(path: str | Path) -> bool:
    """Whether the input is documents (a folder, a glob, or a document file) rather than
    JSONL or one context per line."""
    path = Path(path)
    if path.is_dir():
        return True
    if path.suffix.lower() in DOCUMENT_SUFFIXES:
        return True
    return not path.exists() and is_glob(str(path))


def _glob_root(pattern: str) -> Path:
    """The folder above a glob's first wildcard: what its files' names are relative to."""
    parts = Path(pattern).parts
    end = next((i for i, part in enumerate(parts) if is_glob(part)), len(parts) - 1)
    return Path(*parts[:end]) if end else Path()


def _visible(path: Path, root: Path) -> bool:
    return not any(part.startswith(".") for part in path.relative_to(root).parts)


def document_files(path: str | Path) -> Iterator[tuple[Path, str]]:
    """Each file of the input with its name, in a stable (sorted) order; hidden files and
    folders of a folder are passed over."""
    path = Path(path)
    if path.is_file():
        yield path, path.name
        return
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and _visible(p, path))
        root = path
    else:
        root = _glob_root(str(path))
        files = sorted(Path(p) for p in glob.glob(str(path), recursive=True) if Path(p).is_file())
    for file in files:
        yield file, file.relative_to(root).as_posix()
