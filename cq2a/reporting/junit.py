"""JUnit XML for CI: one testcase per test, a failure per bug, an error per unjudged verdict.
A bug of a SUT that retrieves its own passages carries its cause as a ``cause`` property and
in the failure's text.

The layout is the common one CI servers read (``testsuites > testsuite > testcase`` with
``failure`` / ``error`` children and the ``tests``/``failures``/``errors`` counts).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from cq2a.app import outputs as out
from cq2a.app.suite import load_suite, previous_verdicts
from cq2a.models.records import Evidence, Source, TestCase, Verdict

#: A bug's cause, as the CI log says it.
CAUSE_TEXT = {
    "retrieval_miss": "retrieval miss (the evidence was not among the passages it retrieved)",
    "reader_error": "reader error (it retrieved the evidence and still answered wrong)",
    "unknown": "unknown (the SUT named no passages)",
}


def failure_text(case: TestCase, verdict: Verdict) -> str:
    """What a reader of the CI log needs to judge a bug without opening the run directory."""
    lines = [
        f"question: {verdict.question}",
        f"gold answer: {verdict.gold_answer}",
        f"SUT answer: {verdict.sut_answer}",
        f"similarity: {verdict.similarity:.3f}",
    ]
    if verdict.rule:
        lines.append(f"rule: {verdict.rule}")
    if verdict.judge_score is not None:
        lines.append(f"judge: {verdict.judge_score}/100 {verdict.judge_explanation or ''}".rstrip())
    if verdict.sut_input_truncated:
        lines.append("the SUT's input was cut to fit its window")
    if verdict.cause is not None:
        lines.append(f"cause: {CAUSE_TEXT[verdict.cause]}")
    lines.append(f"evidence: {case.sentence}")
    if case.source is not None:
        lines.append(f"source: {source_text(case.source, case.document_evidence)}")
    return "\n".join(lines)


def source_text(source: Source, evidence: list[Evidence]) -> str:
    """``policies/leave.pdf p. 3, characters 120-480``: the evidence's, else the passage's."""
    span = evidence[0] if evidence else source
    return f"{source.label()}, characters {span.start}-{span.end}"


def junit_xml(name: str, cases: list[TestCase], verdicts: list[Verdict], seconds: float) -> str:
    """The suite as JUnit XML; a test with no verdict (the run stopped first) is skipped."""
    by_id = {v.test_id: v for v in verdicts}
    failures = sum(v.bug for v in verdicts)
    errors = sum(v.stage == "unjudged" for v in verdicts)
    skipped = sum(case.id not in by_id for case in cases)
    counts = {
        "tests": str(len(cases)),
        "failures": str(failures),
        "errors": str(errors),
        "skipped": str(skipped),
        "time": f"{seconds:.3f}",
    }
    root = ET.Element("testsuites", {"name": name, **counts})
    suite = ET.SubElement(root, "testsuite", {"name": name, **counts})
    for case in cases:
        attributes = {"classname": f"cq2a.{case.context_id}", "name": f"{case.id}: {case.question}"}
        if case.source is not None:
            attributes["file"] = case.source.file
        element = ET.SubElement(suite, "testcase", attributes)
        if case.source is not None:
            properties = ET.SubElement(element, "properties")
            where = source_text(case.source, case.document_evidence)
            ET.SubElement(properties, "property", {"name": "source", "value": where})
        verdict = by_id.get(case.id)
        if verdict is None:
            ET.SubElement(element, "skipped", {"message": "not run: the run stopped first"})
        elif verdict.bug:
            if verdict.cause is not None:
                properties = ET.SubElement(element, "properties")
                ET.SubElement(properties, "property", {"name": "cause", "value": verdict.cause})
            message = f"expected {verdict.gold_answer!r}, the SUT answered {verdict.sut_answer!r}"
            failure = ET.SubElement(element, "failure", {"message": message, "type": verdict.stage})
            failure.text = failure_text(case, verdict)
        elif verdict.stage == "unjudged":
            error = ET.SubElement(
                element,
                "error",
                {"message": verdict.judge_explanation or "unjudged", "type": "unjudged"},
            )
            error.text = failure_text(case, verdict)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: str | Path, run_dir: str | Path, name: str, seconds: float) -> Path:
    """JUnit XML from a run or test directory's test cases and verdicts."""

    cases = load_suite(run_dir)
    verdicts = list(previous_verdicts(run_dir).values())
    path = Path(path)
    out.write_atomic(path, junit_xml(name, cases, verdicts, seconds))
    return path
