"""The benchmark and recall harnesses on tiny inputs: structure, and cache replay makes no calls."""

from __future__ import annotations

import json
import os

import pytest

from cq2a.runtime.services import release_services
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import bench, recall

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def server():
    release_services()
    with ScriptedLLMServer() as scripted:
        bench.bench_script().install(scripted.rules)
        yield scripted
    release_services()


def test_french_answers_lose_their_articles_elided_or_not_when_matched():
    assert recall.squad_normalise("L’armée française", "fr") == "armée française"
    assert recall.squad_normalise("le Sahara", "fr") == recall.squad_normalise("Sahara", "fr")
    assert recall.best_match("le Sahara", ["Sahara"], "fr") == ("exact", 1.0)
    assert recall.best_match("le général Bugeaud", ["le général"], "fr")[0] == "none"
    assert recall.best_match("le général Bugeaud", ["le général"])[0] == "f1"  # "le" counted


def test_squad_normalise_and_token_f1():
    assert recall.squad_normalise("The  10th century.") == "10th century"
    assert recall.token_f1("in the 10th century", "10th century") == pytest.approx(0.8)
    assert recall.best_match("the Normans", ["Normans", "France"]) == ("exact", 1.0)
    assert recall.best_match("Rollo", ["France"])[0] == "none"


def test_recall_on_two_contexts_counts_every_answerable_question():
    found = recall.dataset_recall(recall.SHIPPED, limit=2)
    items = recall.read_items(recall.SHIPPED, limit=2)
    assert found.applicable and found.contexts == 2 and found.budget == 50
    assert [s.answers for s in found.sets] == ["asked", "paper"]
    assert found.questions == sum(len(item.questions) for item in items) > 0
    for answer_set in found.sets:
        everything = answer_set.all_answers
        assert everything.exact + everything.f1 <= found.questions
        assert 0.0 < everything.recall <= 1.0
        at = [answer_set.at_budget[k].recall for k in ("12", "25", "50")]
        assert at == sorted(at) and at[-1] <= everything.recall
    asked, paper = found.sets
    assert asked.at_budget["12"].recall > paper.at_budget["12"].recall
    kinds = asked.per_kind
    assert {"named-entity", "number"} <= set(kinds)
    assert sum(k.first_match for k in kinds.values()) == round(
        asked.at_budget["50"].recall * found.questions
    )


def test_yes_no_dataset_is_not_applicable(tmp_path):
    data = tmp_path / "boolq_tiny.jsonl"
    qa = {"question": "does water boil at 100 c", "answers": ["True"], "is_impossible": False}
    row = {"id": "b1", "context": "Water boils at 100 C at sea level.", "qas": [qa]}
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    found = recall.dataset_recall(data)
    assert not found.applicable and "yes/no" in found.reason


def test_token_ratio_and_cache_replay_on_one_context(server, tmp_path):
    tokens, replay = bench.bench_tokens(server, tmp_path, contexts=1)
    ours, naive = tokens.detail["cq2a"], tokens.detail["naive"]
    assert ours["accepted"] == naive["accepted"] > 0
    assert naive["requests"] > ours["requests"]
    assert tokens.value == pytest.approx(
        ours["tokens_per_accepted"] / naive["tokens_per_accepted"], abs=1e-3
    )
    assert 0 < tokens.value < 1
    assert replay.value == 0 and replay.passed
    # every choice of the first run (5 per n=5 vote request) is served from the cache
    assert replay.detail["cached_hits"] == replay.detail["first_run_choices"] > 0
    assert replay.detail["first_run_choices"] > replay.detail["first_run_requests"]


def test_critical_path_of_a_zero_latency_run(server, tmp_path):
    settings = bench.bench_settings(server, "off")
    run = bench.scripted_run(server, settings, tmp_path / "run", limit=1)
    contexts, _ = bench.read_contexts(bench.SQUAD, settings.max_context_chars)
    bound = bench.critical_path_bound(run.requests, contexts[:1], concurrency=4)
    stages = bound["stages_per_context"][0]
    assert sum(stages) + bound["judge_requests"] == len(run.requests)
    # a judged test's votes, then its median vote asked for the explanation
    assert bound["judge_requests"] == 2 * run.summary.counts["judged"]
    assert bound["bound_latencies"] >= bound["throughput_latencies"] == len(run.requests) / 4


