"""The two-stage test oracle (III-D): embedding similarity, then an LLM judge in context."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel

from cq2a.answers import normalize_yes_no
from cq2a.llm.client import ChatClient, LLMCallFailed, Malformed
from cq2a.llm.usage import Usage
from cq2a.models import JudgeVerdict, TestCase, Verdict
from cq2a.prompts_loader import load_prompt, render_prompt


def consistent_by_similarity(similarity: float, threshold: float) -> bool:
    """Stage 1: answers at least ``threshold`` cosine-similar are consistent."""
    return similarity >= threshold


def consistent_by_judge(score: int, judge_threshold: int) -> bool:
    """Stage 2: a judge score at or above ``judge_threshold`` (of 100) means consistent."""
    return score >= judge_threshold


def same_yes_no(gold: str, sut: str) -> bool | None:
    """For yes/no answers the comparison is exact; None when either is not yes/no."""
    gold_yn, sut_yn = normalize_yes_no(gold), normalize_yes_no(sut)
    if gold_yn is None or sut_yn is None:
        return None
    return gold_yn == sut_yn


def judge_answer(
    client: ChatClient, context: str, question: str, gold: str, sut: str
) -> tuple[JudgeVerdict | None, Usage, str | None]:
    """Ask the judge (Table II, second row); returns the verdict or the reason there is none."""
    user = render_prompt(
        "judge.user", context=context, question=question, gold_answer=gold, sut_answer=sut
    )
    try:
        outputs, usage = client.structured(load_prompt("judge.system"), user, JudgeVerdict)
    except LLMCallFailed as error:
        return None, Usage(), f"llm error: {error}"
    verdict = outputs[0]
    if isinstance(verdict, Malformed):
        return None, usage, f"malformed judge output: {verdict.error}"
    return verdict, usage, None


def judge_verdicts(
    client: ChatClient,
    cases: list[TestCase],
    sut_answers: list[str],
    similarities: list[float],
    *,
    threshold: float,
    judge_threshold: int,
    concurrency: int,
) -> tuple[list[Verdict], Usage]:
    """Both stages for every test case; the judge is asked only where stage 1 says inconsistent.

    A bug is reported only when both stages say the answers disagree. When the judge gives no
    usable verdict (its call failed, or its output did not parse) the verdict is ``unjudged``:
    neither a bug nor a pass, counted apart, with the reason, and judged again by
    ``--retry-errors``.
    """

    def decide(index: int) -> tuple[Verdict, Usage]:
        case, sut, similarity = cases[index], sut_answers[index], similarities[index]
        exact = same_yes_no(case.answer, sut)
        base = {
            "test_id": case.id,
            "context_id": case.context_id,
            "question": case.question,
            "gold_answer": case.answer,
            "sut_answer": sut,
            "similarity": round(similarity, 4),
            "kind": case.kind,
        }
        if exact is not None:
            return Verdict(**base, stage="similarity", bug=not exact), Usage()
        if consistent_by_similarity(similarity, threshold):
            return Verdict(**base, stage="similarity", bug=False), Usage()
        verdict, usage, problem = judge_answer(
            client, case.context, case.question, case.answer, sut
        )
        if verdict is None:
            return Verdict(**base, stage="unjudged", judge_explanation=problem, bug=False), usage
        bug = not consistent_by_judge(verdict.score, judge_threshold)
        return (
            Verdict(
                **base,
                stage="judge",
                judge_score=verdict.score,
                judge_explanation=verdict.explanation,
                bug=bug,
            ),
            usage,
        )

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(decide, range(len(cases))))
    total = Usage()
    for _, usage in results:
        total = total + usage
    return [verdict for verdict, _ in results], total


class ProbeResult(BaseModel):
    """Whether the judge told two plainly different answers from two equivalent ones."""

    passed: bool
    different_score: int | None
    equivalent_score: int | None
    detail: str


PROBE_CONTEXT = (
    "The Normans were the people who in the 10th and 11th centuries gave their name to "
    "Normandy, a region in France. They were descended from Norse raiders and pirates."
)
PROBE_QUESTION = "To which region of France did the Normans give their name?"
PROBE_GOLD = "Normandy"
PROBE_DIFFERENT = "Iceland"
PROBE_EQUIVALENT = "the region of Normandy"


def probe_judge(client: ChatClient, judge_threshold: int) -> tuple[ProbeResult, Usage]:
    """Ask the judge one plainly wrong and one equivalent answer before a run (III-D).

    A small local judge can score "Iceland" against gold "Normandy" 100/100; a run whose judge
    fails this probe reports bugs that cannot be trusted, so callers warn and record it.
    """
    different, usage_a, problem_a = judge_answer(
        client, PROBE_CONTEXT, PROBE_QUESTION, PROBE_GOLD, PROBE_DIFFERENT
    )
    equivalent, usage_b, problem_b = judge_answer(
        client, PROBE_CONTEXT, PROBE_QUESTION, PROBE_GOLD, PROBE_EQUIVALENT
    )
    usage = usage_a + usage_b
    if different is None or equivalent is None:
        detail = problem_a or problem_b or "no verdict"
        return ProbeResult(
            passed=False, different_score=None, equivalent_score=None, detail=detail
        ), usage
    passed = different.score < judge_threshold <= equivalent.score
    detail = (
        f"'{PROBE_DIFFERENT}' vs gold '{PROBE_GOLD}' scored {different.score}; "
        f"'{PROBE_EQUIVALENT}' scored {equivalent.score} (threshold {judge_threshold})"
    )
    return (
        ProbeResult(
            passed=passed,
            different_score=different.score,
            equivalent_score=equivalent.score,
            detail=detail,
        ),
        usage,
    )
