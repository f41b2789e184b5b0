"""The compiled graph end to end, with every LLM role played by the scripted server over HTTP."""

from __future__ import annotations

import pytest

from cq2a.graph import build_graph
from cq2a.models.records import Context, RejectReason
from cq2a.runtime.services import release_services
from cq2a.settings import LLMSpec, Settings, SUTSpec
from cq2a.testing.script import PipelineScript

CONTEXT = Context(
    id="normans",
    context=(
        "Rollo signed a treaty with King Charles III of West Francia in 911. "
        "The Normans later conquered England in 1066."
    ),
)
FIRST = "a treaty"
SECOND = "The Normans"
SUT_CALLS: list[int] = []
SUT_ANSWERS: dict[str, str] = {}


def recording_sut(items):
    """A batch SUT: records each call's size and answers from SUT_ANSWERS."""
    SUT_CALLS.append(len(items))
    return [SUT_ANSWERS.get(item.question, "no idea") for item in items]


@pytest.fixture(autouse=True)
def fresh_state():
    SUT_CALLS.clear()
    SUT_ANSWERS.clear()
    release_services()
    yield
    release_services()


def settings_for(server, **overrides) -> Settings:
    spec = {"backend": "compatible", "base_url": server.base_url, "model": "scripted"}
    values = {
        "generator": LLMSpec(**spec),
        "reasker": LLMSpec(**spec),
        "judge": LLMSpec(**spec, temperature=0.0),
        "sut": SUTSpec(kind="callable", model="tests.test_graph:recording_sut", batch_size=8),
        "question_mix": "entity=1",  # the pipeline's mechanics, on entity questions
        "coverage_rounds": 0,
        "relations": False,
        "answers": "paper",  # these tests follow the III-A1 answers ("a treaty" first)
        "answers_per_context": 1,
        "questions_per_entity": 2,
        "cache_path": "off",
        "probe_judge": False,
        "preflight": False,
        "llm_retries": 1,
        "concurrency": 2,
    }
    return Settings(**(values | overrides))


def explained(question: str, answer: str) -> dict[str, str]:
    return {"question": question, "explanation": f"The passage says so: {answer}."}


def run(server, script: PipelineScript, contexts=(CONTEXT,), **overrides):
    script.install(server.rules)
    graph = build_graph()
    return graph.invoke({"contexts": list(contexts)}, context=settings_for(server, **overrides))


def test_leaking_question_is_regenerated_with_feedback_then_accepted(scripted_llm):
    good = "What did Rollo agree to with the Frankish ruler in 911?"
    other = "Which pact ended the raids once Rollo came to terms with the Franks?"

    def questions(answer, has_feedback):
        if has_feedback:
            return [explained(good, answer)]
        leaking = f"Who signed {answer} in the year 911, as the passage says?"
        return [explained(leaking, answer), explained(other, answer)]

    script = PipelineScript(questions=questions, votes=lambda q: [FIRST] * 5)
    result = run(scripted_llm, script)

    candidates = {c.slot: c for c in result["candidates"]}
    first = candidates[0]
    assert first.status == "accepted"
    assert [len(first.attempts), first.attempts[0].reasons] == [2, [RejectReason.LEAK]]
    assert first.current.question == good
    # The second prompt carried the rejected question and its reason.
    retry_prompt = script.prompts_seen[-1]
    assert "answer_leak" in retry_prompt and "Who signed" in retry_prompt
    assert first.current.feedback and "answer_leak" in first.current.feedback
    assert candidates[1].status == "accepted" and len(candidates[1].attempts) == 1


def test_three_two_vote_takes_the_majority(scripted_llm):
    question = "Which agreement did Rollo conclude with the Frankish ruler in 911?"
    votes = [FIRST, "England", FIRST, "England", FIRST]
    script = PipelineScript(
        questions=lambda answer, fb: [explained(question, answer)], votes=lambda q: votes
    )
    result = run(scripted_llm, script, questions_per_entity=1)
    (candidate,) = result["candidates"]
    assert candidate.current.votes == votes
    assert (candidate.current.majority_answer, candidate.current.majority_count) == (FIRST, 3)
    assert candidate.status == "accepted"
    assert candidate.current.similarity >= 0.99


