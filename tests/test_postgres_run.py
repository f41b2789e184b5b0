"""The single-process engine over PostgreSQL: the same suite as over the run directory's SQLite
files, and the store's password nowhere in what the run writes."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from cq2a.app import outputs as out
from cq2a.app.backend import Backend
from cq2a.app.postgres import redacted, schema_name
from cq2a.app.run import run_pipeline
from cq2a.app.rundir import RunDirError
from cq2a.runtime.services import release_services
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker

#: The fixture's cluster trusts every local connection, so any password gets in.
PASSWORD = "pw-that-must-not-leak"
SUITE_FILES = (out.TEST_CASES, out.VERDICTS, out.BUGS, out.REJECTED)


@pytest.fixture(autouse=True)
def fresh_runtimes():
    release_services()
    yield
    release_services()


def with_password(url: str) -> str:
    return url.replace("postgres@", f"postgres:{PASSWORD}@", 1)


def suite(run_dir: Path) -> dict[str, list[str]]:
    return {
        name: sorted((run_dir / name).read_text(encoding="utf-8").splitlines())
        for name in SUITE_FILES
    }


def test_a_run_over_postgresql_gives_the_sqlite_runs_suite_and_hides_the_password(
    tmp_path: Path, postgres_url: str
) -> None:
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(4))
    store = with_password(postgres_url)
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        settings = worker.settings_for(server.base_url)
        reference = run_pipeline(input_path, tmp_path / "sqlite", settings)
        release_services()
        summary = run_pipeline(input_path, tmp_path / "pg", settings, backend=Backend(store=store))
        sent = len(server.requests)
        resumed = run_pipeline(
            input_path, tmp_path / "pg", settings, resume=True, backend=Backend(store=store)
        )
        assert len(server.requests) == sent  # all of it was in the store already

    assert reference.status == summary.status == resumed.status == "finished"
    assert summary.counts["test_cases"] > 0
    assert suite(tmp_path / "pg") == suite(tmp_path / "sqlite")
    assert not (tmp_path / "pg" / out.STORE).exists()
    record = out.read_json(tmp_path / "pg" / out.RUN)
    assert record["backend"]["store"] == redacted(store) != store
    for name in (out.RUN, out.TRACE):
        assert PASSWORD not in (tmp_path / "pg" / name).read_text(encoding="utf-8")
    with psycopg.connect(postgres_url) as conn:
        finished = conn.execute(
            f"SELECT count(*) FROM {schema_name(record['run_id'])}.contexts"
        ).fetchone()
        threads = conn.execute(
            "SELECT count(*) FROM checkpoints WHERE thread_id LIKE %s", (f"{record['run_id']}:%",)
        ).fetchone()
    assert finished == (4,)
    assert threads == (0,)  # each context left the checkpointer once stored


def test_resuming_a_run_the_database_does_not_hold_is_refused(
    tmp_path: Path, postgres_url: str
) -> None:
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(1, prefix="absent"))
    settings = worker.settings_for("http://127.0.0.1:9/v1")
    with pytest.raises(RunDirError, match="nothing to resume"):
        run_pipeline(
            input_path, tmp_path / "run", settings, resume=True, backend=Backend(store=postgres_url)
        )


def test_redacted_hides_only_the_password() -> None:
    assert redacted("postgresql://u:secret@db.example:5432/cq2a?sslmode=require") == (
        "postgresql://u:***@db.example:5432/cq2a?sslmode=require"
    )
    assert redacted("postgresql://u@/cq2a?host=/tmp") == "postgresql://u@/cq2a?host=/tmp"
