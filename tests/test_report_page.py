"""The report's values, computed from hand-made records without rendering a page."""

from __future__ import annotations

from cq2a.models.records import AnswerKind, Evidence, TestCase
from cq2a.reporting.charts import histogram
from cq2a.reporting.contexts import context_view
from cq2a.reporting.exports import RunData
from cq2a.reporting.formats import bar, duration, percent
from cq2a.reporting.headline import alerts, cards
from cq2a.reporting.page import suite

CONTEXT = "Paris is the capital of France. The Seine flows through Paris."


def paris_case(id_: str, kind: AnswerKind, question: str) -> TestCase:
    sentence = "Paris is the capital of France."
    return TestCase(
        id=id_,
        context_id="ctx",
        context=CONTEXT,
        question=question,
        answer="Paris",
        kind=kind,
        sentence=sentence,
        start=0,
        end=5,
        explanation="",
        attempts=1,
        votes=["Paris"],
        similarity=0.9,
        evidence=[Evidence(start=0, end=len(sentence), text=sentence)],
    )


def test_numbers_are_written_for_reading() -> None:
    assert (percent(None), percent(0.6667), percent(0.0)) == ("–", "66.7%", "0.0%")
    assert (duration(None), duration(4.26), duration(125), duration(3723)) == (
        "–",
        "4.3s",
        "2m 05s",
        "1h 02m",
    )
    assert (bar(3, 4).width, bar(0, 0).width) == (75.0, 0)


def test_histogram_bins_values_and_keeps_out_of_range_values_in_the_end_bins() -> None:
    chart = histogram("t", [0.05, 0.95, 1.0, 1.7, -0.2], 0, 1, None)
    assert [b.count for b in chart.bars] == [2, 0, 0, 0, 0, 0, 0, 0, 0, 3]
    assert chart.values == 5 and chart.threshold_x is None
    tallest = chart.bars[-1]
    assert (tallest.y, tallest.height) == (20, 110)  # the tallest bar spans the plot
    assert [(t.value, t.x) for t in chart.ticks] == [(0, 20), (0.5, 150), (1, 280)]


def test_histogram_draws_a_threshold_only_inside_its_range() -> None:
    assert histogram("t", [], 0, 100, 50).threshold_x == 150
    assert histogram("t", [], 0, 1, 0.0).threshold_x == 20
    outside = histogram("t", [], 0, 1, 1.5)
    assert outside.threshold == 1.5 and outside.threshold_x is None


def test_context_view_marks_answers_and_shades_sentences() -> None:
    cases = [
        paris_case("a", AnswerKind.ENTITY_WORD, "What is the capital of France?"),
        paris_case("b", AnswerKind.NAMED_ENTITY, "Which city is France's capital?"),
        paris_case("c", AnswerKind.YES_NO, "Is Paris the capital of France?"),
    ]
    view = context_view("ctx", cases, bug_ids={"b"})
    assert "".join(s.text for s in view.segments) == CONTEXT
    marked = [s for s in view.segments if s.kind]
    assert [(s.text, s.kind, s.bug) for s in marked] == [("Paris", "entity-word", True)]
    assert marked[0].questions == [
        "entity-word: What is the capital of France?",
        "named-entity: Which city is France's capital?",
    ]
    shaded = "".join(s.text for s in view.segments if s.shaded)
    assert shaded == "Paris is the capital of France."
    assert view.share == 26 / 52 and view.tests == 3


def test_cards_show_labelled_rates_only_once_labelled() -> None:
    data = RunData(run={"judge_probe": {"passed": True}})
    assert [c.label for c in cards(data, None)][-1] == "Judge probe"
    labelled = cards(data, {"bug_tp_rate": 0.5, "question_precision": None})
    assert [(c.label, c.value, c.tone) for c in labelled[-2:]] == [
        ("Judge probe", "passed", "ok"),
        ("Bug TP rate (labelled)", "50.0%", "ok"),
    ]


def test_alerts_for_a_split_probe_and_a_stopped_run() -> None:
    run = {
        "status": "stopped",
        "message": "out of budget",
        "judge_probe": {"passed": True, "confident": False, "detail": "2 of 3"},
    }
    found = alerts(RunData(run=run))
    assert [(a.tone, a.id, a.lead) for a in found] == [
        ("warn", "probe-confidence", "The judge passed its probe with split votes"),
        ("warn", "", "Run stopped."),
    ]
    assert [a.text for a in alerts(RunData())] == ["No run.json: the run did not finish."]


def test_suite_figures_are_absent_for_runs_without_them_or_with_an_older_layout() -> None:
    assert suite({}) is None
    assert suite({"figures": {"mix": {"kinds": {}}, "diversity": {"coverage": 1}}}) is None
