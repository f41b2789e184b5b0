"""How many rows of each list ``report.html`` inlines, so the page stays usable at 100,000
contexts: a list longer than its limit shows its first rows and a note naming the file beside the
page that holds every row. The summaries (cards, funnel, reasons, charts, cause bar) are computed
over the whole run and are not cut."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel

#: Bug rows inlined in the bugs table (in ``bugs.jsonl`` order).
MAX_BUGS = 500
#: Contexts whose full text and marked answers are inlined (those with bugs first).
MAX_CONTEXT_VIEWS = 200
#: Contexts named in the "no accepted tests" line.
MAX_UNTESTED = 200
#: Rows of the suite's sentence-coverage heat map.
MAX_HEAT_ROWS = 500

#: The files beside the page that list every context (coverage of each context's text, and of
#: its sentences as the suite's heat map shows it); every bug is in ``exports.CSV_BUGS``.
CONTEXT_COVERAGE = "context_coverage.csv"
SENTENCE_COVERAGE = "sentence_coverage.csv"

ItemT = TypeVar("ItemT")


class Cut(BaseModel):
    """A list the page shows part of: ``shown`` of ``total`` ``what``, all of them in ``file``
    beside the page; ``filtered`` says the page's filters work on the shown rows only."""

    what: str
    shown: int
    total: int
    file: str
    filtered: bool = False

    @property
    def cut(self) -> bool:
        return self.shown < self.total


def first(items: Sequence[ItemT], limit: int) -> list[ItemT]:
    """The first ``limit`` items: the list's own order is kept, so a small run's page is as
    before and a large run's shows the rows its files list first."""
    return list(items[:limit])


def cut(what: str, shown: int, total: int, file: str, filtered: bool = False) -> Cut:
    return Cut(what=what, shown=shown, total=total, file=file, filtered=filtered)
