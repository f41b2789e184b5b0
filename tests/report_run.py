"""A run directory written from hand-made records: two contexts, three accepted tests (one
question carries markup), two rejected slots, two bugs, and a judge that failed its probe."""

from __future__ import annotations

from pathlib import Path

from cq2a.app import outputs as out
from cq2a.coverage.diversity import suite_figures
from cq2a.models.bugs import BugRecord
from cq2a.models.records import (
    Answer,
    AnswerKind,
    Attempt,
    Candidate,
    CheckResult,
    ContextPlan,
    Evidence,
    RejectReason,
    TestCase,
    Verdict,
)

CONTEXT_A = (
    "The Normans gave their name to Normandy, a region in France. "
    "They were descended from Norse raiders. Rollo was their first ruler."
)
CONTEXT_B = "Paris is the capital of France. The Seine flows through Paris & its suburbs."
EVIL = "<script>alert(1)</script> Who gave their name to Normandy?"


def span(context: str, text: str) -> tuple[int, int]:
    start = context.index(text)
    return start, start + len(text)


def answer(id_: str, context_id: str, context: str, text: str, sentence: str, kind: str) -> Answer:
    start, end = span(context, text)
    return Answer(
        id=id_,
        context_id=context_id,
        kind=AnswerKind(kind),
        text=text,
        sentence=sentence,
        sentence_index=0,
        start=start,
        end=end,
    )


def case(ans: Answer, context: str, question: str, similarity: float) -> TestCase:
    return TestCase(
        id=f"{ans.id}:q0",
        context_id=ans.context_id,
        context=context,
        question=question,
        answer=ans.text,
        kind=ans.kind,
        sentence=ans.sentence,
        start=ans.start,
        end=ans.end,
        explanation="because",
        attempts=1,
        votes=[ans.text] * 3,
        similarity=similarity,
        evidence=[Evidence(start=at, end=at + len(ans.sentence), text=ans.sentence)]
        if (at := context.find(ans.sentence)) >= 0
        else [],
    )


def rejected(ans: Answer, reason: RejectReason, checks_pass: bool) -> Candidate:
    attempt = Attempt(
        number=1,
        question=f"What about {ans.text.lower()} here?",
        explanation="x",
        checks=[CheckResult(name="length", passed=checks_pass)],
        similarity=0.2 if checks_pass else None,
        reasons=[reason],
    )
    return rejected_slot(ans, attempt, slot=1)


def rejected_slot(ans: Answer, attempt: Attempt, slot: int) -> Candidate:
    return Candidate(
        id=f"{ans.id}:q{slot}",
        context_id=ans.context_id,
        answer=ans,
        slot=slot,
        attempts=[attempt],
        status="rejected",
    )


def verdict(test: TestCase, sut: str, bug: bool, score: int | None) -> Verdict:
    return Verdict(
        test_id=test.id,
        context_id=test.context_id,
        question=test.question,
        gold_answer=test.answer,
        sut_answer=sut,
        similarity=0.9 if not bug else 0.1,
        stage="judge" if score is not None else "similarity",
        judge_score=score,
        judge_explanation=None if score is None else "The answer names another place & time.",
        bug=bug,
        kind=test.kind,
    )


def write_run(directory: Path) -> Path:
    sentence_a0 = "The Normans gave their name to Normandy, a region in France."
    sentence_a2 = "Rollo was their first ruler."
    sentence_b = "Paris is the capital of France."
    answers = [
        answer("a:e0", "ctx-a", CONTEXT_A, "The Normans", sentence_a0, "entity-phrase"),
        answer("a:e1", "ctx-a", CONTEXT_A, "Rollo", sentence_a2, "entity-word"),
        answer("b:e0", "ctx-b", CONTEXT_B, "Paris", sentence_b, "entity-word"),
    ]
    cases = [
        case(answers[0], CONTEXT_A, EVIL, 0.91),
        case(answers[1], CONTEXT_A, "Who was the first ruler of the Normans?", 0.88),
        case(answers[2], CONTEXT_B, "What is the capital of France?", 0.97),
    ]
    candidates = [
        rejected(answers[0], RejectReason.LEAK, checks_pass=False),
        rejected(answers[2], RejectReason.INCONSISTENT, checks_pass=True),
    ]
    verdicts = [
        verdict(cases[0], "the Vikings", bug=True, score=10),
        verdict(cases[1], "Iceland", bug=True, score=None),
        verdict(cases[2], "Paris", bug=False, score=None),
    ]
    bugs = [
        BugRecord(
            **v.model_dump(),
            sentence=c.sentence,
            explanation=c.explanation,
            context=c.context,
            votes=c.votes,
        )
        for v, c in zip(verdicts, cases, strict=True)
        if v.bug
    ]
    out.write_jsonl(directory / out.ANSWERS, answers)
    out.write_jsonl(directory / out.TEST_CASES, cases)
    out.write_jsonl(directory / out.REJECTED, candidates)
    out.write_jsonl(directory / out.VERDICTS, verdicts)
    out.write_jsonl(directory / out.BUGS, bugs)
    out.write_jsonl(directory / out.SKIPPED, [])
    out.write_json(
        directory / out.RUN,
        {
            "run_id": "abc123",
            "status": "finished",
            "seconds": 125.0,
            "seed": 0,
            "counts": {"contexts": 2},
            "usage": {"total_tokens": 12345},
            "settings": {"judge_threshold": 50},
            "judge_probe": {"passed": False, "detail": "'Iceland' scored 100"},
            "figures": suite_figures(
                cases,
                [
                    ContextPlan(id="ctx-a", sentence_spans=[(0, 40), (41, 80)]),
                    ContextPlan(id="ctx-b", sentence_spans=[(0, 30)]),
                ],
                {"entity": 0.8, "yesno": 0.2},
            ).model_dump(),
        },
    )
    return directory
