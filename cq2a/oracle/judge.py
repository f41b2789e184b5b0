"""The two-stage test oracle (III-D): embedding similarity, then an LLM judge in context."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from cq2a.adapters.fanout import parallel_map
from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.errors import LLMCallFailed
from cq2a.adapters.llm.prompts import render_prompt, system_prompt
from cq2a.adapters.llm.structured import Malformed, Until
from cq2a.adapters.sut.base import SUTError
from cq2a.language.answers import (
    holds_the_gold,
    is_abstention,
    normalize_answer,
    normalize_yes_no,
    restates_question,
    trims_the_gold,
)
from cq2a.language.embeddings import SimilarityPairs
from cq2a.language.lemmas import Lemmatizer
from cq2a.language.lexicon import FUNCTION_WORDS, NON_LEXICAL_VERBS, words
from cq2a.models.records import JudgeVerdict, TestCase, Verdict


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


_WH_WORDS = frozenset("what who whom whose which where when why how".split()) | frozenset(
    "qui que qu quoi quel quelle quels quelles lequel laquelle lesquels lesquelles où quand "
    "pourquoi comment combien".split()
)


def is_wh_question(question: str) -> bool:
    """A question asking what, who, which, where, when, why or how (in its first words)."""
    return bool(_WH_WORDS.intersection(words(question)[:3]))


_NEGATIONS = frozenset(
    "not isn't wasn't didn't doesn't don't aren't weren't can't won't ne n pas jamais".split()
)


def bare_yes_no(answer: str) -> str | None:
    """ "yes"/"no" for an answer that is only that ("Yes.", "no, it is not"); None for anything
    with content ("Yes, Rollo led them." answers who, not whether)."""
    label = normalize_yes_no(answer)
    rest = words(answer)[1:]
    filler = FUNCTION_WORDS | NON_LEXICAL_VERBS | _NEGATIONS
    return label if label is not None and all(w in filler for w in rest) else None


def answer_type_mismatch(question: str, gold: str, sut: str, lemmatize: Lemmatizer) -> str | None:
    """What a rule can decide before the judge: the SUT's answer is of the wrong type for the
    question (III-D's judge then need not be asked, and cannot be fooled). None: no mismatch.
    Words restate the question when their lemmas (``lemmatize``) are the question's."""
    gold_yes_no, sut_yes_no = normalize_yes_no(gold), bare_yes_no(sut)
    if is_abstention(gold) and not is_abstention(sut):
        return "answered a question the context does not answer"
    if is_abstention(sut) and not is_abstention(gold):
        return "abstained from a question the context answers"
    if (
        gold_yes_no is None
        and restates_question(sut, question, lemmatize)
        and not restates_question(gold, question, lemmatize)
    ):
        return "restated the question without answering it"
    if gold_yes_no is None and sut_yes_no is not None and is_wh_question(question):
        return f"a bare {sut_yes_no!r} to a {words(question)[0]}-question"
    if gold_yes_no is not None and normalize_yes_no(sut) is None:
        return "a span answer to a yes/no question"
    return None


def compared_form(gold: str, sut: str) -> str:
    """The SUT's answer as the oracle compares it: reduced to yes/no only when the gold answer
    is yes/no ("Yes, Rollo led them." stays a span for a who-question), else the trimmed span."""
    if normalize_yes_no(gold) is not None:
        return normalize_yes_no(sut) or normalize_answer(sut)
    return normalize_answer(sut)


class JudgeScores(BaseModel):
    """The judge's measurement of one answer pair: the median of its votes' scores, every vote's
    score, the explanation of the vote at the median, and whether the votes agree (all on one
    side of the threshold)."""

    score: int
    scores: list[int]
    explanation: str
    confident: bool


#: The judge's votes write their scores only: the score comes first in the schema, so a
#: vote's explanation cannot change it, and one explanation, the median vote's, is asked for
#: afterwards (``judge_answer``).
SCORE_ONLY = {"explanation": 0}
#: A mark that may end a sentence, then the next word: the word before the mark decides.
_END_MARK = re.compile(r"(\S*)[.!?]\s+\S")
#: Words a full stop follows inside a sentence ("Mr. Royall", "e.g. the"), lower-cased.
_ABBREVIATIONS = frozenset({"mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "e.g", "i.e", "etc"})


def _sentence_end(text: str) -> int | None:
    """Where the first sentence of ``text`` ends (its mark's index), once another has begun;
    a mark after an initial ("U.S. Army", "J. Smith") or an abbreviation ends none."""
    for mark in _END_MARK.finditer(text):
        word = mark.group(1).lstrip("(\"'").lower()
        last = word.split(".")[-1]  # "s" of "U.S", "j" of "J"
        initial = len(last) == 1 and last.isalpha()
        if not initial and word not in _ABBREVIATIONS:
            return mark.end(1)
    return None


def _first_sentence_written(output: dict[str, Any]) -> bool:
    explanation = output.get("explanation")
    return isinstance(explanation, str) and _sentence_end(explanation) is not None


def first_sentence(text: str) -> str:
    """``text`` up to the end of its first sentence (all of it when it has one)."""
    end = _sentence_end(text)
    return text[: end + 1] if end is not None else text.strip()


#: The verdict's explanation is its first sentence: it says why the answers agree or differ
#: ("... names a region in France, not Iceland."); what the judge writes after it restates the
#: criteria, and the stream is closed there.
FIRST_SENTENCE = Until(name="first sentence", enough=_first_sentence_written)


def judge_answer(
    client: ChatClient,
    context: str,
    question: str,
    gold: str,
    sut: str,
    *,
    votes: int = 1,
    judge_threshold: int = 50,
    language: str | None = None,
) -> tuple[JudgeScores | None, str | None]:
    """Ask the judge (Table II, second row) for ``votes`` scores in one request (``n``); returns
    their median, or the reason there is none (the call failed, or no vote parsed).
    ``language``: the context's, which the judge's explanation is written in.

    The votes are asked with an empty explanation (``SCORE_ONLY``); then the vote at the
    median is asked again, with its own seed and room for its explanation, which its score
    precedes: the same score, now explained. Where it comes back on the other side of the
    threshold (a vote that was asked again after a malformed output has another seed), the
    verdict goes without an explanation. A server that does not bound the explanation (a
    hosted API without grammars) wrote every vote's, and the median vote's is kept as it is."""
    user = render_prompt(
        "judge.user", context=context, question=question, gold_answer=gold, sut_answer=sut
    )
    system = system_prompt("judge.system", language)
    try:
        outputs = client.structured(system, user, JudgeVerdict, n=votes, max_length=SCORE_ONLY)
    except LLMCallFailed as error:
        return None, f"llm error: {error}"
    parsed = [v for v in outputs if isinstance(v, JudgeVerdict)]
    if not parsed:
        why = next(v.error for v in outputs if isinstance(v, Malformed))
        return None, f"malformed judge output: {why}"
    score, middle = median_vote(parsed, judge_threshold)
    side = consistent_by_judge(score, judge_threshold)
    sides = {consistent_by_judge(v.score, judge_threshold) for v in parsed}
    explanation = middle.explanation  # a server that ignores the bound wrote it already
    if not explanation:
        explained = _explained(client, system, user, outputs.index(middle))
        if explained is not None and consistent_by_judge(explained.score, judge_threshold) == side:
            explanation = first_sentence(explained.explanation)
    return (
        JudgeScores(
            score=score,
            scores=[v.score for v in parsed],
            explanation=explanation,
            confident=len(sides) == 1,
        ),
        None,
    )


def _explained(client: ChatClient, system: str, user: str, vote: int) -> JudgeVerdict | None:
    """Vote number ``vote`` (its seed) asked again with its explanation, its first sentence
    (``FIRST_SENTENCE``); None when that call fails or does not parse."""
    try:
        (output,) = client.structured(
            system, user, JudgeVerdict, seed_offset=vote, until=FIRST_SENTENCE
        )
    except LLMCallFailed:
        return None
    return output if isinstance(output, JudgeVerdict) else None


def median_vote(votes: list[JudgeVerdict], judge_threshold: int) -> tuple[int, JudgeVerdict]:
    """The median of the votes' scores and the vote whose explanation stands for it.

    With an even number of votes the median is the mean of the two middle scores, rounded down:
    an integer threshold then decides on it exactly as on the mean, so neither side wins a split
    by construction (the lower middle alone would call every 20/90 split a bug). Its
    explanation is the middle vote's on the side the median falls."""
    ranked = sorted(votes, key=lambda v: v.score)
    lower, upper = ranked[(len(ranked) - 1) // 2], ranked[len(ranked) // 2]
    score = (lower.score + upper.score) // 2
    return score, upper if consistent_by_judge(score, judge_threshold) else lower


@dataclass(frozen=True, kw_only=True)
class OracleLimits:
    """What ``evaluate_cases`` reads from a run's settings."""

    #: Similarity at or over which the SUT's answer agrees with the gold without the judge.
    oracle_threshold: float
    #: Judge score at or over which the answers agree.
    judge_threshold: int
    #: Concurrent judge requests.
    concurrency: int
    #: Judge scores per test, of which the median decides.
    judge_votes: int


def judge_verdicts(
    client: ChatClient,
    cases: list[TestCase],
    sut_answers: Sequence[str | SUTError],
    similarities: list[float],
    *,
    lemmatize: Lemmatizer,
    limits: OracleLimits,
) -> list[Verdict]:
    """Both stages for every test case; the judge is asked only where stage 1 says inconsistent,
    for ``limits.judge_votes`` scores whose median decides (``JudgeScores``).

    ``sut_answers`` are the SUT's raw answers, kept as they are in the verdicts; ``similarities``
    compare their ``compared_form`` with the gold. An answer of the wrong type (a yes/no to a
    wh-question, a span to a yes/no question, an abstention) is a bug by rule, before both; an
    answer that is the gold cut short at one end (``trims_the_gold``: "1940" for "2 août
    1940") is none, by rule, after stage 1: the verification took it for the gold when the
    re-asker gave it; so is a span of the context that holds the gold with words around it
    that name nothing else (``holds_the_gold``: "la ville de Béjaïa" for "Béjaïa"), the
    judge's third criterion.

    A bug is reported only when both stages say the answers disagree. When the judge gives no
    usable verdict (its call failed, or its output did not parse) the verdict is ``unjudged``:
    neither a bug nor a pass, counted apart, with the reason, and judged again by
    ``--retry-errors``. So is a test whose own query the SUT failed to answer (a ``SUTError``
    in place of its answer), with the error as the reason.
    """

    def decide(index: int) -> Verdict:
        case, answer, similarity = cases[index], sut_answers[index], similarities[index]
        sut = "" if isinstance(answer, SUTError) else answer
        base = {
            "test_id": case.id,
            "context_id": case.context_id,
            "question": case.question,
            "gold_answer": case.answer,
            "sut_answer": sut,
            "similarity": round(similarity, 4),
            "kind": case.kind,
            "source": case.source,
            "language": case.language,
        }
        if isinstance(answer, SUTError):
            why = f"sut error: {answer}"
            return Verdict(**base, stage="unjudged", judge_explanation=why, bug=False)
        exact = same_yes_no(case.answer, sut)
        mismatch = answer_type_mismatch(case.question, case.answer, sut, lemmatize)
        if mismatch is not None:
            return Verdict(**base, stage="rule", rule=mismatch, bug=True)
        if is_abstention(case.answer) and is_abstention(sut):
            rule = "abstained, and the context does not answer it"
            return Verdict(**base, stage="rule", rule=rule, bug=False)
        if exact is not None:
            return Verdict(**base, stage="similarity", bug=not exact)
        if consistent_by_similarity(similarity, limits.oracle_threshold):
            return Verdict(**base, stage="similarity", bug=False)
        if trims_the_gold(case.answer, compared_form(case.answer, sut)):
            rule = "the gold answer cut short at one end, as the verification accepts it"
            return Verdict(**base, stage="rule", rule=rule, bug=False)
        if holds_the_gold(case.answer, sut, case.context, lemmatize):
            rule = "the gold answer with words of the context around it that name nothing else"
            return Verdict(**base, stage="rule", rule=rule, bug=False)
        verdict, problem = judge_answer(
            client,
            case.context,
            case.question,
            case.answer,
            sut,
            votes=limits.judge_votes,
            judge_threshold=limits.judge_threshold,
            language=case.language,
        )
        if verdict is None:
            return Verdict(**base, stage="unjudged", judge_explanation=problem, bug=False)
        return Verdict(
            **base,
            stage="judge",
            judge_score=verdict.score,
            judge_scores=verdict.scores,
            judge_confident=verdict.confident,
            judge_explanation=verdict.explanation,
            bug=not consistent_by_judge(verdict.score, limits.judge_threshold),
        )

    return parallel_map(decide, range(len(cases)), limits.concurrency)


def oracle_verdicts(
    client: ChatClient,
    cases: list[TestCase],
    sut_answers: Sequence[str | SUTError],
    similarity_pairs: SimilarityPairs,
    *,
    lemmatize: Lemmatizer,
    limits: OracleLimits,
) -> list[Verdict]:
    """The two-stage oracle over the SUT's answers: each answer's ``compared_form`` against
    the gold by similarity, then ``judge_verdicts``."""
    if not cases:
        return []
    compared = [
        "" if isinstance(sut, SUTError) else compared_form(c.answer, sut)
        for c, sut in zip(cases, sut_answers, strict=True)
    ]
    similarities = similarity_pairs(compared, [c.answer for c in cases])
    return judge_verdicts(
        client,
        cases,
        sut_answers,
        [float(s) for s in similarities],
        lemmatize=lemmatize,
        limits=limits,
    )


class ProbeResult(BaseModel):
    """Whether the judge told two plainly different answers from two equivalent ones, and
    whether its votes on them agreed."""

    passed: bool
    different_score: int | None
    equivalent_score: int | None
    detail: str
    confident: bool = True


PROBE_CONTEXT = (
    "The Normans were the people who in the 10th and 11th centuries gave their name to "
    "Normandy, a region in France. They were descended from Norse raiders and pirates."
)
PROBE_QUESTION = "To which region of France did the Normans give their name?"
PROBE_GOLD = "Normandy"
PROBE_DIFFERENT = "Iceland"
PROBE_EQUIVALENT = "the region of Normandy"


def probe_judge(client: ChatClient, judge_threshold: int, votes: int = 1) -> ProbeResult:
    """Ask the judge one plainly wrong and one equivalent answer before a run (III-D).

    A small local judge can score "Iceland" against gold "Normandy" 100/100; a run whose judge
    fails this probe reports bugs that cannot be trusted, so callers warn and record it.
    """
    asked: dict[str, Any] = {"votes": votes, "judge_threshold": judge_threshold}
    different, problem_a = judge_answer(
        client, PROBE_CONTEXT, PROBE_QUESTION, PROBE_GOLD, PROBE_DIFFERENT, **asked
    )
    equivalent, problem_b = judge_answer(
        client, PROBE_CONTEXT, PROBE_QUESTION, PROBE_GOLD, PROBE_EQUIVALENT, **asked
    )
    if different is None or equivalent is None:
        detail = problem_a or problem_b or "no verdict"
        return ProbeResult(passed=False, different_score=None, equivalent_score=None, detail=detail)
    passed = different.score < judge_threshold <= equivalent.score
    detail = (
        f"'{PROBE_DIFFERENT}' vs gold '{PROBE_GOLD}' scored {different.score} "
        f"(votes {different.scores}); '{PROBE_EQUIVALENT}' scored {equivalent.score} "
        f"(votes {equivalent.scores}); threshold {judge_threshold}"
    )
    return ProbeResult(
        passed=passed,
        different_score=different.score,
        equivalent_score=equivalent.score,
        detail=detail,
        confident=different.confident and equivalent.confident,
    )
