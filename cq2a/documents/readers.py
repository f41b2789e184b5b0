"""One reader per format, each giving a document's extracted text: the text every offset of its
passages points into. A file that cannot be read raises ``Unreadable`` with the reason."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bs4 import BeautifulSoup
from markdown_it import MarkdownIt
from pypdf import PdfReader
from pypdf.errors import PdfReadError

from cq2a.documents.pages import join_pages, without_repeated_lines

#: Control characters that are not line breaks or tabs; they become spaces.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: Elements that hold no reading text: navigation, code, page furniture, forms.
DROPPED_ELEMENTS = "nav script style header footer aside noscript template form".split()
#: Elements after which a paragraph ends.
BLOCK_ELEMENTS = (
    "p div li h1 h2 h3 h4 h5 h6 br tr td th section article pre blockquote dd dt "
    "table ul ol title figcaption caption main".split()
)


class Unreadable(Exception):
    """A file with no text cq2a can read; ``reason`` is the skip's reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Document:
    """A file's extracted text; ``page_starts`` are the offsets where each page begins (PDF)."""

    file: str
    text: str
    page_starts: list[int] = field(default_factory=list)
    note: str | None = None

    def page_at(self, offset: int) -> int | None:
        """The 1-based page of the character at ``offset``; None for a file without pages."""
        if not self.page_starts:
            return None
        return sum(start <= offset for start in self.page_starts)


def plain_text(text: str) -> str:
    """Unicode NFC with control characters as spaces and line ends as ``\\n``: the form a
    passage keeps, so no later cleaning moves its offsets."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", CONTROL_CHARACTERS.sub(" ", text))


def tidy_lines(text: str) -> str:
    """Spaces collapsed within each line, and runs of blank lines as one paragraph break."""
    lines = [" ".join(line.split()) for line in text.split("\n")]
    paragraphs = "\n".join(lines).split("\n\n")
    return "\n\n".join(p.strip("\n") for p in paragraphs if p.strip()).strip()


def decoded(raw: bytes) -> str:
    if not raw.strip():
        raise Unreadable("empty_file", "the file is empty")
    if b"\x00" in raw:
        raise Unreadable("binary_file", "the file holds NUL bytes: not text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        detail = f"not UTF-8 ({error.reason} at byte {error.start})"
        raise Unreadable("unknown_encoding", detail) from error


def read_text(path: Path) -> str:
    return plain_text(decoded(path.read_bytes())).strip()


def html_text(markup: str | bytes) -> str:
    """The reading text of a page: no navigation, scripts, styles, page header or footer,
    asides or forms, and a paragraph break after every block element."""
    soup = BeautifulSoup(markup, "html.parser")
    for element in soup.find_all(DROPPED_ELEMENTS):
        element.decompose()
    for element in soup.find_all(BLOCK_ELEMENTS):
        element.insert_after("\n\n")
    return tidy_lines(plain_text(soup.get_text()))


def read_html(path: Path) -> str:
    raw = path.read_bytes()
    decoded(raw)  # the same checks as text (empty, binary, encoding)
    return html_text(raw)


def read_markdown(path: Path) -> str:
    """Markdown rendered, then read as HTML: the text without its markup."""
    return html_text(MarkdownIt("commonmark").render(read_text(path)))


def read_pdf(path: Path) -> tuple[str, list[int], str | None]:
    """The pages' text, repeated headers and footers removed, pages joined by a blank line."""
    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("encrypted_pdf", "the PDF needs a password")
        pages = [plain_text(page.extract_text() or "") for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, OSError) as error:
        raise Unreadable("unreadable_pdf", f"pypdf cannot read it: {error}") from error
    except NotImplementedError as error:  # an encryption pypdf does not implement
        raise Unreadable("encrypted_pdf", str(error)) from error
    if not any(any(ch.isalnum() for ch in page) for page in pages):
        raise Unreadable("image_only_pdf", f"no text on its {len(pages)} pages (scanned?)")
    kept, removed = without_repeated_lines([tidy_lines(page) for page in pages])
    text, starts = join_pages(kept)
    note = f"{removed} repeated header/footer lines removed" if removed else None
    return text, starts, note


TEXT_READERS: dict[str, Callable[[Path], str]] = {
    ".txt": read_text,
    ".md": read_markdown,
    ".markdown": read_markdown,
    ".html": read_html,
    ".htm": read_html,
}
#: The suffixes a folder or glob is read for.
DOCUMENT_SUFFIXES = frozenset({*TEXT_READERS, ".pdf"})


def read_document(path: Path, file: str) -> Document:
    """The document at ``path``, named ``file`` (its path relative to the input)."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        if path.stat().st_size == 0:
            raise Unreadable("empty_file", "the file is empty")
        text, starts, note = read_pdf(path)
        return Document(file, text, starts, note)
    reader = TEXT_READERS.get(suffix)
    if reader is None:
        raise Unreadable("unsupported_format", f"cq2a reads {', '.join(sorted(DOCUMENT_SUFFIXES))}")
    text = reader(path)
    if not any(ch.isalnum() for ch in text):
        raise Unreadable("no_text", "no words in the file")
    return Document(file, text)
