"""Pages of a PDF: the header and footer lines repeated on most pages, removed; the pages
joined into one text with the offset where each starts."""

from __future__ import annotations

import re
from collections import Counter

#: A line counts as repeated when it is on at least this share of the pages...
REPEATED_SHARE = 0.6
#: ...of a document of at least this many pages.
MIN_PAGES = 3
#: Lines looked at for a header at a page's top and for a footer at its bottom.
EDGE_LINES = 2
PAGE_BREAK = "\n\n"
_DIGITS = re.compile(r"\d+")


def line_shape(line: str) -> str:
    """A line with its numbers as ``#`` and case folded: "Page 3 of 10" and "Page 4 of 10"
    are one shape."""
    return _DIGITS.sub("#", " ".join(line.split()).casefold())


def _edges(lines: list[str]) -> set[int]:
    """The lines a header or footer may be: up to ``EDGE_LINES`` at each end, and never the
    middle line of a short page (a page of four lines has one line of header room at each end)."""
    count = len(lines)
    room = min(EDGE_LINES, max((count - 1) // 2, 0))
    return set(range(room)) | set(range(count - room, count))


def repeated_shapes(pages: list[list[str]]) -> set[str]:
    """Shapes of the lines found at the top or bottom of most pages."""
    if len(pages) < MIN_PAGES:
        return set()
    seen = Counter(
        shape for lines in pages for shape in {line_shape(lines[i]) for i in _edges(lines)} if shape
    )
    return {
        shape for shape, pages_with in seen.items() if pages_with >= REPEATED_SHARE * len(pages)
    }


def without_repeated_lines(pages: list[str]) -> tuple[list[str], int]:
    """The pages without their repeated header and footer lines, and how many were removed."""
    split = [page.split("\n") for page in pages]
    repeated = repeated_shapes(split)
    kept, removed = [], 0
    for lines in split:
        edges = _edges(lines)
        keep = [
            line
            for i, line in enumerate(lines)
            if i not in edges or line_shape(line) not in repeated
        ]
        removed += len(lines) - len(keep)
        kept.append("\n".join(keep).strip())
    return kept, removed


def join_pages(pages: list[str]) -> tuple[str, list[int]]:
    """One text, pages apart by a blank line, and the offset where each page starts."""
    starts, offset = [], 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + len(PAGE_BREAK)
    return PAGE_BREAK.join(pages), starts