def test_greedy_schedule_counts_latencies():
    assert bench.greedy_schedule([[3, 6], [3, 6]], final=8, concurrency=4) == 5 + 2
    assert bench.greedy_schedule([[1, 1, 1]], final=0, concurrency=4) == 3


def scripted_validity(script, data, *args, **kwargs):
    """``evals.validity.measure`` with every LLM role played by ``script``."""
    from cq2a.settings import LLMSpec, Settings, SUTSpec
    from evals import validity

    release_services()
    with ScriptedLLMServer() as scripted:
        script.install(scripted.rules)
        spec = {"backend": "compatible", "base_url": scripted.base_url, "model": "scripted"}
        settings = Settings(
            generator=LLMSpec(**spec),
            reasker=LLMSpec(**spec),
            judge=LLMSpec(**spec, temperature=0.0),
            sut=SUTSpec(kind="callable", model="evals.bench:unsure_sut"),
            cache_path="off",
        )
        return validity.measure(settings, data, *args, **kwargs)


def test_validity_harness_on_human_questions_against_the_scripted_server(tmp_path):
    """The re-asker answers each human question with its human answer, and the judge clears an
    answer that shares a word with the gold: the harness must then accept the human pairs,
    reject the mismatched ones, and tell alternate answers from wrong ones."""
    from cq2a.language.answers import answer_tokens
    from cq2a.testing.script import PipelineScript
    from evals import validity

    items = validity.sample_questions(recall.SHIPPED, contexts=2, per_context=3, seed=1)
    human = {item.question: item.answers[0] for item in items}

    def judge(gold: str, sut: str) -> int:
        return 95 if set(answer_tokens(gold)) & set(answer_tokens(sut)) else 5

    script = PipelineScript(
        questions=lambda answer, feedback: [],
        votes=lambda question: [human.get(question, "nothing at all")] * 5,
        judge=judge,
    )
    figures = scripted_validity(script, recall.SHIPPED, 2, 3, seed=1)
    assert figures["questions"] == len(items) >= 4 and figures["llm_errors"] == 0
    assert figures["filter.per_rule_pass"]["consistency"] == 1.0
    long_enough = sum(len(item.question) >= 26 for item in items) / len(items)
    assert figures["filter.human_accepted"] == pytest.approx(long_enough, abs=1e-3)
    assert figures["filter.mismatched_pairs"] > 0 and figures["filter.mismatched_rejected"] == 1.0
    assert figures["oracle.wrong_pairs"] > 0 and figures["oracle.wrong_is_bug"] == 1.0
    for key in ("oracle.alternate_not_bug", "filter.human_accepted", "seconds", "llm_requests"):
        assert key in figures


def test_validity_oracle_only_asks_no_question_again():
    """``oracle_only``: the oracle's figures as in a whole run, and no re-ask at all."""
    from cq2a.language.answers import answer_tokens
    from cq2a.testing.script import PipelineScript

    asked: list[str] = []

    def votes(question: str) -> list[str]:
        asked.append(question)
        return ["nothing at all"] * 5

    def judge(gold: str, sut: str) -> int:
        return 95 if set(answer_tokens(gold)) & set(answer_tokens(sut)) else 5

    script = PipelineScript(questions=lambda answer, feedback: [], votes=votes, judge=judge)
    figures = scripted_validity(script, recall.SHIPPED, 2, 3, seed=1, oracle_only=True)
    assert asked == [] and figures["filter.human_accepted"] is None
    assert figures["oracle.wrong_pairs"] > 0 and figures["oracle.wrong_is_bug"] == 1.0


