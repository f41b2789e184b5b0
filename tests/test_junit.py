"""JUnit XML: an unjudged verdict is an error that says why it was left unjudged."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from cq2a.models.records import AnswerKind, TestCase, Verdict
from cq2a.reporting.junit import junit_xml


def test_an_unjudged_verdict_is_an_error_that_says_why() -> None:
    case = TestCase(
        id="c:e0:q0",
        context_id="c",
        context="Rollo led the Normans.",
        question="Who led the Normans?",
        answer="Rollo",
        kind=AnswerKind.NAMED_ENTITY,
        sentence="Rollo led the Normans.",
        start=0,
        end=5,
        explanation="Rollo led the Normans.",
        attempts=1,
        votes=["Rollo"] * 5,
        similarity=1.0,
    )
    verdict = Verdict(
        test_id=case.id,
        context_id="c",
        question=case.question,
        gold_answer="Rollo",
        sut_answer="",
        similarity=0.0,
        stage="unjudged",
        judge_explanation="sut error: chat:m failed: OpenAIAPIError: 500",
        bug=False,
        kind=AnswerKind.NAMED_ENTITY,
    )
    root = ET.fromstring(junit_xml("cq2a test", [case], [verdict], 1.0))
    error = root.find(".//testcase/error")
    assert error is not None and error.get("type") == "unjudged"
    assert error.get("message") == "sut error: chat:m failed: OpenAIAPIError: 500"
    assert root.find(".//testsuite").get("errors") == "1"
