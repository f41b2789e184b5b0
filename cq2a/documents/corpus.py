"""An input of documents as passages: files read one at a time, each cut into passages that
become contexts with their source; a file that cannot be read, and a passage already seen in
another place, become skips with the reason."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cq2a.documents.readers import Document, Unreadable, read_document
from cq2a.documents.sources import document_files
from cq2a.documents.split import passages
from cq2a.models.records import Context, Skip, Source

#: How the reasons a file was skipped read in a message, one and many.
_REASON_NAMES = {
    "image_only_pdf": ("image-only PDF", "image-only PDFs"),
    "encrypted_pdf": ("encrypted PDF", "encrypted PDFs"),
    "unreadable_pdf": ("unreadable PDF", "unreadable PDFs"),
    "binary_file": ("binary", "binary"),
    "empty_file": ("empty", "empty"),
    "unknown_encoding": ("not UTF-8", "not UTF-8"),
    "unsupported_format": ("of another format", "of other formats"),
    "no_text": ("without text", "without text"),
}


def passage_id(file: str, text: str) -> str:
    """``<file>#<8 hex of the passage's SHA-1>``: the same passage of the same file keeps its
    id whatever else the input holds or where in the file it moved."""
    return f"{file}#{hashlib.sha1(text.encode('utf-8')).hexdigest()[:8]}"


def document_contexts(document: Document, max_chars: int) -> Iterator[Context]:
    """The document's passages as contexts, each with its source; what reading did to the
    document is noted on its first passage."""
    for number, span in enumerate(passages(document.text, max_chars)):
        text = document.text[span.start : span.end]
        notes = [note for note in (document.note if number == 0 else None, span.note) if note]
        yield Context(
            id=passage_id(document.file, text),
            context=text,
            title=document.file,
            note="; ".join(notes) or None,
            source=Source(
                file=document.file,
                page=document.page_at(span.start),
                start=span.start,
                end=span.end,
            ),
        )


@dataclass
class Tally:
    """What the files of an input came to: how many were read, and why the others were not."""

    files: int = 0
    read: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def nothing_readable(self, path: str | Path) -> str:
        if not self.files:
            return f"no files in {path}"
        parts = [
            f"{count} {_REASON_NAMES.get(reason, (reason, reason))[count > 1]}"
            for reason, count in self.skipped.most_common()
        ]
        files = "1 file" if self.files == 1 else f"{self.files} files"
        return f"{path}: {files}, none readable: {', '.join(parts)}"


def read_corpus(
    path: str | Path, passage_chars: int, tally: Tally | None = None
) -> Iterator[Context | Skip]:
    """The input's passages and skips, one file at a time; a passage whose text (whitespace
    aside) came before is a ``duplicate_passage`` skip, so boilerplate yields one test set."""
    tally = tally if tally is not None else Tally()
    seen: dict[str, str] = {}
    for file_path, name in document_files(path):
        tally.files += 1
        try:
            document = read_document(file_path, name)
        except Unreadable as problem:
            tally.skipped[problem.reason] += 1
            yield Skip(id=name, reason=problem.reason, detail=problem.detail)
            continue
        except OSError as error:
            tally.skipped["unreadable_file"] += 1
            yield Skip(id=name, reason="unreadable_file", detail=str(error))
            continue
        tally.read += 1
        for context in document_contexts(document, passage_chars):
            key = hashlib.sha1(" ".join(context.context.split()).encode("utf-8")).hexdigest()
            if key in seen:
                detail = f"the same text as {seen[key]}"
                yield Skip(id=context.id, reason="duplicate_passage", detail=detail)
                continue
            seen[key] = context.id
            yield context