def test_validity_harness_on_yes_no_and_unanswerable_human_questions(tmp_path):
    """BoolQ-style yes/no questions and SQuAD 2.0-style impossible ones: a re-asker that gives
    each its human answer (and abstains on the impossible ones) must have them accepted, the
    other label and an answerable question marked unanswerable rejected, and the oracle must
    pass an abstention and the same label and fail a span or the other label."""
    from cq2a.models.records import UNANSWERABLE
    from cq2a.testing.script import PipelineScript

    context = ("Rollo signed a treaty with King Charles III of West Francia in 911. "
               "The Normans later conquered England in 1066.")  # fmt: skip
    qas = [
        {"question": "did rollo sign a treaty with charles iii", "answers": ["True"]},
        {"question": "did the normans conquer england in 911", "answers": ["False"]},
        {"question": "In which year did the Normans conquer England?", "answers": ["1066"]},
        {"question": "In which city did Rollo sign the treaty with King Charles?",
         "answers": [], "is_impossible": True},
    ]  # fmt: skip
    data = tmp_path / "mixed.jsonl"
    data.write_text(json.dumps({"id": "m1", "context": context, "qas": qas}) + "\n")
    votes = {"did rollo sign a treaty with charles iii": "yes",
             "did the normans conquer england in 911": "No, in 1066.",
             "In which year did the Normans conquer England?": "1066"}  # fmt: skip

    script = PipelineScript(
        questions=lambda answer, feedback: [],
        votes=lambda question: [votes.get(question, UNANSWERABLE)] * 5,
        judge=lambda gold, sut: 5,
    )
    figures = scripted_validity(script, data, 1, 3, seed=0, unanswerable=1)
    yes_no, unanswerable = figures["by_type"]["yesno"], figures["by_type"]["unanswerable"]
    assert yes_no["questions"] == 2 and yes_no["filter.human_accepted"] == 1.0
    assert yes_no["filter.mismatched_pairs"] == 2 and yes_no["filter.mismatched_rejected"] == 1.0
    assert yes_no["oracle.wrong_is_bug"] == 1.0  # the other label
    assert unanswerable["questions"] == 1 and unanswerable["filter.human_accepted"] == 1.0
    # the answerable question given the gold "unanswerable": the re-asker answers it: rejected
    assert unanswerable["filter.mismatched_pairs"] == 1
    assert unanswerable["filter.mismatched_rejected"] == 1.0
    assert unanswerable["oracle.alternate_not_bug"] == 1.0  # "The passage does not say."
    assert unanswerable["oracle.wrong_is_bug"] == 1.0  # a span where none is
    assert figures["type"] == "span" and figures["questions"] == 1
    # one type alone: its filters, the span question only as its negative, no oracle
    alone = scripted_validity(script, data, 1, 3, seed=0, unanswerable=1, only="unanswerable")
    assert set(alone["by_type"]) == {"unanswerable"} and alone["type"] == "unanswerable"
    assert alone["filter.human_accepted"] == 1.0 and alone["filter.mismatched_rejected"] == 1.0
    assert alone["oracle.wrong_pairs"] == 0 and alone["llm_requests"] == 2


def test_the_rules_without_an_llm_reject_few_human_questions():
    from cq2a.settings import Settings
    from evals import validity

    cost = validity.rule_costs(recall.SHIPPED, Settings(cache_path="off"))
    rejected = cost["leak_rule_rejects_human_questions"]
    assert rejected["paper"]["questions"] == rejected["strict"]["questions"] > 300
    assert rejected["paper"]["rejected"] < 0.02 < rejected["strict"]["rejected"]
    ranking = cost["ranking_rule_rejects_human_questions"]
    assert ranking["questions"] == rejected["paper"]["questions"]
    assert 0 < len(ranking["examples"]) <= ranking["ranking_words"] < 20
    assert ranking["rejected"] < 0.02


def test_the_self_contained_labels_split_as_documented_and_are_measured():
    from evals.self_contained import measure, read_labels

    report, tune = read_labels("report"), read_labels("tune")
    assert (len(report), len(tune)) == (200, 463)
    assert all(row["context_id"].startswith("squad2-") for row in report + tune)
    assert all(row.get("reason") for row in report + tune if not row["self_contained"])
    sample = [row for row in tune if "this" in row["question"].split()]
    result = measure(sample)
    assert result["not_self_contained"] == len(sample) and result["catch_rate"] == 1.0


def test_recall_on_passages_gives_each_passage_its_own_budget():
    found = recall.dataset_recall(recall.SHIPPED, limit=2, budget=1, passage_chars=300)
    assert found.passage_chars == 300 and found.passages_per_context > 1
    kept = sum(kind.per_context for kind in found.sets[0].per_kind.values())
    assert kept == pytest.approx(found.passages_per_context, abs=0.11)


