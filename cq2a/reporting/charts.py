"""The distributions: consistency similarity (III-C2), oracle similarity and judge scores
(III-D), each a ten-bin histogram with the threshold the run applied drawn across it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from cq2a.reporting.exports import RunData

BINS = 10
WIDTH, HEIGHT, PAD = 300, 150, 20
Stage = Literal["consistency", "oracle", "judge"]


class HistogramBar(BaseModel):
    low: float
    high: float
    count: int
    x: float
    y: float
    width: float
    height: float


class Tick(BaseModel):
    value: float
    x: float
    anchor: Literal["start", "middle", "end"]


class Chart(BaseModel):
    """A histogram in SVG user units: ``WIDTH`` by ``HEIGHT`` with ``PAD`` around the plot."""

    title: str
    values: int
    threshold: float | None
    threshold_x: float | None
    bars: list[HistogramBar]
    ticks: list[Tick]
    width: int = WIDTH
    height: int = HEIGHT
    pad: int = PAD


def applied_threshold(run: dict[str, Any], stage: Stage) -> float | None:
    """The threshold the run decided ``stage`` with: run.json ``thresholds`` (set or calibrated),
    else the explicit setting of a run directory written before ``thresholds`` was recorded."""
    value = (run.get("thresholds") or {}).get(stage)
    if value is None:
        value = (run.get("settings") or {}).get(f"{stage}_threshold")
    return float(value) if isinstance(value, int | float) else None


def histogram(
    title: str, values: list[float], low: float, high: float, threshold: float | None
) -> Chart:
    """Ten bins over [low, high]; values outside fall in the end bins; the threshold line only
    where the threshold lies inside the range."""
    counts = [0] * BINS
    for value in values:
        index = int((value - low) / (high - low) * BINS) if high > low else 0
        counts[min(max(index, 0), BINS - 1)] += 1
    top = max(counts) or 1
    step = (WIDTH - 2 * PAD) / BINS

    def x_of(value: float) -> float:
        return PAD + (WIDTH - 2 * PAD) * (value - low) / (high - low)

    bars = []
    for i, count in enumerate(counts):
        tall = (HEIGHT - 2 * PAD) * count / top
        bars.append(
            HistogramBar(
                low=low + (high - low) * i / BINS,
                high=low + (high - low) * (i + 1) / BINS,
                count=count,
                x=PAD + i * step,
                y=HEIGHT - PAD - tall,
                width=step,
                height=tall,
            )
        )
    middle = (low + high) / 2
    ticks = [
        Tick(value=low, x=x_of(low), anchor="start"),
        Tick(value=middle, x=x_of(middle), anchor="middle"),
        Tick(value=high, x=x_of(high), anchor="end"),
    ]
    return Chart(
        title=title,
        values=len(values),
        threshold=threshold,
        threshold_x=x_of(threshold) if threshold is not None and low <= threshold <= high else None,
        bars=bars,
        ticks=ticks,
    )


def charts(data: RunData) -> list[Chart]:
    judged = [float(v.judge_score) for v in data.verdicts if v.judge_score is not None]
    return [
        histogram(
            "Consistency similarity (accepted tests)",
            [case.similarity for case in data.cases],
            0,
            1,
            applied_threshold(data.run, "consistency"),
        ),
        histogram(
            "Oracle similarity (SUT vs gold)",
            [v.similarity for v in data.verdicts],
            0,
            1,
            applied_threshold(data.run, "oracle"),
        ),
        histogram("Judge scores", judged, 0, 100, applied_threshold(data.run, "judge")),
    ]
