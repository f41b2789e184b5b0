"""The run store keeps what a finished context produced, and nothing the run's end has no use
for: every stored context is read back at once when the run ends."""

from __future__ import annotations

from cq2a.app.store import open_store
from cq2a.models.records import Answer, AnswerKind, ContextPlan


def answer(n: int) -> Answer:
    return Answer(
        id=f"c:e{n}",
        context_id="c",
        kind=AnswerKind.NAMED_ENTITY,
        text=f"Name {n}",
        sentence=f"Name {n} was there.",
        sentence_index=0,
    )


def test_a_stored_context_keeps_its_plan_without_the_pool_of_its_coverage_rounds(tmp_path):
    plan = ContextPlan(
        id="c",
        pool=[answer(n) for n in range(5)],
        sentence_spans=[(0, 19), (20, 40)],
        coverage_rounds=1,
        dropped_triples=["not anchored"],
    )
    with open_store(tmp_path / "run.sqlite") as store:
        store.save_context("c", 0, {"plans": [plan], "answers": [answer(0)]})
        (record,) = store.contexts()

    (kept,) = record.plans
    assert kept.pool == []
    assert kept.model_dump(exclude={"pool"}) == plan.model_dump(exclude={"pool"})
    assert record.answers == [answer(0)]


def test_a_stored_context_is_found_by_its_id_alone(tmp_path):
    """A Ray worker asks whether the context it leased is already done, once per context: one
    row looked up, the same answer as the set of every finished id."""
    with open_store(tmp_path / "run.sqlite") as store:
        assert not store.has_context("c")
        store.save_context("c", 0, {"answers": [answer(0)]})
        store.save_context("c", 0, {"answers": [answer(0)]})  # a repeated write: one row
        assert store.has_context("c")
        assert not store.has_context("d")
        assert store.finished_contexts() == {"c"}