# ---- the scale benchmark's inputs and script ----


def test_scale_inputs_repeat_the_passages_with_distinct_ids_and_texts():
    from evals import scale

    made = scale.copied_contexts(200)
    passages = scale.SQUAD.read_text(encoding="utf-8").splitlines()
    assert len(made) == 200 > 2 * len(passages)
    assert len({row["id"] for row in made}) == 200
    assert len({row["context"] for row in made}) == 200
    first, again = made[0], made[len(passages)]
    assert first["id"].endswith("-copy0") and again["id"].endswith("-copy1")
    assert first["context"].removesuffix("This is copy 0 of the passage.") == again[
        "context"
    ].removesuffix("This is copy 1 of the passage.")


def test_report_scale_writes_a_run_the_report_reads_with_every_record(tmp_path):
    from cq2a.reporting.exports import load_run
    from evals import report_scale

    report_scale.write_run_dir(tmp_path, 4)
    data = load_run(tmp_path)
    assert (len(data.answers), len(data.cases), len(data.verdicts), len(data.bugs)) == (
        12,
        12,
        12,
        4,
    )
    assert len({case.id for case in data.cases}) == 12
    assert len(data.candidates) == 16 and 650 <= len(data.cases[0].context) <= 800
    assert len(data.run["figures"]["diversity"]["per_context"]) == 4


def scale_request(system: str, user: str, n: int = 1) -> dict[str, object]:
    from cq2a.adapters.llm.prompts import load_prompt

    messages = [
        {"role": "system", "content": load_prompt(system)},
        {"role": "user", "content": user},
    ]
    return {"model": "scripted", "messages": messages, "n": n}


