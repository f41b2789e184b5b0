"""The question mix: what share of a suite each kind of question should be, how a context's
answers are split to reach it, and how close a run came.

``question_mix`` is written ``entity=0.5,relation=0.1,yesno=0.2,unanswerable=0.1,
multi_sentence=0.1`` (shares are normalised to sum to 1; a kind left out gets none). A
context's ``answers_per_context`` targets are split by largest remainders; after a context's
slots settle, kinds whose accepted share lags their chosen share get the next targets
(``cq2a.coverage.steering``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import cast

from pydantic import BaseModel

from cq2a.models.records import QUESTION_KINDS, QuestionKind

Mix = dict[QuestionKind, float]
#: A run honours its mix when every kind's achieved share is within this of its chosen share.
TOLERANCE = 0.05


def parse_mix(text: str | Mapping[QuestionKind, float] | Mapping[str, float]) -> Mix:
    """``"entity=0.5,yesno=0.2"`` (or a mapping) as shares that sum to 1, in kind order."""
    if isinstance(text, Mapping):
        pairs = [(str(k), float(v)) for k, v in text.items()]
    else:
        pairs = []
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"question_mix item {item!r} is not kind=share")
            try:
                pairs.append((name.strip(), float(value)))
            except ValueError as error:
                raise ValueError(f"question_mix share {value!r} is not a number") from error
    unknown = [name for name, _ in pairs if name not in QUESTION_KINDS]
    if unknown:
        raise ValueError(f"unknown question kind(s) {unknown}; choose from {list(QUESTION_KINDS)}")
    if any(share < 0 for _, share in pairs):
        raise ValueError("question_mix shares must not be negative")
    total = sum(share for _, share in pairs)
    if total <= 0:
        raise ValueError("question_mix needs at least one kind with a positive share")
    given = {cast(QuestionKind, name): share / total for name, share in pairs}
    return {kind: round(given[kind], 6) for kind in QUESTION_KINDS if given.get(kind, 0) > 0}


def format_mix(mix: Mix) -> str:
    return ",".join(f"{kind}={share:g}" for kind, share in mix.items())


def allocate(mix: Mix, total: int) -> dict[QuestionKind, int]:
    """``total`` items split by ``mix`` with largest remainders (ties in kind order)."""
    exact = {kind: share * total for kind, share in mix.items()}
    counts = {kind: int(value) for kind, value in exact.items()}
    left = total - sum(counts.values())
    by_remainder = sorted(mix, key=lambda k: (-(exact[k] - counts[k]), QUESTION_KINDS.index(k)))
    for kind in by_remainder[:left]:
        counts[kind] += 1
    return counts


def shares(kinds: Iterable[QuestionKind]) -> Mix:
    counts = Counter(kinds)
    total = sum(counts.values())
    return {k: round(counts[k] / total, 4) for k in QUESTION_KINDS if counts[k]} if total else {}


def lagging(mix: Mix, accepted: Iterable[QuestionKind]) -> list[QuestionKind]:
    """Kinds whose accepted share is below their chosen share, most behind first."""
    achieved = shares(accepted)
    behind = {k: mix[k] - achieved.get(k, 0.0) for k in mix}
    return [k for k in sorted(behind, key=lambda k: -behind[k]) if behind[k] > 0]


class KindShare(BaseModel):
    chosen: float
    achieved: float
    accepted: int


class MixReport(BaseModel):
    """Chosen against achieved shares of the accepted suite, per question kind."""

    kinds: dict[str, KindShare]
    honoured: bool
    tolerance: float = TOLERANCE


def mix_report(mix: Mix, accepted: Iterable[QuestionKind]) -> MixReport:
    kinds = list(accepted)
    achieved = shares(kinds)
    counts = Counter(kinds)
    rows = {
        kind: KindShare(
            chosen=mix.get(kind, 0.0), achieved=achieved.get(kind, 0.0), accepted=counts[kind]
        )
        for kind in QUESTION_KINDS
        if kind in mix or counts[kind]
    }
    honoured = bool(kinds) and all(
        abs(row.chosen - row.achieved) <= TOLERANCE + 1e-9 for row in rows.values()
    )
    return MixReport(kinds=rows, honoured=honoured)