def test_backend_without_n_gets_separate_vote_requests(scripted_llm):
    scripted_llm.honour_n = False
    question = "Which agreement did Rollo conclude with the Frankish ruler in 911?"
    script = PipelineScript(
        questions=lambda answer, fb: [explained(question, answer)],
        votes=lambda q: [FIRST, "England", FIRST, "England", FIRST],
    )
    result = run(scripted_llm, script, questions_per_entity=1)
    (candidate,) = result["candidates"]
    assert len(candidate.current.votes) == 5
    reask_requests = [r for r in scripted_llm.requests if "Question:" in str(r.body["messages"])]
    reask_requests = [r for r in reask_requests if "Answer:" in str(r.body["messages"][-1])]
    assert len(reask_requests) == 5  # one asked for n=5 and got 1 choice, then 4 more
    assert reask_requests[0].n == 5 and all(r.n == 1 for r in reask_requests[1:])


def test_attempts_exhausted_end_in_rejection_with_every_reason(scripted_llm):
    def questions(answer, has_feedback):
        if has_feedback:
            return [explained("Which ruler ended up with land in the north of France?", answer)]
        return [explained(f"Is {answer} mentioned here at all, in this passage?", answer)]

    script = PipelineScript(questions=questions, votes=lambda q: ["England"] * 5)
    result = run(scripted_llm, script, questions_per_entity=1, max_attempts=2)
    (candidate,) = result["candidates"]
    assert candidate.status == "rejected"
    assert [a.reasons for a in candidate.attempts] == [
        [RejectReason.LEAK],
        [RejectReason.INCONSISTENT],
    ]
    assert candidate.reasons == [RejectReason.LEAK, RejectReason.INCONSISTENT]
    assert candidate.attempts[1].majority_answer == "England"


def test_feedback_after_an_inconsistent_answer_says_what_the_question_got(scripted_llm):
    def questions(answer, has_feedback):
        return [explained("Which land did the Frankish ruler hand over in the north?", answer)]

    script = PipelineScript(questions=questions, votes=lambda q: ["England"] * 5)
    result = run(scripted_llm, script, questions_per_entity=1, max_attempts=2)
    (candidate,) = result["candidates"]
    assert [a.reasons for a in candidate.attempts] == [[RejectReason.INCONSISTENT]] * 2
    feedback = candidate.attempts[1].feedback or ""
    assert f'it was answered with "England", not "{candidate.answer.text}"' in feedback
    assert any('answered with "England"' in prompt for prompt in script.prompts_seen)


def two_question_script(answer_by_question):
    questions = list(answer_by_question)

    def generate(answer, has_feedback):
        return [explained(q, answer) for q in questions]

    return PipelineScript(questions=generate, votes=lambda q: [FIRST] * 5)


def test_oracle_stage_one_passes_without_judge_and_judge_decides_the_rest(scripted_llm):
    q_same = "Which agreement did Rollo conclude with the Frankish ruler in 911?"
    q_para = "What pact with the Frankish ruler did Rollo sign in 911?"
    q_bug = "What document tied Rollo to the Frankish crown in the year 911?"
    SUT_ANSWERS.update(
        {
            q_same: FIRST,  # identical: stage 1 consistent
            q_para: "the pact agreed at Saint-Clair-sur-Epte",  # judge says consistent
            q_bug: "England",  # judge says inconsistent: a bug
        }
    )
    script = two_question_script(SUT_ANSWERS)
    script.judge = lambda gold, sut: 90 if "Saint-Clair" in sut else 5
    result = run(scripted_llm, script, questions_per_entity=3)

    verdicts = {v.question: v for v in result["verdicts"]}
    assert verdicts[q_same].stage == "similarity" and not verdicts[q_same].bug
    assert verdicts[q_para].stage == "judge" and verdicts[q_para].judge_score == 90
    assert not verdicts[q_para].bug
    assert verdicts[q_bug].bug and verdicts[q_bug].judge_score == 5
    assert verdicts[q_bug].sut_answer == "England"
    judge_requests = [r for r in scripted_llm.requests if "gold_answer" in str(r.body["messages"])]
    # the consistent-by-similarity case never reached the judge; each judged case asked for its
    # votes' scores, then for the median vote's explanation
    assert len(judge_requests) == 4
    schemas = [r.body["response_format"]["json_schema"]["schema"] for r in judge_requests]
    assert [s["properties"]["explanation"].get("maxLength") for s in schemas].count(0) == 2
    assert verdicts[q_bug].judge_explanation and verdicts[q_para].judge_explanation


