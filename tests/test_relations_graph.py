"""A relation question end to end: the compiled graph on SQuAD's Normans passage, with every LLM
role played by the scripted server over HTTP. The LLM proposes a relation the passage words
otherwise ("given" for "gave their name to"); the triple is read as the passage's spans, its
question is re-asked and answered by that span, and it is accepted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import cq2a
from cq2a.app.results import ResultFiles
from cq2a.graph import build_graph
from cq2a.models import candidates as accepted
from cq2a.models.records import AnswerKind, Context, RejectReason
from cq2a.runtime.services import release_services
from cq2a.settings import LLMSpec, Settings, SUTSpec
from cq2a.testing.script import PipelineScript

SQUAD = Path(cq2a.__file__).parent / "data" / "squad2_dev_sample.jsonl"
PASSAGE = Context(id="normans", context=json.loads(SQUAD.read_text().splitlines()[0])["context"])
QUESTION = "What did the Normans do regarding Normandy in the 10th and 11th centuries?"
SPAN = "gave their name to"
TRIPLES = [
    {
        "subject": "Normans",
        "relation": "given",
        "object": "name to Normandy",
        "explanation": "The Normans gave their name to Normandy, a region in France.",
    },
    {
        "subject": "Rollo",
        "relation": "ruled",
        "object": "the Vikings",
        "explanation": "Rollo ruled the Vikings.",
    },
]


def relation_sut(items: list[Any]) -> list[str]:
    return [SPAN for _ in items]


@pytest.fixture(autouse=True)
def fresh_services():
    release_services()
    yield
    release_services()


def questions(triple: str, has_feedback: bool) -> list[dict[str, str]]:
    assert triple == f"[Normans, {SPAN}, Normandy]"
    explanation = f"The Normans {SPAN} Normandy, so the relation is '{SPAN}'. Triple: {triple}."
    return [{"question": QUESTION, "explanation": explanation}]


def votes(question: str) -> list[str]:
    """The re-asker says the relation with the object the question names, as models do."""
    assert question == QUESTION
    return ["They gave their name to Normandy.", "gave their name to Normandy", "Rollo"]


def run_relations(server, **limits: int) -> dict[str, Any]:
    """The compiled graph on PASSAGE with relation questions only, every role scripted."""
    spec = {"backend": "compatible", "base_url": server.base_url, "model": "scripted"}
    settings = Settings(
        generator=LLMSpec(**spec),
        reasker=LLMSpec(**spec),
        judge=LLMSpec(**spec, temperature=0.0),
        sut=SUTSpec(kind="callable", model="tests.test_relations_graph:relation_sut"),
        question_mix="relation=1",
        answers_per_context=1,
        coverage_rounds=0,
        cache_path="off",
        probe_judge=False,
        preflight=False,
        llm_retries=1,
        **limits,
    )
    return build_graph().invoke({"contexts": [PASSAGE]}, context=settings)


def test_a_proposed_relation_is_asked_as_the_passages_span_and_accepted(
    scripted_llm, spacy_parser, tmp_path
) -> None:
    PipelineScript(questions=questions, votes=votes, triples=TRIPLES).install(scripted_llm.rules)
    values = run_relations(scripted_llm, questions_per_relation=1)

    (candidate,) = values["candidates"]
    answer = candidate.answer
    assert answer.kind is AnswerKind.RELATION and answer.text == SPAN
    assert PASSAGE.context[answer.start : answer.end] == SPAN
    assert answer.triple.proposed == "given"
    assert candidate.status == "accepted", candidate.current
    assert candidate.current.majority_answer == SPAN
    assert candidate.current.votes[:2] == [SPAN, SPAN]
    (verdict,) = values["verdicts"]
    assert verdict.gold_answer == SPAN and not verdict.bug

    counts = ResultFiles(tmp_path).write([values], values["verdicts"], [PASSAGE], [], 1)
    assert counts["accepted_by_kind"] == {"relation": 1}
    assert counts["triples_dropped"] == {"entity missing from context or explanation": 1}


TEMPLATE = "What did the Normans do to Normandy?"


def test_a_leaking_relation_question_is_followed_by_the_template_question(
    scripted_llm, spacy_parser
) -> None:
    """Both generated questions name the relation's verb; in the next round one slot is given
    the template and the other the generator's question written with the feedback."""
    asked_for: list[bool] = []

    def leaking(triple: str, has_feedback: bool) -> list[dict[str, str]]:
        asked_for.append(has_feedback)
        explanation = f"The Normans {SPAN} Normandy. Triple: {triple}."
        if has_feedback:
            return [{"question": QUESTION, "explanation": explanation}]
        leaks = [
            "Why did the Normans give their name to Normandy, a region in France?",
            "When did the Normans give their name to Normandy in France?",
        ]
        return [{"question": leak, "explanation": explanation} for leak in leaks]

    def template_votes(question: str) -> list[str]:
        return [SPAN, "gave their name to Normandy", SPAN, "Rollo", SPAN]

    PipelineScript(questions=leaking, votes=template_votes, triples=TRIPLES[:1]).install(
        scripted_llm.rules
    )
    values = run_relations(scripted_llm, questions_per_relation=2, max_attempts=2)

    slots = sorted(values["candidates"], key=lambda c: c.slot)
    assert slots[0].answer.triple.template == TEMPLATE
    assert [[a.reasons for a in slot.attempts][0] for slot in slots] == [[RejectReason.LEAK]] * 2
    assert [a.template for a in slots[0].attempts] == [False, True]
    assert slots[0].current.question == TEMPLATE and slots[0].status == "accepted"
    assert slots[1].current.question == QUESTION and not slots[1].current.template
    assert asked_for == [False, True]  # one generation request for the second slot only
    cases = accepted.test_cases_of(values["candidates"], {PASSAGE.id: PASSAGE})
    assert [(case.question, case.template) for case in cases] == [
        (TEMPLATE, True),
        (QUESTION, False),
    ]