def test_scale_script_answers_from_the_request_alone():
    """Two fresh servers, as two processes would be, give the same replies, and the second
    re-asks a question only the first wrote with its gold answer."""
    import urllib.request

    from evals import reliability_worker as worker

    def post(server: ScriptedLLMServer, body: dict[str, object]) -> list[object]:
        request = urllib.request.Request(
            f"{server.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            choices = json.loads(response.read())["choices"]
        return [c["message"]["content"] for c in choices]

    passage = "Rollo signed a treaty with King Charles III of West Francia in 911."
    generate = scale_request(
        "entity_questions.system",
        f"Passage: {passage}\n\nSentence with the blank: Rollo signed a treaty in ____.\n"
        'Target answer: 911\n\nWrite 2 different questions whose answer is "911", each asking '
        "for the words in the blank.",
    )
    with ScriptedLLMServer() as first, ScriptedLLMServer() as second:
        worker.script().install(first.rules)
        worker.script().install(second.rules)
        written = post(first, generate)
        assert written == post(second, generate)
        question = json.loads(str(written[0]))["questions"][0]["question"]
        assert "911" not in question
        reask = scale_request(
            "reask.system", f"Context: {passage}\n\nQuestion: {question}\nAnswer:", n=5
        )
        assert post(second, reask) == ["911"] * 5 == post(first, reask)


def test_validity_samples_only_the_part_asked_for():
    from pathlib import Path

    from evals.parts import records_of_part
    from evals.validity import sample_questions

    squad = Path("cq2a/data/squad2_dev_sample.jsonl")
    titles = {
        part: {q.context.id for q in sample_questions(squad, 100, 1, 0, part=part)}
        for part in ("tune", "report")
    }
    records = {
        json.loads(line)["id"]: json.loads(line)["title"]
        for line in squad.read_text(encoding="utf-8").splitlines()
    }
    assert {records[i] for i in titles["report"]} == {"Harvard_University"}
    assert {records[i] for i in titles["tune"]} == {"Normans", "1973_oil_crisis"}
    lines = [json.dumps({"id": f"b{n}", "dataset": "boolq"}) for n in range(1, 51)]
    assert [r["id"] for r in records_of_part(lines, "report")] == [f"b{n}" for n in range(26, 51)]
    assert len(records_of_part(lines, "tune")) == 25
    with pytest.raises(ValueError, match="--part all"):
        records_of_part([json.dumps({"id": "x", "dataset": "mine"})], "report")


def test_a_silent_yes_no_question_is_asked_with_both_labels_as_wrong_golds(tmp_path):
    from pathlib import Path

    from evals.validity import sample_questions

    items = sample_questions(Path("evals/data/yesno_silent_labelled.jsonl"), 100, 1, 0)
    assert len(items) == 8
    assert all(i.type == "yesno" and i.silent for i in items)
    assert {(i.answers[0], i.mismatched) for i in items} == {("no", "yes")}


def test_shared_prefix_layout_puts_the_passage_before_the_stage_instructions():
    from evals.prompt_layout import SHARED, laid_out, unbounded_cache_tokens

    system, user = "Grade it.", "Context: The Normans came.\n\nQuestion: Who came?"
    assert laid_out(system, user, "as-sent")[0]["content"] == system
    shared = laid_out(system, user, "shared-prefix")
    assert shared[0]["content"] == f"{SHARED}\n\nPassage: The Normans came."
    assert shared[1]["content"] == "Grade it.\n\nQuestion: Who came?"
    # a prompt without a passage line is sent as it was
    assert laid_out(system, "Write it.", "shared-prefix")[1]["content"] == "Write it."
    # an unbounded cache processes a repeated prompt once, and a new suffix only
    one = laid_out(system, user, "as-sent")
    two = laid_out(system, user.replace("Who", "Whom"), "as-sent")
    alone = unbounded_cache_tokens([one])
    assert unbounded_cache_tokens([one, one]) == alone
    assert alone < unbounded_cache_tokens([one, two]) < 2 * alone


def test_the_reusing_replay_server_adds_only_cache_reuse(tmp_path):
    from cq2a.adapters.llm.local_server import LocalLLMServer
    from evals.prompt_layout import ReusingServer

    model = tmp_path / "m.gguf"
    plain = LocalLLMServer(model, alias="m", port=8000, slots=2).command()
    reusing = ReusingServer(model, alias="m", port=8000, slots=2, reuse=256).command()
    assert reusing == [*plain, "--cache-reuse", "256"]


def test_side_by_side_counts_only_labelled_outputs_as_valid():
    from cq2a.adapters.llm.local_server import counters_spent
    from evals.side_by_side import with_labels

    before = {"prompt_tokens_total": 10.0, "prompt_tokens_cached_total": 0.0}
    after = {"prompt_tokens_total": 110.0, "prompt_tokens_cached_total": 300.0}
    used = counters_spent(
        before | {"tokens_predicted_total": 0.0}, after | {"tokens_predicted_total": 50.0}
    )
    assert used == {
        "prompt_tokens": 100,
        "prompt_tokens_cached": 300,
        "cache_hit_rate": 0.75,
        "tokens_predicted": 50,
        "prompt_seconds": 0.0,
        "predicted_seconds": 0.0,
    }
    outputs = [{"question": q} for q in ("a?", "b?", "c?")]
    labels = {"a?": {"valid": True}, "b?": {"valid": False}}
    figures = with_labels({"seconds": 30.0, "tokens": 150}, outputs, labels)
    assert figures == {
        "read": 2,
        "unread": 1,
        "valid": 1,
        "seconds_per_valid": 30.0,
        "tokens_per_valid": 150,
    }
    assert with_labels({"seconds": 30.0, "tokens": 150}, outputs, {})["valid"] == 0


def test_kind_yield_counts_coverage_slots_by_what_their_kind_did_first(tmp_path):
    from evals.kind_yield import kind_yield

    def write(name, records):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in records))

    def case(answer_id, kind):  # test_cases.jsonl: the kind beside a string answer
        return {"id": f"{answer_id}:q0", "context_id": answer_id[0], "kind": kind, "answer": "a"}

    def rejected(answer_id, kind, question=0):  # rejected.jsonl: the answer record
        return {"id": f"{answer_id}:q{question}", "context_id": answer_id[0],
                "answer": {"kind": kind}}  # fmt: skip

    write("test_cases.jsonl", [case("c:e0", "named-entity"), case("c:e4", "number"),
                               case("d:y0", "yes-no"), case("d:y2", "yes-no")])  # fmt: skip
    write("rejected.jsonl", [rejected("c:u0", "unanswerable"), rejected("c:u1", "unanswerable"),
                             rejected("c:e5", "named-entity"), rejected("c:r0", "relation", 0),
                             rejected("c:r0", "relation", 1), rejected("d:u2", "unanswerable"),
                             rejected("d:m1", "multi-sentence")])  # fmt: skip
    rounds = [["c:u1", "c:e4", "c:e5"], ["d:y2", "d:u2", "d:m1"]]
    events = [{"event": "coverage_round", "answers": answers} for answers in rounds]
    write("trace.jsonl", [{"event": "stage_started"}, *events])
    rows = kind_yield([tmp_path])["coverage_round_slots"]
    assert rows == {
        "entity, first round yielded": {"accepted": 1, "slots": 2},
        "multi_sentence, first round absent": {"accepted": 0, "slots": 1},
        "unanswerable, first round all rejected": {"accepted": 0, "slots": 1},
        "unanswerable, first round absent": {"accepted": 0, "slots": 1},
        "yesno, first round yielded": {"accepted": 1, "slots": 1},
    }


