"""Do a kind's later slots in a context give tests once its first-round slots there failed?

Reads finished run directories: each question slot's kind and final status (``test_cases.jsonl``
accepted, ``rejected.jsonl`` rejected), and from ``trace.jsonl`` the answers each coverage round
gave (``coverage_round`` events); every other answer had its slot in the context's first round.
Each coverage-round slot is counted under its kind and under what that kind's first-round slots
in the same context did: ``all rejected`` (at least one, none accepted), ``yielded`` (one or
more accepted), or ``absent``. The rule of ``cq2a.coverage.steering.cut_back`` reads the
first of these.

    python -m evals.kind_yield runs/demo-1 runs/demo-2 --json evals/results/kind_yield.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from cq2a.app import outputs as out
from cq2a.models.records import AnswerKind


def slots(run: Path) -> list[tuple[str, str, str, str]]:
    """(context id, answer id, question kind, status) for every settled slot of a run."""
    found: list[tuple[str, str, str, str]] = []
    for name, status in ((out.TEST_CASES, "accepted"), (out.REJECTED, "rejected")):
        for record in out.read_jsonl(run / name):
            answer = record["answer"] if isinstance(record["answer"], dict) else record
            answer_id = str(record["id"]).rsplit(":", 1)[0]
            kind = AnswerKind(answer["kind"]).question_kind
            found.append((record["context_id"], answer_id, kind, status))
    return found


def coverage_answers(run: Path) -> set[str]:
    """The answers the run's coverage rounds gave slots to."""
    return {
        answer
        for event in out.read_jsonl(run / out.TRACE)
        if event.get("event") == "coverage_round"
        for answer in event.get("answers", [])
    }


def kind_yield(runs: Sequence[Path]) -> dict[str, Any]:
    """Coverage-round slots by kind, by what their kind's first-round slots did, by status."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for run in runs:
        later = coverage_answers(run)
        settled = slots(run)
        first: dict[tuple[str, str], list[str]] = {}
        for context, answer, kind, status in settled:
            if answer not in later:
                first.setdefault((context, kind), []).append(status)
        for context, answer, kind, status in settled:
            if answer in later:
                counts[(kind, _history(first.get((context, kind))), status)] += 1
    rows = {}
    for kind, history in sorted({(k, h) for k, h, _ in counts}):
        accepted, rejected = (
            counts[(kind, history, "accepted")],
            counts[(kind, history, "rejected")],
        )
        rows[f"{kind}, first round {history}"] = {
            "accepted": accepted,
            "slots": accepted + rejected,
        }
    return {"runs": [str(r) for r in runs], "coverage_round_slots": rows}


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="finished run directories")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(None if argv is None else list(argv))
    figures = kind_yield(args.runs)
    for row, seen in figures["coverage_round_slots"].items():
        print(f"{row}: {seen['accepted']} accepted of {seen['slots']} slots")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


def _history(first_round: list[str] | None) -> str:
    """What a kind's first-round slots in a context did, from their statuses."""
    if first_round is None:
        return "absent"
    return "yielded" if "accepted" in first_round else "all rejected"


if __name__ == "__main__":
    main()
