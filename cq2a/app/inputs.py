"""Reading contexts: JSONL (``{"id", "context", ...}``) or plain text, one context per line; or
documents (a .txt, .md, .html or .pdf file, a folder of them, or a glob) cut into passages by
``cq2a.documents``.

Bad input never stops a run: each bad line or context becomes a recorded ``Skip`` with a reason,
and repairable problems (control characters, oversize contexts) are repaired and noted.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from cq2a.documents.corpus import Tally, read_corpus
from cq2a.documents.readers import CONTROL_CHARACTERS
from cq2a.documents.sources import is_glob, names_documents
from cq2a.language.lexicon import words
from cq2a.models.records import Context, Skip


class InputError(ValueError):
    """The input as a whole cannot be read; the message says what to do."""


_ENGLISH_FUNCTION_WORDS = frozenset(
    "the of and to in a is was for on that with as by at from his her it an were are which "
    "this be or their has had its not but they he she also been who have one after into".split()
)
#: Function words of German, French, Spanish, Italian, Dutch and Portuguese that English lacks.
_OTHER_FUNCTION_WORDS = frozenset(
    "der die das und ist nicht ein eine einer mit von zu den dem sie ihren auf für auch sich "
    "le la les et est une des du au pour pas sur dans qui que ce sont avec el los las y es "
    "del que por una con para se su lo como il di che della per non sono gli nel alla het "
    "een en van zijn niet op voor met dat os um uma em não são para com".split()
)


def read_contexts(
    path: str | Path, max_chars: int, passage_chars: int | None = None
) -> tuple[list[Context], list[Skip]]:
    """Contexts from a JSONL or text file, and the lines skipped with their reasons; from
    documents, their passages of at most ``passage_chars`` (``max_chars`` when not given)."""
    if names_documents(path):
        return read_documents(path, max_chars, min(passage_chars or max_chars, max_chars))
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
            context, skip = clean_context(context, max_chars)
        if skip is not None:
            skips.append(skip)
        if context is not None:
            seen.add(context.id)
            contexts.append(context)
    return contexts, skips


def read_documents(
    path: str | Path, max_chars: int, passage_chars: int
) -> tuple[list[Context], list[Skip]]:
    """The passages of a document, folder or glob, cleaned like any context; an input with no
    readable file is an ``InputError`` that says what it found."""
    if not Path(path).exists() and not is_glob(str(path)):
        raise InputError(f"input not found: {path}")
    contexts: list[Context] = []
    skips: list[Skip] = []
    tally = Tally()
    for item in read_corpus(path, passage_chars, tally):
        context, skip = (None, item) if isinstance(item, Skip) else clean_context(item, max_chars)
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
        ),
        None,
    )


def looks_english(text: str) -> bool:
    """A cheap language check: mostly Latin letters, and English function words outnumber
    those of the other common Latin-script languages (lists of names stay English)."""
    letters = [ch for ch in text if ch.isalpha()]
    if letters and sum(ch.isascii() for ch in letters) / len(letters) < 0.8:
        return False
    tokens = words(text)
    english = sum(token in _ENGLISH_FUNCTION_WORDS for token in tokens)
    foreign = sum(token in _OTHER_FUNCTION_WORDS for token in tokens)
    return english >= foreign


def clean_context(context: Context, max_chars: int) -> tuple[Context | None, Skip | None]:
    """Repair what can be repaired, skip what cannot."""
    text = unicodedata.normalize("NFC", CONTROL_CHARACTERS.sub(" ", context.context))
    notes = [context.note] if context.note else []
    if text != context.context:
        notes.append("control characters replaced")
    text = text.strip()
    if not any(ch.isalnum() for ch in text):
        return None, Skip(id=context.id, reason="empty_context", detail="no words in the context")
    if not looks_english(text):
        detail = "cq2a's parser and prompts are English; this context is not"
        return None, Skip(id=context.id, reason="non_english", detail=detail)
    if len(text) > max_chars:
        cut = text.rfind(". ", 0, max_chars)
        cut = cut + 1 if cut > max_chars // 2 else max_chars
        notes.append(f"truncated from {len(text)} to {cut} characters (max_context_chars)")
        text = text[:cut]
    note = "; ".join(notes) or None
    return context.model_copy(update={"context": text, "note": note}), None
