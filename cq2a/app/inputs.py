"""Reading contexts: JSONL (``{"id", "context", ...}``) or plain text, one context per line; or
documents (a .txt, .md, .html or .pdf file, a folder of them, or a glob) cut into passages by
``cq2a.documents``.

Bad input never stops a run: each bad line or context becomes a recorded ``Skip`` with a reason,
and repairable problems (control characters, oversize contexts) are repaired and noted.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from cq2a.documents.corpus import Tally, read_corpus
from cq2a.documents.readers import CONTROL_CHARACTERS
from cq2a.documents.sources import is_glob, names_documents
from cq2a.language.detect import detect_language, language_name
from cq2a.models.records import Context, Skip
from cq2a.settings import DEFAULT_LANGUAGES


class InputError(ValueError):
    """The input as a whole cannot be read; the message says what to do."""


def read_contexts(
    path: str | Path,
    max_chars: int,
    passage_chars: int | None = None,
    languages: Sequence[str] = DEFAULT_LANGUAGES,
) -> tuple[list[Context], list[Skip]]:
    """Contexts from a JSONL or text file, and the lines skipped with their reasons; from
    documents, their passages of at most ``passage_chars`` (``max_chars`` when not given).
    Each context's language is detected among ``languages`` (``clean_context``)."""
    if names_documents(path):
        size = min(passage_chars or max_chars, max_chars)
        return read_documents(path, max_chars, size, languages)
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError as error:
        raise InputError(f"input not found: {path}") from error
    except (IsADirectoryError, PermissionError) as error:
        raise InputError(f"cannot read input {path}: {error.strerror}") from error
    is_jsonl = path.suffix in {".jsonl", ".json"} or raw.lstrip().startswith(b"{")
    contexts: list[Context] = []
    skips: list[Skip] = []
    seen: set[str] = set()
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        context, skip = _read_line(line, number, is_jsonl)
        if context is not None and context.id in seen:
            skip = Skip(id=context.id, reason="duplicate_id", detail=f"line {number}")
            context = None
        if context is not None:
            context, skip = clean_context(context, max_chars, languages)
        if skip is not None:
            skips.append(skip)
        if context is not None:
            seen.add(context.id)
            contexts.append(context)
    return contexts, skips


def read_documents(
    path: str | Path,
    max_chars: int,
    passage_chars: int,
    languages: Sequence[str] = DEFAULT_LANGUAGES,
) -> tuple[list[Context], list[Skip]]:
    """The passages of a document, folder or glob, cleaned like any context; an input with no
    readable file is an ``InputError`` that says what it found."""
    if not Path(path).exists() and not is_glob(str(path)):
        raise InputError(f"input not found: {path}")
    contexts: list[Context] = []
    skips: list[Skip] = []
    tally = Tally()
    for item in read_corpus(path, passage_chars, tally):
        context: Context | None = None
        skip: Skip | None = None
        if isinstance(item, Skip):
            skip = item
        else:
            context, skip = clean_context(item, max_chars, languages)
        if skip is not None:
            skips.append(skip)
        if context is not None:
            contexts.append(context)
    if not tally.read:
        raise InputError(tally.nothing_readable(path))
    return contexts, skips


def _read_line(line: bytes, number: int, is_jsonl: bool) -> tuple[Context | None, Skip | None]:
    where = f"line {number}"
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, Skip(id=where, reason="invalid_utf8", detail=str(error))
    if not is_jsonl:
        return Context(id=f"line{number}", context=text), None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        return None, Skip(id=where, reason="invalid_json", detail=str(error))
    if not isinstance(record, dict):
        return None, Skip(id=where, reason="invalid_json", detail="not a JSON object")
    if not isinstance(record.get("context"), str):
        return None, Skip(id=str(record.get("id", where)), reason="missing_context", detail=where)
    human = [a for qa in record.get("qas", []) for a in qa.get("answers", []) if isinstance(a, str)]
    return (
        Context(
            id=str(record.get("id") or f"line{number}"),
            context=record["context"],
            title=record.get("title"),
            dataset=record.get("dataset"),
            human_answers=human,
            language=_language_field(record.get("language")),
        ),
        None,
    )


def _language_field(value: object) -> str | None:
    """A record's own ``language`` (ISO 639-1), lower-cased; anything else is ignored."""
    return value.strip().lower() or None if isinstance(value, str) else None


def clean_context(
    context: Context, max_chars: int, languages: Sequence[str] = DEFAULT_LANGUAGES
) -> tuple[Context | None, Skip | None]:
    """Repair what can be repaired, skip what cannot; the context's language is its own, or
    detected among ``languages`` (a context in another language is skipped)."""
    text = unicodedata.normalize("NFC", CONTROL_CHARACTERS.sub(" ", context.context))
    notes = [context.note] if context.note else []
    if text != context.context:
        notes.append("control characters replaced")
    text = text.strip()
    if not any(ch.isalnum() for ch in text):
        return None, Skip(id=context.id, reason="empty_context", detail="no words in the context")
    language = context.language or detect_language(text, languages)
    if language not in languages:
        detail = (
            f"{language_name(language)} ({language}); this run reads "
            f"{', '.join(languages)}: add it with --languages (or --language {language}), "
            "with --parser stanza online where spaCy has no model for it"
        )
        return None, Skip(id=context.id, reason="unsupported_language", detail=detail)
    if len(text) > max_chars:
        cut = text.rfind(". ", 0, max_chars)
        cut = cut + 1 if cut > max_chars // 2 else max_chars
        notes.append(f"truncated from {len(text)} to {cut} characters (max_context_chars)")
        text = text[:cut]
    note = "; ".join(notes) or None
    update = {"context": text, "note": note, "language": language}
    return context.model_copy(update=update), None
