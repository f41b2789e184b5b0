"""End to end: ``cq2a run`` on a folder of a .txt, a .md, an .html and a .pdf, every role played
by the scripted server; each accepted test names its file and offsets, and the offsets give
back its evidence verbatim from the document read again."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from cq2a.app import outputs as out
from cq2a.documents.readers import read_document
from cq2a.models.bugs import BugRecord
from cq2a.models.records import TestCase
from cq2a.reporting.exports import cases_csv
from cq2a.reporting.report import write_report
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker
from tests.document_files import write_image_only_pdf, write_pdf

ROOT = Path(__file__).resolve().parents[1]
TEXTS = worker.TEXTS


def documents(root: Path) -> Path:
    (root / "guides").mkdir(parents=True)
    (root / "normans.txt").write_text(TEXTS[0], encoding="utf-8")
    (root / "guides" / "amazon.md").write_text(f"# Amazon\n\n{TEXTS[1]}\n", encoding="utf-8")
    (root / "curie.html").write_text(
        f"<html><body><nav>Home</nav><p>{TEXTS[2]}</p><footer>(c)</footer></body></html>",
        encoding="utf-8",
    )
    write_pdf(root / "rhine.pdf", [TEXTS[3], TEXTS[0].replace("Rollo", "The duke Rollo")])
    write_image_only_pdf(root / "scan.pdf")
    return root


def cq2a_run(input_path: Path, run_dir: Path, base_url: str) -> subprocess.CompletedProcess[str]:
    # passages of at most 150 characters: each page of the PDF is one
    env = os.environ | {"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "CQ2A_PASSAGE_CHARS": "150"}
    command = [sys.executable, "-m", "cq2a.cli", "run", str(input_path), "--out", str(run_dir)]
    command += ["--model", "scripted", "--backend", "compatible", "--base-url", base_url]
    command += ["--sut", "callable:evals.reliability_worker:decoding_sut", "--no-relations"]
    command += ["--answers-per-context", "1", "--questions-per-entity", "2"]
    command += ["--no-judge-probe", "--no-progress", "--junit", str(run_dir / "junit.xml")]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def ids_per_file(run_dir: Path) -> dict[str, set[str]]:
    """The ids of a run's accepted tests, per source file."""
    ids: dict[str, set[str]] = {}
    for record in out.read_jsonl(run_dir / out.TEST_CASES):
        ids.setdefault(record["source"]["file"], set()).add(record["id"])
    return ids


def test_a_folder_of_documents_runs_and_every_test_points_into_its_document(tmp_path):
    root = documents(tmp_path / "docs")
    run_dir = tmp_path / "run"
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        done = cq2a_run(root, run_dir, server.base_url)
        (root / "normans.txt").write_text(f"A new first line. {TEXTS[0]}", encoding="utf-8")
        edited = cq2a_run(root, tmp_path / "edited", server.base_url)
        (root / "normans.txt").write_text(TEXTS[0], encoding="utf-8")
    assert done.returncode in (0, 1), done.stderr
    assert edited.returncode in (0, 1), edited.stderr
    assert ids_per_file(tmp_path / "edited") == ids_per_file(run_dir) | {
        "normans.txt": ids_per_file(tmp_path / "edited")["normans.txt"]
    }
    assert ids_per_file(tmp_path / "edited")["normans.txt"] != ids_per_file(run_dir)["normans.txt"]

    cases = [TestCase.model_validate(r) for r in out.read_jsonl(run_dir / out.TEST_CASES)]
    files = {"normans.txt", "guides/amazon.md", "curie.html", "rhine.pdf"}
    assert {case.source.file for case in cases if case.source} == files
    for case in cases:
        assert case.source is not None and case.context_id.startswith(f"{case.source.file}#")
        text = read_document(root / case.source.file, case.source.file).text
        assert text[case.source.start : case.source.end] == case.context
        assert case.document_evidence
        for evidence in case.document_evidence:
            assert text[evidence.start : evidence.end] == evidence.text
            assert evidence.text in case.context
        assert (case.source.page is not None) == case.source.file.endswith(".pdf")

    pages = {case.source.page for case in cases if case.source and case.source.file == "rhine.pdf"}
    assert pages == {1, 2}
    skipped = out.read_jsonl(run_dir / out.SKIPPED)
    assert {"id": "scan.pdf", "reason": "image_only_pdf"}.items() <= skipped[0].items()

    bugs = [BugRecord.model_validate(r) for r in out.read_jsonl(run_dir / out.BUGS)]
    assert bugs and all(bug.source is not None for bug in bugs)
    junit = ET.parse(run_dir / "junit.xml").getroot()
    named = {case.get("file") for case in junit.iter("testcase")}
    assert named == files
    assert "rhine.pdf p. 2, characters" in ET.tostring(junit, encoding="unicode")
    assert "rhine.pdf p. 1" in cases_csv(cases)
    page = write_report(run_dir).read_text(encoding="utf-8")
    assert "rhine.pdf p. 2" in page and "guides/amazon.md" in page
