"""A retrieval SUT through the compiled graph and ``cq2a test``, with the scripted LLM server:
every bug is attributed exactly (retrieval miss, reader error, unknown) in the verdicts,
run.json, the report, JUnit, the terminal and the ``--compare`` diff; and ``cq2a demo --rag``'s
wiring."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cq2a.adapters.sut.base import SUTQuery
from cq2a.app import outputs as out
from cq2a.cli import main
from cq2a.models.bugs import BugRecord
from cq2a.reporting.exports import labeling_sheet, load_run
from cq2a.reporting.report import write_report
from cq2a.runtime.services import release_services
from cq2a.testing.script import PipelineScript
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker

COMMON = ["--model", "scripted", "--backend", "compatible", "--no-progress"]
SMALL = ["--answers-per-context", "2", "--questions-per-entity", "2", "--no-relations"]
SMALL += ["--question-mix", "entity=1", "--coverage-rounds", "0", "--no-judge-probe"]
#: The contexts whose passage the retriever never finds, and those it names no passages for.
MISSED, UNNAMED = {"ctx01"}, {"ctx02"}


class ScriptedRAG:
    """A retrieval system whose retriever misses ``missed``'s passages and names none for
    ``unnamed``'s; its reader reads the answer back from the question (as ``decoding_sut``)
    when it retrieved the passage and the question is a first one, and is wrong otherwise."""

    def __init__(self, missed: set[str], unnamed: set[str]) -> None:
        self.missed, self.unnamed = missed, unnamed
        self.corpus: dict[str, str] = {}

    def index(self, passages: Sequence[tuple[str, str]]) -> None:
        self.corpus = dict(passages)

    def __call__(self, items: list[SUTQuery]) -> list[Any]:
        assert all(item.context is None for item in items)  # the question alone
        return [self.reply(item.question) for item in items]

    def reply(self, question: str) -> Any:
        match = re.search(r"'([^']*)'", question)
        gold = match.group(1)[::-1] if match else ""
        owner = next((i for i, text in self.corpus.items() if gold and gold in text), None)
        if owner in self.unnamed:
            return worker.decoding_sut([SUTQuery(question=question)])[0]
        found = [text for i, text in self.corpus.items() if gold in text and i not in self.missed]
        retrieved = found or [text for i, text in self.corpus.items() if i not in self.missed][:1]
        right = owner not in self.missed and question.startswith("Which words")
        return {"answer": gold if right else worker.SUT_MISS, "contexts": retrieved}


def standalone_questions(answer: str, has_feedback: bool) -> list[dict[str, str]]:
    """The worker's questions, without the words that lean on the passage: asked alone, a
    question that says "of the passage" is rejected as not self-contained before any re-ask."""
    return [
        {**item, "question": item["question"].replace(" of the passage", "")}
        for item in worker.questions(answer, has_feedback)
    ]


def standalone_script() -> PipelineScript:
    return PipelineScript(questions=standalone_questions, votes=worker.votes, judge=worker.judge)


rag_sut = ScriptedRAG(MISSED, UNNAMED)
#: The next version: its retriever misses nothing, and it names its passages for every test.
fixed_retriever = ScriptedRAG(set(), set())


@pytest.fixture(autouse=True)
def fresh_runtimes():
    release_services()
    yield
    release_services()


def expected_cause(context_id: str) -> str:
    if context_id in UNNAMED:
        return "unknown"
    return "retrieval_miss" if context_id in MISSED else "reader_error"


def test_every_bug_of_a_rag_sut_is_attributed_exactly(tmp_path: Path, capsys: Any) -> None:
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(4))
    run_dir, second = tmp_path / "run", tmp_path / "second"
    with ScriptedLLMServer() as server:
        standalone_script().install(server.rules)
        live = [*COMMON, "--base-url", server.base_url]
        code = main(
            ["run", str(input_path), "--out", str(run_dir), *SMALL, *live]
            + ["--sut", "callable:tests.test_rag_run:rag_sut", "--sut-input", "question"]
            + ["--junit", str(tmp_path / "run.xml")]
        )
        assert code == 0
        printed = capsys.readouterr().out
        code = main(
            ["test", str(run_dir), "--out", str(second), "--compare", str(run_dir), *live]
            + ["--sut", "callable:tests.test_rag_run:fixed_retriever", "--sut-input", "question"]
        )
        assert code == 0
        compared = capsys.readouterr().out

    bugs = [BugRecord.model_validate(r) for r in out.read_jsonl(run_dir / out.BUGS)]
    causes = Counter(bug.cause for bug in bugs)
    assert set(causes) == {"retrieval_miss", "reader_error", "unknown"}
    for bug in bugs:
        assert bug.cause == expected_cause(bug.context_id), bug
        assert bug.evidence_retrieved is {"unknown": None, "retrieval_miss": False}.get(
            bug.cause, True
        )
        assert (bug.retrieved_contexts is None) == (bug.cause == "unknown")
    verdicts = out.read_jsonl(run_dir / out.VERDICTS)
    assert all(v["cause"] is None for v in verdicts if not v["bug"])
    counts = out.read_json(run_dir / out.RUN)["counts"]
    assert counts["bugs_by_cause"] == dict(causes)
    line = ", ".join(f"{causes[c]} {c.replace('_', ' ')}" for c in sorted(causes))
    assert f"\nbugs by cause: {line}\n" in printed

    junit = ET.parse(tmp_path / "run.xml").getroot()
    properties = {
        case.get("name").split(": ")[0]: case.find("properties/property").get("value")
        for case in junit.iter("testcase")
        if case.find("failure") is not None
    }
    assert properties == {bug.test_id: bug.cause for bug in bugs}
    assert "cause: retrieval miss" in ET.tostring(junit, encoding="unicode")

    sheet = list(csv.DictReader(io.StringIO(labeling_sheet(load_run(run_dir)))))
    assert {row["id"]: row["cause"] for row in sheet if row["item"] == "bug"} == {
        bug.test_id: bug.cause for bug in bugs
    }

    html = write_report(run_dir).read_text(encoding="utf-8")
    assert "Bugs by cause" in html
    assert f"{causes['reader_error']} reader errors" in html
    assert f"{causes['unknown']} unknown (no passages named)" in html

    # the next version retrieves every passage: the misses become reader errors or pass
    diff = out.read_json(second / out.RUN)["diff"]
    missed = {bug.test_id for bug in bugs if bug.cause == "retrieval_miss"}
    assert missed and not missed & set(diff["newly_failing"])
    assert set(diff["causes"].values()) == {"reader_error"}
    assert "still failing by cause:" in compared and "reader error" in compared


def test_the_rag_demo_runs_bm25_over_the_whole_sample_with_the_question_alone(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def reader(question: str) -> str:
        return "Normandy"

    with ScriptedLLMServer() as server:
        # the reader's chat model, which the demo otherwise serves locally
        monkeypatch.setenv("CQ2A_SUT__BACKEND", "compatible")
        monkeypatch.setenv("CQ2A_SUT__BASE_URL", server.base_url)
        script = worker.script()
        script.sut = reader
        script.install(server.rules)
        code = main(
            ["demo", "--rag", "--limit", "1", "--out", str(tmp_path / "demo"), *SMALL]
            + [*COMMON, "--base-url", server.base_url]
        )
        prompts = [str(r.body["messages"][-1]["content"]) for r in server.requests]
    assert code == 0
    printed = capsys.readouterr().out
    assert "software under test: rag:bm25 (top 3 passages" in printed
    record = out.read_json(tmp_path / "demo" / out.RUN)
    assert record["models"]["sut"] == "rag:bm25"
    assert record["settings"]["sut"]["input"] == "question"
    # the run is limited to one context: the rest of the sample is the retriever's corpus
    assert record["settings"]["sut"]["corpus"] == str(tmp_path / "demo" / out.CORPUS)
    assert len(out.read_jsonl(tmp_path / "demo" / out.CORPUS)) == 93
    reads = [p for p in prompts if p.startswith("Read the passages")]
    verdicts = out.read_jsonl(tmp_path / "demo" / out.VERDICTS)
    assert verdicts and len(reads) == len(verdicts) + 1  # and the preflight question
    # BM25 over the 93 passages of the sample: the passages come from beyond the run's one
    retrieved = {text for v in verdicts for text in v["retrieved_contexts"] or []}
    assert len(retrieved) > 1
    assert all(v["evidence_retrieved"] is not None for v in verdicts)
    bugs = out.read_jsonl(tmp_path / "demo" / out.BUGS)
    assert all(b["cause"] in {"retrieval_miss", "reader_error"} for b in bugs)
    if bugs:
        assert "bugs by cause:" in printed


def test_the_rag_demo_on_documents_retrieves_from_every_passage_of_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for number, item in enumerate(worker.contexts(3)):
        (folder / f"page{number}.txt").write_text(item.context, encoding="utf-8")
    with ScriptedLLMServer() as server:
        monkeypatch.setenv("CQ2A_SUT__BACKEND", "compatible")
        monkeypatch.setenv("CQ2A_SUT__BASE_URL", server.base_url)
        script = standalone_script()
        script.sut = lambda question: "Normandy"
        script.install(server.rules)
        code = main(
            ["demo", str(folder), "--rag", "--limit", "1", "--out", str(tmp_path / "demo")]
            + [*SMALL, *COMMON, "--base-url", server.base_url]
        )
    assert code == 0
    corpus = out.read_jsonl(tmp_path / "demo" / out.CORPUS)
    assert sorted(row["id"].split("#")[0] for row in corpus) == [
        "page0.txt",
        "page1.txt",
        "page2.txt",
    ]
    tested = {case["context_id"] for case in out.read_jsonl(tmp_path / "demo" / out.TEST_CASES)}
    assert len(tested) <= 1 and tested <= {row["id"] for row in corpus}
