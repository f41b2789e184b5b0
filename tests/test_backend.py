"""Where a run works and keeps its state: the choices the command line accepts and refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from cq2a.app.backend import Backend
from cq2a.cli import main
from cq2a.cli.commands import EXIT_USAGE


def test_the_default_is_this_process_with_sqlite() -> None:
    assert Backend().public() == {"engine": "local", "store": "sqlite", "ray_actors": 2}


@pytest.mark.parametrize(
    ("choice", "refusal"),
    [
        ({"engine": "ray"}, "needs --store"),
        ({"store": "mysql://db/cq2a"}, "postgresql://"),
        ({"engine": "ray", "store": "postgresql://db/cq2a", "ray_actors": 0}, "at least 1"),
    ],
)
def test_a_backend_that_cannot_work_is_refused(choice: dict, refusal: str) -> None:
    with pytest.raises(ValueError, match=refusal):
        Backend(**choice)


def test_cq2a_run_with_ray_and_no_store_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["run", str(tmp_path / "in.jsonl"), "--out", str(tmp_path / "run"), "--engine", "ray"]
    )
    assert code == EXIT_USAGE
    assert "--engine ray needs --store" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