def test_the_judge_votes_and_its_median_decides(scripted_llm):
    q_split = "What pact with the Frankish ruler did Rollo sign in 911?"
    q_sure = "What document tied Rollo to the Frankish crown in the year 911?"
    SUT_ANSWERS.update({q_split: "the pact at Saint-Clair-sur-Epte", q_sure: "England"})
    script = two_question_script(SUT_ANSWERS)
    script.judge = lambda gold, sut: [20, 80, 70] if "Saint-Clair" in sut else [0, 10, 5]
    result = run(scripted_llm, script, questions_per_entity=2, judge_votes=3)

    verdicts = {v.question: v for v in result["verdicts"]}
    split, sure = verdicts[q_split], verdicts[q_sure]
    assert split.judge_scores == [20, 80, 70] and split.judge_score == 70 and not split.bug
    assert split.judge_confident is False  # one vote on the other side of 50
    assert sure.judge_score == 5 and sure.bug and sure.judge_confident is True
    judge_requests = [r for r in scripted_llm.requests if "gold_answer" in str(r.body["messages"])]
    # the votes are one request each, then the median vote (its seed) asked for its explanation,
    # streamed and closed after its first sentence
    assert sorted(r.body.get("n", 1) for r in judge_requests) == [1, 1, 3, 3]
    assert [r.body.get("stream", False) for r in judge_requests].count(True) == 2
    assert split.judge_explanation.endswith(": 70.") and sure.judge_explanation.endswith(": 5.")


def test_sut_is_called_in_batches(scripted_llm):
    questions = dict.fromkeys(
        [
            "Which agreement did Rollo conclude with the Frankish ruler in 911?",
            "What ended the Viking raids along the Seine in the early tenth century?",
            "According to the passage, what did the Viking leader obtain from the Franks?",
            "What pact is dated to the year 911 in this text?",
            "Which settlement gave Rollo's people a legal footing in northern France?",
        ],
        FIRST,
    )
    SUT_ANSWERS.update(questions)
    script = two_question_script(questions)
    contexts = [CONTEXT.model_copy(update={"id": f"ctx{i}"}) for i in range(4)]
    result = run(
        scripted_llm,
        script,
        contexts=contexts,
        questions_per_entity=5,
        sut=SUTSpec(kind="callable", model="tests.test_graph:recording_sut", batch_size=8),
    )
    accepted = [c for c in result["candidates"] if c.status == "accepted"]
    assert len(accepted) == 20
    assert SUT_CALLS == [20]  # one batch call for the whole run, not one per question
    assert len(result["verdicts"]) == 20


def test_near_duplicate_questions_are_dropped_keeping_the_first(scripted_llm):
    q1 = "Which agreement did Rollo conclude with the Frankish ruler in 911?"
    q2 = "Which agreement did Rollo conclude with the Frankish ruler in 911 ?"
    script = two_question_script({q1: FIRST, q2: FIRST})
    result = run(scripted_llm, script, questions_per_entity=2, max_attempts=1)
    by_slot = {c.slot: c for c in result["candidates"]}
    assert by_slot[0].status == "accepted"
    assert by_slot[1].status == "rejected"
    assert by_slot[1].current.reasons == [RejectReason.DUPLICATE]


def test_malformed_generation_is_retried_then_rejected(scripted_llm):
    scripted_llm.rules.on("Target answer", "this is not json")
    script = PipelineScript(questions=lambda a, fb: [], votes=lambda q: [FIRST] * 5)
    result = run(scripted_llm, script, questions_per_entity=1, malformed_retries=1)
    (candidate,) = result["candidates"]
    assert candidate.status == "rejected"
    assert candidate.reasons == [RejectReason.MALFORMED, RejectReason.MALFORMED]
    generation_requests = [r for r in scripted_llm.requests if "Target answer" in str(r.body)]
    assert len(generation_requests) == 4  # 2 attempts x (1 request + 1 malformed retry)


