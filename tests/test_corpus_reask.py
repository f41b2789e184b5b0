"""The re-ask over the corpus (III-C2 extended to a SUT that gets the question alone): the
compiled graph, every LLM role played by the scripted server over HTTP."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from cq2a.graph import build_graph
from cq2a.models.records import Context, RejectReason
from cq2a.runtime.services import release_services, services_for
from cq2a.settings import SUTSpec
from cq2a.testing.script import PipelineScript, field_of, marker, user_text
from tests.test_graph import explained, settings_for

HARVARD = Context(
    id="harvard",
    context="Harvard University was founded in 1636 by vote of the Great and General Court of "
    "the Massachusetts Bay Colony.",
)
YALE = Context(
    id="yale",
    context="Yale University was founded in 1701 by Congregationalist ministers of the "
    "Connecticut Colony.",
)
#: Both passages name a university that was founded: a search finds both for it.
VAGUE = "Which university in New England was founded by a colonial court?"
#: Only the Yale passage shares a word with it: nothing else could answer it.
YALE_ONLY = "Which school did Congregationalist ministers establish?"
QUESTION_SUT = SUTSpec(kind="callable", model="tests.test_graph:recording_sut", input="question")


@pytest.fixture(autouse=True)
def fresh_services():
    release_services()
    yield
    release_services()


def questions(answer: str, has_feedback: bool) -> list[dict[str, str]]:
    return [explained(VAGUE if answer.startswith("Harvard") else YALE_ONLY, answer)]


def reader(over_both: str):
    """A re-asker that answers from the passages it is given: over one passage, the university
    it names; over both, ``over_both``."""

    def read(request, index: int) -> str:
        text = user_text(request)
        passages = text.split("Question:")[0]
        if "Harvard" in passages and "Yale" in passages:
            return over_both
        return "Harvard University" if "Harvard" in passages else "Yale University"

    return read


def run(server, over_both: str, graph=None, config=None, **overrides):
    server.rules.on(marker("reask.system"), reader(over_both))
    PipelineScript(questions=questions, votes=lambda q: ["unused"]).install(server.rules)
    values = {"questions_per_entity": 1, "max_attempts": 1, "sut": QUESTION_SUT} | overrides
    settings = settings_for(server, **values)
    graph = graph or build_graph()
    return graph.invoke({"contexts": [HARVARD, YALE]}, config, context=settings), settings


def by_context(result):
    return {c.context_id: c for c in result["candidates"]}


def reask_contexts(server) -> list[str]:
    return [
        field_of(str(r.body["messages"][-1]["content"]), "Context")
        for r in server.requests
        if marker("reask.system") in str(r.body["messages"][0]["content"])
    ]


def test_another_passage_answering_otherwise_rejects_as_ambiguous_in_corpus(scripted_llm):
    result, _ = run(scripted_llm, over_both="Yale University")
    harvard = by_context(result)["harvard"]
    assert harvard.status == "rejected"
    assert harvard.current.reasons == [RejectReason.AMBIGUOUS_IN_CORPUS]
    assert harvard.current.majority_answer == "Harvard University"  # its own passage agrees
    assert harvard.current.corpus_answer == "Yale University"
    assert sorted(harvard.current.corpus_passages) == ["harvard", "yale"]
    assert harvard.current.corpus_similarity < harvard.current.similarity


def test_a_corpus_that_agrees_accepts_and_a_lone_passage_is_not_searched(scripted_llm):
    result, _ = run(scripted_llm, over_both="Harvard University")
    candidates = by_context(result)
    harvard, yale = candidates["harvard"], candidates["yale"]
    assert harvard.status == "accepted"
    assert harvard.current.corpus_answer == "Harvard University"
    assert len(harvard.current.corpus_votes) == 5
    # The Yale question shares no word with the Harvard passage: only its own passage answers.
    assert yale.status == "accepted"
    assert yale.current.corpus_passages == [] and yale.current.corpus_answer is None
    assert len(reask_contexts(scripted_llm)) == 3  # two own passages, one corpus


def test_the_default_mode_does_not_search_the_corpus(scripted_llm):
    result, _ = run(
        scripted_llm,
        over_both="Yale University",
        sut=SUTSpec(**{**QUESTION_SUT.model_dump(), "input": "question+context"}),
    )
    assert all(c.status == "accepted" for c in result["candidates"])
    assert all(c.current.corpus_answer is None for c in result["candidates"])
    assert len(reask_contexts(scripted_llm)) == 2  # one re-ask request per question


def test_a_run_whose_services_lost_the_corpus_rebuilds_it_from_its_checkpoint(scripted_llm):
    """As on ``--resume``: fresh services, and ``probe`` does not run again."""
    graph = build_graph(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "lost-corpus"}}
    scripted_llm.rules.on(marker("reask.system"), reader("Yale University"))
    PipelineScript(questions=questions, votes=lambda q: ["unused"]).install(scripted_llm.rules)
    settings = settings_for(scripted_llm, questions_per_entity=1, max_attempts=1, sut=QUESTION_SUT)
    cleared = []
    for namespace, update in graph.stream(
        {"contexts": [HARVARD, YALE]}, config, context=settings, subgraphs=True
    ):
        if not namespace and "probe" in update:
            services_for(settings, "lost-corpus").corpus = None
            cleared.append(namespace)
    assert cleared  # the re-ask below had to rebuild the index
    harvard = by_context(graph.get_state(config).values)["harvard"]
    assert harvard.current.reasons == [RejectReason.AMBIGUOUS_IN_CORPUS]
    assert sorted(harvard.current.corpus_passages) == ["harvard", "yale"]


def test_the_funnel_counts_an_ambiguous_question_as_failing_consistency():
    from cq2a.models.records import Attempt, CheckResult
    from cq2a.reporting.funnel import passed_consistency

    checked = {"number": 1, "question": VAGUE, "explanation": "", "similarity": 1.0}
    checks = [CheckResult(name="self_contained", passed=True)]
    ambiguous = Attempt(**checked, checks=checks, reasons=[RejectReason.AMBIGUOUS_IN_CORPUS])
    assert passed_consistency(Attempt(**checked, checks=checks))
    assert not passed_consistency(ambiguous)


def test_question_mode_rejects_a_question_that_leans_on_its_passage(scripted_llm):
    def leaning(answer: str, has_feedback: bool) -> list[dict[str, str]]:
        return [explained("What did they found in that colony?", answer)]

    PipelineScript(questions=leaning, votes=lambda q: ["unused"]).install(scripted_llm.rules)
    settings = settings_for(scripted_llm, questions_per_entity=1, max_attempts=1, sut=QUESTION_SUT)
    result = build_graph().invoke({"contexts": [HARVARD]}, context=settings)
    (candidate,) = result["candidates"]
    assert candidate.current.reasons == [RejectReason.NOT_SELF_CONTAINED]
    detail = candidate.current.checks[-1].detail
    assert "they (no antecedent)" in detail and "that (points into the passage)" in detail
    assert reask_contexts(scripted_llm) == []
