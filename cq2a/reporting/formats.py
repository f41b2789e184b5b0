"""How the report writes a number: shares as percentages, seconds as a wall time, bars."""

from __future__ import annotations

from pydantic import BaseModel


def percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    minutes, rest = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {rest:02d}s" if minutes else f"{seconds:.1f}s"


class Bar(BaseModel):
    """A count drawn as a horizontal bar: ``width`` is its length in percent of the largest."""

    value: int
    width: float


def bar(value: int, top: int) -> Bar:
    return Bar(value=value, width=100 * value / top if top > 0 else 0)