def test_trace_events_stream_per_context_in_stage_order(scripted_llm):
    from cq2a.runtime.trace import TraceEvent

    question = "Which agreement did Rollo conclude with the Frankish ruler in 911?"
    script = PipelineScript(
        questions=lambda answer, fb: [explained(question, answer)], votes=lambda q: [FIRST] * 5
    )
    script.install(scripted_llm.rules)
    settings = settings_for(scripted_llm, questions_per_entity=1)
    events = [
        chunk
        for _, chunk in build_graph().stream(
            {"contexts": [CONTEXT]}, context=settings, stream_mode="custom", subgraphs=True
        )
    ]
    for event in events:
        TraceEvent.model_validate(event)
    mine = [e for e in events if e.get("context_id") == CONTEXT.id]
    stages = [e["stage"] for e in mine if e["event"] == "stage_finished"]
    assert stages == ["extract", "generate", "check", "reask", "compare"]
    assert mine[-1]["event"] == "context_finished"
    accepted = [e for e in mine if e["event"] == "candidate_accepted"]
    assert accepted and accepted[0]["final"] and accepted[0]["similarity"] >= 0.99
    generate = next(e for e in mine if e["event"] == "stage_finished" and e["stage"] == "generate")
    assert generate["usage"]["requests"] == 1 and generate["usage"]["prompt_tokens"] > 0
    assert events[-1]["event"] == "stage_finished" and events[-1]["stage"] == "evaluate"


def test_a_yes_to_a_wh_question_is_a_bug_by_rule_and_the_raw_answer_is_kept(scripted_llm):
    q_yes = "Which agreement did Rollo conclude with the Frankish ruler in 911?"
    q_span = "What pact with the Frankish ruler did Rollo sign in 911?"
    SUT_ANSWERS.update({q_yes: "Yes.", q_span: f"  Answer: {FIRST}.  "})
    script = two_question_script({q_yes: FIRST, q_span: FIRST})
    script.judge = lambda gold, sut: 100  # a judge that would clear anything is never asked
    result = run(scripted_llm, script, questions_per_entity=2)
    verdicts = {v.question: v for v in result["verdicts"]}
    assert verdicts[q_yes].stage == "rule" and verdicts[q_yes].bug
    assert "bare 'yes'" in (verdicts[q_yes].rule or "")
    assert verdicts[q_yes].sut_answer == "Yes."
    assert verdicts[q_span].stage == "similarity" and not verdicts[q_span].bug
    assert verdicts[q_span].sut_answer == f"Answer: {FIRST}."  # raw, trimmed of white space
    assert not [r for r in scripted_llm.requests if "gold_answer" in str(r.body["messages"])]


def test_requests_carry_the_token_cap_llama_cpp_reads(scripted_llm):
    question = "Which agreement did Rollo conclude with the Frankish ruler in 911?"
    script = PipelineScript(
        questions=lambda answer, fb: [explained(question, answer)], votes=lambda q: [FIRST] * 5
    )
    run(scripted_llm, script, questions_per_entity=1)
    generation = next(r for r in scripted_llm.requests if "Target answer" in str(r.body))
    reask = next(r for r in scripted_llm.requests if r.body.get("n") == 5)
    # llama.cpp's server ignores max_completion_tokens; the classic field must be there too.
    assert generation.body["max_tokens"] == LLMSpec().max_tokens
    assert reask.body["max_tokens"] == LLMSpec().max_tokens


def test_default_answers_are_the_names_and_numbers_people_ask_about(scripted_llm):
    asked = {
        "Charles III": "Which Frankish king did Rollo sign his treaty with?",
        "Normans": "Which people later conquered England, after Rollo's treaty?",
    }

    def questions(answer, has_feedback):
        return [explained(asked.get(answer, f"Which words of the passage are {answer!r}?"), answer)]

    def votes(question):
        return [next((a for a, q in asked.items() if q == question), "?")] * 5

    script = PipelineScript(questions=questions, votes=votes)
    result = run(scripted_llm, script, answers="asked", answers_per_context=2,
                 questions_per_entity=1)  # fmt: skip
    answers = [(a.text, a.kind.value) for a in result["answers"]]
    assert answers == [("Charles III", "named-entity"), ("Normans", "named-entity")]
    verdicts = {v.gold_answer: v.kind.value for v in result["verdicts"]}
    assert verdicts == {"Charles III": "named-entity", "Normans": "named-entity"}
