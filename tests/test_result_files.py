"""The final result files, written from a run's work one context at a time."""

from __future__ import annotations

import pytest

from cq2a.app import outputs as out
from cq2a.app.results import ResultFiles
from cq2a.models.records import (
    Answer,
    AnswerKind,
    Attempt,
    Candidate,
    Context,
    ContextPlan,
    Skip,
    Verdict,
)

CONTEXTS = [Context(id=f"c{n}", context=f"Name {n} was there.") for n in range(2)]


def answer(context_id: str) -> Answer:
    return Answer(
        id=f"{context_id}:e0",
        context_id=context_id,
        kind=AnswerKind.NAMED_ENTITY,
        text="Name",
        sentence="Name was there.",
        sentence_index=0,
    )


def candidate(context_id: str, status: str) -> Candidate:
    attempt = Attempt(number=1, question=f"Who was there in {context_id}?", explanation="x")
    slot = {"accepted": 0, "rejected": 1}[status]
    gold = answer(context_id)
    return Candidate(
        id=f"{gold.id}:q{slot}",
        context_id=context_id,
        answer=gold,
        slot=slot,
        attempts=[attempt],
        status=status,  # type: ignore[arg-type]
    )


def part(context_id: str) -> dict[str, list]:
    """One finished context's work, as the run store gives it back."""
    return {
        "plans": [ContextPlan(id=context_id, dropped_triples=["not anchored"])],
        "answers": [answer(context_id)],
        "candidates": [candidate(context_id, "accepted"), candidate(context_id, "rejected")],
        "skipped": [],
    }


def verdict(context_id: str, bug: bool) -> Verdict:
    return Verdict(
        test_id=f"{context_id}:e0:q0",
        context_id=context_id,
        question="Who was there?",
        gold_answer="Name",
        sut_answer="Other" if bug else "Name",
        similarity=0.1 if bug else 1.0,
        stage="similarity",
        bug=bug,
        kind=AnswerKind.NAMED_ENTITY,
    )


def ids(path):
    return [row.get("id") or row.get("test_id") for row in out.read_jsonl(path)]


def test_each_context_s_work_lands_in_the_files_in_order_and_the_counts_add_up(tmp_path):
    verdicts = [verdict("c0", bug=False), verdict("c1", bug=True)]
    input_skip = Skip(id="bad", reason="empty")

    counts = ResultFiles(tmp_path).write(
        (part(c.id) for c in CONTEXTS), verdicts, CONTEXTS, [input_skip], finished=2
    )

    assert ids(tmp_path / out.TEST_CASES) == ["c0:e0:q0", "c1:e0:q0"]
    assert ids(tmp_path / out.REJECTED) == ["c0:e0:q1", "c1:e0:q1"]
    assert len(ids(tmp_path / out.CANDIDATES)) == 4
    assert ids(tmp_path / out.BUGS) == ["c1:e0:q0"]
    assert ids(tmp_path / out.VERDICTS) == ["c0:e0:q0", "c1:e0:q0"]
    assert ids(tmp_path / out.SKIPPED) == ["bad"]
    assert counts["accepted"] == 2 and counts["rejected"] == 2 and counts["bugs"] == 1
    assert counts["triples_dropped"] == {"not anchored": 2}
    assert counts["answers"] == {"named-entity": 2}
    assert counts["contexts_finished"] == 2 and counts["skipped"] == 1


def test_a_write_that_fails_midway_leaves_the_files_it_would_have_replaced(tmp_path):
    (tmp_path / out.TEST_CASES).write_text('{"id": "earlier"}\n', encoding="utf-8")

    def parts():
        yield part("c0")
        raise RuntimeError("the store went away")

    with pytest.raises(RuntimeError):
        ResultFiles(tmp_path).write(parts(), [], CONTEXTS, [], finished=1)

    assert ids(tmp_path / out.TEST_CASES) == ["earlier"]
    assert not (tmp_path / out.ANSWERS).exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left
