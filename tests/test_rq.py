"""The RQ harnesses (paper IV) on a tiny hand-made run directory."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest

from cq2a.app import outputs as out
from cq2a.language.embeddings import Embedder
from cq2a.models.bugs import BugRecord
from cq2a.models.records import (
    Answer,
    AnswerKind,
    Attempt,
    Candidate,
    RejectReason,
    TestCase,
    Verdict,
)
from cq2a.runtime.services import release_services
from cq2a.settings import LLMSpec, Settings
from cq2a.testing.script import marker
from evals import rq1_bugs, rq2_filtering, rq3_quality, rq4_repair

os.environ.setdefault("HF_HUB_OFFLINE", "1")

CONTEXT = "The cat sat. The dog ran far away."  # 12 + 1 + 21 = 34 characters
WORD, RELATION = AnswerKind.ENTITY_WORD, AnswerKind.RELATION


def answer(key: str, kind: AnswerKind, text: str, sentence: str, start: int) -> Answer:
    return Answer(
        id=key,
        context_id="c1",
        kind=kind,
        text=text,
        sentence=sentence,
        sentence_index=0,
        start=start,
        end=start + len(text),
    )


def attempt(number: int, question: str, *reasons: RejectReason) -> Attempt:
    return Attempt(number=number, question=question, explanation="", reasons=list(reasons))


def candidate(key: str, gold: Answer, attempts: list[Attempt], status: str) -> Candidate:
    return Candidate(id=key, context_id="c1", answer=gold, slot=0, attempts=attempts, status=status)


def case_of(item: Candidate) -> TestCase:
    gold = item.answer
    return TestCase(
        id=item.id,
        context_id="c1",
        context=CONTEXT,
        question=item.current.question,
        answer=gold.text,
        kind=gold.kind,
        sentence=gold.sentence,
        start=gold.start,
        end=gold.end,
        explanation="",
        attempts=len(item.attempts),
        votes=[],
        similarity=1.0,
    )


def bug_of(case: TestCase, sut_answer: str) -> BugRecord:
    verdict = Verdict(
        test_id=case.id,
        context_id="c1",
        question=case.question,
        gold_answer=case.answer,
        sut_answer=sut_answer,
        similarity=0.1,
        stage="judge",
        judge_score=0,
        bug=True,
        kind=case.kind,
    )
    return BugRecord(**verdict.model_dump(), sentence=case.sentence, context=CONTEXT)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """Entity-word: 3 slots, 2 accepted (one after a leak), 1 inconsistent; relation: 1 accepted.
    Every accepted test but one entity-word test is a bug."""
    cat = answer("a1", WORD, "cat", "The cat sat.", 4)
    dog = answer("a2", WORD, "dog", "The dog ran far away.", 17)
    ran = answer("a3", RELATION, "ran far away", "The dog ran far away.", 21)
    candidates = [
        candidate(
            "k1",
            cat,
            [attempt(1, "Which cat sat?", RejectReason.LEAK, RejectReason.TOO_SHORT)]
            + [attempt(2, "Who sat?")],
            "accepted",
        ),
        candidate(
            "k2",
            dog,
            [attempt(1, "", RejectReason.NO_QUESTION)]
            + [attempt(2, "What ran?", RejectReason.INCONSISTENT)],
            "rejected",
        ),
        candidate("k3", dog, [attempt(1, "Which animal ran far away?")], "accepted"),
        candidate("k4", ran, [attempt(1, "What did the dog do?")], "accepted"),
    ]
    cases = [case_of(c) for c in candidates if c.status == "accepted"]
    bugs = [bug_of(cases[0], "a dog"), bug_of(cases[1], "the cat"), bug_of(cases[2], "sat")]
    verdicts = [Verdict(**b.model_dump(include=set(Verdict.model_fields))) for b in bugs]
    out.write_jsonl(tmp_path / out.CANDIDATES, candidates)
    out.write_jsonl(tmp_path / out.REJECTED, [c for c in candidates if c.status == "rejected"])
    out.write_jsonl(tmp_path / out.TEST_CASES, cases)
    out.write_jsonl(tmp_path / out.ANSWERS, [cat, dog, ran])
    out.write_jsonl(tmp_path / out.VERDICTS, verdicts)
    out.write_jsonl(tmp_path / out.BUGS, bugs)
    out.write_json(tmp_path / out.RUN, {"run_id": "tiny"})
    return tmp_path


def fill(sheet: Path, labels: dict[str, dict[str, str]]) -> None:
    """Write the given column values into the rows whose ``id`` is a key."""
    with sheet.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row.update(labels.get(row["id"], {}))
    with sheet.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_rq1_counts_bugs_per_kind_and_estimates_true_bugs(run_dir: Path, tmp_path: Path):
    sheet = tmp_path / "rq1.csv"
    result = rq1_bugs.evaluate(run_dir, sample=100, seed=0, sheet=sheet)
    assert result["per_kind"]["entity-word"] == {
        "tests": 2,
        "verdicts": 2,
        "bugs": 2,
        "bug_rate": 1.0,
    }
    assert result["per_kind"]["relation"]["bugs"] == 1
    assert result["sheet"]["rows"] == 3
    fill(sheet, {"k1": {"label": "1"}, "k3": {"label": "0"}, "k4": {"label": "1"}})
    labelled = rq1_bugs.evaluate(run_dir, labels=sheet)["labels"]
    assert labelled["entity-word"] == {
        "labeled": 2,
        "true": 1,
        "tp_rate": 0.5,
        "bugs": 2,
        "estimated_true_bugs": 1,
    }
    assert labelled["relation"]["tp_rate"] == 1.0
    assert labelled["entity-phrase"]["tp_rate"] is None


def test_rq1_sheet_carries_the_evidence(run_dir: Path, tmp_path: Path):
    sheet = tmp_path / "rq1.csv"
    rq1_bugs.evaluate(run_dir, sample=1, seed=3, sheet=sheet)
    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
    assert len(rows) == 1
    assert rows[0]["label"] == "" and rows[0]["sut_answer"]
    assert rows[0]["context_snippet"] == CONTEXT


def test_rq2_funnel_separates_checks_from_consistency(run_dir: Path):
    word = rq2_filtering.evaluate(run_dir)["per_kind"]["entity-word"]
    assert (word["raw"], word["filtered"]) == (4, 2)
    assert word["removed_by_checks"] == {"answer_leak": 1, "too_short": 1}
    assert word["rejected_by_checks"] == 1
    assert word["inconsistent_answer"] == 1
    assert word["no_question"] == 1


def test_rq2_label_round_trip_gives_precision_and_violation_rates(run_dir: Path, tmp_path: Path):
    sheet = tmp_path / "rq2.csv"
    result = rq2_filtering.evaluate(run_dir, sample=10, seed=0, sheet=sheet)
    assert result["sheet"]["rows"] == 4 + 2 + 1 + 1  # raw and filtered of both kinds
    labels = {
        "k1#1": {"label": "0", "violation": "IV"},
        "k1#2": {"label": "1", "violation": "none"},
        "k2#2": {"label": "0", "violation": "CV"},
        "k3#1": {"label": "1", "violation": "none"},
    }
    fill(sheet, labels)
    word = rq2_filtering.evaluate(run_dir, labels=sheet)["labels"]["entity-word"]
    assert word["raw"]["precision"] == 0.5
    assert (word["raw"]["cv_rate"], word["raw"]["iv_rate"]) == (0.25, 0.25)
    assert word["filtered"]["precision"] == 1.0
    assert word["filtered"]["labeled"] == 2


def test_rq3_deterministic_coverage_is_exact(run_dir: Path):
    coverage = rq3_quality.evaluate(run_dir)["coverage"]
    assert coverage["contexts"] == 1
    assert coverage["sentence_coverage"] == round((12 + 21) / 34, 4)  # not the space
    assert coverage["answer_coverage"] == round((3 + 3 + 12) / 34, 4)


def test_rq3_span_union_and_location():
    assert rq3_quality.union_length([(0, 5), (3, 8), (10, 12)]) == 10
    assert rq3_quality.locate("the CAT sat.", CONTEXT) == (0, 12)
    assert rq3_quality.locate("a bird", CONTEXT) is None


NATURAL = {
    "natural_phrasing": {"score": 4, "explanation": "fluent"},
    "topical_clarity": {"score": 5, "explanation": "one topic"},
    "contextual_grounding": {"score": 3, "explanation": "partly"},
}
SEGMENTS = {
    "matches": [
        {"question": 1, "segment": "the cat sat."},
        {"question": 2, "segment": "a bird flew"},
        {"question": 3, "segment": ""},
    ]
}


def test_rq3_llm_parts_against_the_scripted_server(run_dir: Path, scripted_llm):
    scripted_llm.rules.on(marker("naturalness.system"), NATURAL)
    scripted_llm.rules.on(marker("coverage.system"), SEGMENTS)
    spec = LLMSpec(backend="compatible", base_url=scripted_llm.base_url, model="scripted")
    settings = Settings(judge=spec, cache_path="off", llm_retries=0)
    release_services()
    try:
        result = rq3_quality.evaluate(run_dir, settings)
    finally:
        release_services()
    every = result["naturalness"]["all"]
    assert every["n"] == 3
    assert (every["natural_phrasing"], every["topical_clarity"]) == (4, 5)
    assert every["average"] == 4
    assert result["naturalness"]["relation"]["n"] == 1
    assert result["llm_coverage"]["coverage"] == round(12 / 34, 4)


class CharacterBag:
    """A deterministic stand-in encoder: letter counts."""

    def encode(self, sentences, **_):
        rows = np.zeros((len(sentences), 27), dtype=np.float32)
        for i, text in enumerate(sentences):
            rows[i, 26] = 0.01
            for char in text.lower():
                if "a" <= char <= "z":
                    rows[i, ord(char) - 97] += 1
        return rows


def tiny_cases() -> list[TestCase]:
    animals = ["cat", "dog", "cow", "fox", "owl", "bee", "ant", "elk", "yak", "emu"]
    cases = []
    for i, animal in enumerate(animals):
        context = f"The {animal} lives in field {i}. It eats grass."
        cases.append(
            TestCase(
                id=f"t{i}",
                context_id=f"c{i}",
                context=context,
                question=f"Which animal lives in field {i}?",
                answer=animal,
                kind=WORD,
                sentence=f"The {animal} lives in field {i}.",
                explanation="",
                attempts=1,
                votes=[],
                similarity=1.0,
            )
        )
    duplicate = cases[0].model_copy(
        update={"id": "t0b", "question": "Which animal lives in field 0"}
    )
    return cases + [duplicate, cases[3].model_copy(update={"id": "t3b", "answer": "Fox!"})]


def test_rq4_split_has_no_duplicates_across_splits():
    split = rq4_repair.split_cases(tiny_cases(), seed=1)
    assert split.duplicates_removed == 2
    keys = [
        {rq4_repair.normalised(c) for c in part}
        for part in (split.train, split.validation, split.test)
    ]
    assert sum(len(k) for k in keys) == 10
    assert not (keys[0] & keys[1] or keys[0] & keys[2] or keys[1] & keys[2])
    assert (len(split.train), len(split.validation), len(split.test)) == (7, 2, 1)


def test_rq4_split_by_context_keeps_contexts_apart():
    cases = tiny_cases()
    cases += [
        c.model_copy(update={"id": c.id + "x", "question": "And " + c.question}) for c in cases
    ]
    split = rq4_repair.split_cases(cases, seed=2, by_context=True)
    contexts = [
        {c.context_id for c in part} for part in (split.train, split.validation, split.test)
    ]
    assert not (contexts[0] & contexts[1] or contexts[0] & contexts[2] or contexts[1] & contexts[2])
    assert len(split.train) + len(split.validation) + len(split.test) == 20
    assert split.test and split.validation


def test_rq4_reports_error_rates_before_and_after(tmp_path: Path):
    embedder = Embedder("character-bag", CharacterBag())
    result = rq4_repair.repair(
        tiny_cases(), steps=3, seed=0, device="cpu", embedder=embedder, threshold=0.9
    )
    assert 0.0 <= result["error_rate_before"] <= 1.0
    assert 0.0 <= result["error_rate_after"] <= 1.0
    assert result["split"]["test"] == 1 and result["steps"] == 3
    assert result["loss_start"] > 0 and result["loss_end"] > 0


def test_rq4_too_few_tests_is_a_clear_error_not_a_traceback(run_dir: Path, capsys):
    lines = (run_dir / out.TEST_CASES).read_text(encoding="utf-8").splitlines()[:1]
    (run_dir / out.TEST_CASES).write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stopped:
        rq4_repair.main([str(run_dir)])
    assert stopped.value.code == 2
    assert "too few distinct tests to split" in capsys.readouterr().err
