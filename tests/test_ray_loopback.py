"""Ray runs on loopback only, inside a network namespace: a local cluster starts, an actor answers,
and an actor whose process is SIGKILLed raises ActorDiedError on the next call."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.services import run_in_loopback_namespace

SCENARIO = Path(__file__).with_name("ray_actor_kill.py")


@pytest.fixture
def short_workdir() -> Iterator[Path]:
    """Not pytest's tmp_path: Ray's unix socket paths must stay under 108 characters."""
    workdir = Path(tempfile.mkdtemp(prefix="cq2a-ray-"))
    yield workdir
    shutil.rmtree(workdir, ignore_errors=True)


def test_a_killed_actor_raises_actor_died_and_ray_stays_on_loopback(short_workdir: Path) -> None:
    env = os.environ | {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    started = time.monotonic()
    done = run_in_loopback_namespace(
        [sys.executable, str(SCENARIO), str(short_workdir)], timeout=120, env=env
    )
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads((short_workdir / "report.json").read_text())
    assert report["node_ip"] == "127.0.0.1"
    assert report["nodes"] == ["127.0.0.1"]
    assert report["calls"] == [1, 2]
    assert report["after_kill"] == "ActorDiedError"
    assert seconds < 45, f"the scenario took {seconds:.0f} s"
