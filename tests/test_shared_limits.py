"""The limits a Ray run's processes share: the spending meter in the run's PostgreSQL schema
(``cq2a.app.store_meter``), against the real server, with several meter objects standing for
several processes; and each actor's share of the request rate."""

from __future__ import annotations

import itertools
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cq2a.adapters.llm.usage import BudgetExceeded, SpendingMeter, Usage
from cq2a.app.ray_engine import actor_plan
from cq2a.app.rundir import plan_run
from cq2a.app.store_meter import StoreMeter
from cq2a.runtime.services import release_services, services_for, share_meter
from evals import reliability_worker as worker

_RUNS = itertools.count()


@pytest.fixture
def run_id() -> str:
    """A run of its own for each test: its own schema, its own spending row."""
    return f"meter{next(_RUNS)}"


class SlowMeter(StoreMeter):
    """A meter slow to decide, so that a reservation that did not lock the row would let
    another process's reservation in between its read and its write."""

    def refusal(self, total: Usage, reserved: Usage, estimate: Usage) -> BudgetExceeded | None:
        time.sleep(0.002)
        return super().refusal(total, reserved, estimate)


def test_meters_of_several_processes_reserving_at_once_never_pass_the_cap(
    postgres_url: str, run_id: str
) -> None:
    """Eight meters (eight processes, whose reservations only the row's lock orders), two
    threads each, every request using all it reserved: if two reservations ever both saw the
    row before the other's, more requests would fit than the cap holds."""
    estimate = Usage(prompt_tokens=10, completion_tokens=20)
    cap = 200 * estimate.total_tokens + 15
    meters = [SlowMeter(postgres_url, run_id, create=True, max_tokens=cap)]
    meters += [SlowMeter(postgres_url, run_id, max_tokens=cap) for _ in range(7)]
    sent = []
    refusals: list[str] = []
    lock = threading.Lock()

    def requests(meter: SpendingMeter) -> None:
        while True:
            try:
                meter.reserve(estimate)
            except BudgetExceeded as error:
                with lock:
                    refusals.append(str(error))
                return
            meter.record(estimate + Usage(requests=1))
            meter.release(estimate)
            with lock:
                sent.append(1)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(requests, [meter for meter in meters for _ in range(2)]))
    try:
        assert len(sent) == 200
        for meter in meters:
            assert meter.total == Usage(requests=200, prompt_tokens=2000, completion_tokens=4000)
            assert meter.reserved == Usage()
        assert len(refusals) == 16
        # each refused when what was spent and in flight left no room for one more (a request
        # that recorded its use and has yet to release its reservation counts twice)
        for refusal in refusals:
            found = re.match(r"token cap reached: (\d+) spent, (\d+) in flight", refusal)
            assert found and int(found[1]) + int(found[2]) >= 6000, refusal
    finally:
        for meter in meters:
            meter.close()


def test_what_one_process_reserves_and_records_the_others_see(
    postgres_url: str, run_id: str
) -> None:
    driver = StoreMeter(postgres_url, run_id, create=True, max_tokens=100)
    actor = StoreMeter(postgres_url, run_id, max_tokens=100)
    try:
        actor.reserve(Usage(prompt_tokens=30, completion_tokens=40))
        assert driver.reserved == Usage(prompt_tokens=30, completion_tokens=40)
        with pytest.raises(BudgetExceeded, match="token cap reached: 0 spent, 70 in flight"):
            driver.reserve(Usage(prompt_tokens=31))
        actor.record(Usage(requests=1, prompt_tokens=25, completion_tokens=5))
        actor.release(Usage(prompt_tokens=30, completion_tokens=40))
        assert driver.reserved == Usage()
        assert driver.total == Usage(requests=1, prompt_tokens=25, completion_tokens=5)
        driver.reserve(Usage(prompt_tokens=70))  # 30 spent + 70 fits the cap exactly
        driver.release(Usage(prompt_tokens=70))
        driver.record(Usage(prompt_tokens=70))
        with pytest.raises(BudgetExceeded, match="token cap reached: 100 spent"):
            actor.check()
    finally:
        driver.close()
        actor.close()


def test_the_cost_cap_holds_across_processes_too(postgres_url: str, run_id: str) -> None:
    def meter(create: bool) -> StoreMeter:
        return StoreMeter(
            postgres_url,
            run_id,
            create=create,
            max_cost=1.0,
            price_per_1k_prompt=10.0,
            price_per_1k_completion=20.0,
        )

    driver, actor = meter(create=True), meter(create=False)
    try:
        driver.reserve(Usage(prompt_tokens=60))  # 0.6 of the 1.0
        with pytest.raises(BudgetExceeded, match="cost cap reached: 0.0000 spent"):
            actor.reserve(Usage(completion_tokens=25))  # 0.5 more
        actor.reserve(Usage(completion_tokens=20))  # 0.4 more: exactly the cap
    finally:
        driver.close()
        actor.close()


def test_a_resumed_run_counts_the_most_spent_and_drops_dead_reservations(
    postgres_url: str, run_id: str
) -> None:
    """What the row says and what the run's accounts say, field by field the most; the
    reservations of the processes of the run before are gone with them."""
    before = StoreMeter(postgres_url, run_id, create=True, max_tokens=1000)
    before.record(Usage(requests=3, prompt_tokens=100, completion_tokens=10))
    before.reserve(Usage(prompt_tokens=500))  # in flight when the run was killed
    before.close()
    resumed = StoreMeter(postgres_url, run_id, create=True, max_tokens=1000)
    try:
        resumed.resume_from(Usage(requests=2, prompt_tokens=90, completion_tokens=40))
        assert resumed.total == Usage(requests=3, prompt_tokens=100, completion_tokens=40)
        assert resumed.reserved == Usage()
        resumed.reserve(Usage(prompt_tokens=860))  # 140 spent + 860: the whole cap
    finally:
        resumed.close()


def test_the_runs_llm_clients_count_against_the_shared_meter(tmp_path: Path) -> None:
    release_services()
    settings = worker.settings_for("http://127.0.0.1:9/v1")
    meter = SpendingMeter(max_tokens=10)
    try:
        runtime = share_meter(settings, "shared", meter).llm
        assert runtime.meter is meter
        assert runtime.generator.limits.meter is runtime.judge.limits.meter is meter
        assert services_for(settings, "shared").llm is runtime
        with pytest.raises(RuntimeError, match="another meter"):
            share_meter(settings, "shared", SpendingMeter())
    finally:
        release_services()


def test_each_actor_gets_an_even_share_of_the_request_rate(tmp_path: Path) -> None:
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(1))
    paced = plan_run(
        input_path, tmp_path / "run", worker.settings_for("http://x/v1", requests_per_second=6), 1
    )
    shared = actor_plan(paced, 4)
    assert shared.settings.requests_per_second == 1.5
    assert (shared.run_id, shared.contexts) == (paced.run_id, paced.contexts)
    unpaced = plan_run(input_path, tmp_path / "run", worker.settings_for("http://x/v1"), 1)
    assert actor_plan(unpaced, 4) is unpaced