def test_trimmed_recounts_a_validity_run_with_and_without_the_rule(french_parser):
    from cq2a.language.parsing import lemmatizer
    from evals.trimmed import answer_lists, cut_short_in_lists, recount

    records = [
        {"id": "c1", "context": "Le 2 août 1940, 30 000 hommes partent de la ville de Béjaïa.",
         "qas": [
            {"question": "Quand ?", "answers": ["2 août 1940"]},
            {"question": "Combien ?", "answers": ["30 000 hommes", "30 000"]},
            {"question": "Où ?", "answers": ["Béjaïa", "la ville de Béjaïa"]},
        ]},
    ]  # fmt: skip
    result = {
        "settings": {"consistency_threshold": 0.73},
        "reasked": [
            {"context_id": "c1", "question": "Quand ?", "gold": "2 août 1940",
             "majority": "1940", "similarity": 0.72, "type": "span"},
            {"context_id": "c1", "question": "Quand ?", "gold": "30 000 hommes",
             "majority": "1940", "similarity": 0.1, "type": "span"},
            {"context_id": "c1", "question": "Combien ?", "gold": "30 000 hommes",
             "majority": "30 000 hommes", "similarity": 1.0, "type": "span"},
        ],
    }  # fmt: skip
    figures = recount(result, answer_lists(records))
    assert figures["human"] == {"pairs": 2, "similar": 1, "with_rule": 2}
    assert figures["mismatched"] == {"pairs": 1, "similar": 0, "with_rule": 0}
    assert [item["majority"] for item in figures["taken_by_the_rule"]] == ["1940"]
    lists = cut_short_in_lists(records, lemmatizer(french_parser))
    assert (lists["alternates"], lists["alternates_cut_short"]) == (2, 1)
    assert lists["alternates_holding_the_gold"] == 1  # "la ville de Béjaïa"
    assert (lists["answer_pairs"], lists["answer_pairs_cut_short"]) == (6, 0)
    assert lists["answer_pairs_holding_the_gold"] == 0


def test_trimmed_counts_the_bugs_of_runs_the_rule_would_excuse(tmp_path):
    from evals.trimmed import bugs_excused

    context = "La capitale des Zirides est la ville de Béjaïa, en Kabylie."
    bugs = [
        {"question": "Quelle capitale ?", "gold_answer": "Béjaïa", "stage": "judge",
         "sut_answer": "la ville de Béjaïa", "context": context, "language": "fr"},
        {"question": "Quelle région ?", "gold_answer": "Kabylie", "stage": "judge",
         "sut_answer": "la région de Kabylie", "context": context, "language": "fr"},
        {"question": "Quelle région ?", "gold_answer": "Kabylie", "stage": "rule",
         "sut_answer": "yes", "context": context, "language": "fr"},
    ]  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    (run / "bugs.jsonl").write_text("\n".join(json.dumps(b) for b in bugs), encoding="utf-8")
    figures = bugs_excused([run, run])  # a bug seen twice counts once
    assert (figures["bugs"], figures["containing_the_gold"]) == (2, 2)
    # "la région de Kabylie" is no span of the passage: the judge's bug stands
    assert figures["excused"] == [{"run": "run", "gold": "Béjaïa", "sut": "la ville de Béjaïa"}]
