"""What a run leaves in its directory besides the tests. Every role is played by the scripted
server."""

from __future__ import annotations

import pytest

from cq2a.app import outputs as out
from cq2a.app.run import run_pipeline
from cq2a.language.embeddings import MINILM_THRESHOLD
from cq2a.runtime.services import release_services
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker


@pytest.fixture(autouse=True)
def fresh_runtimes():
    release_services()
    yield
    release_services()


def test_run_json_records_the_thresholds_applied_with_their_defaults_resolved(tmp_path):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(1))
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        settings = worker.settings_for(server.base_url)
        run_pipeline(input_path, tmp_path / "run", settings)
    record = out.read_json(tmp_path / "run" / out.RUN)
    # the defaults: thresholds unset, so the embedding model's calibrated cosine applies
    assert settings.consistency_threshold is None and settings.oracle_threshold is None
    assert settings.embedding_model == "all-MiniLM-L6-v2"
    assert record["thresholds"] == {
        "consistency": MINILM_THRESHOLD,
        "oracle": MINILM_THRESHOLD,
        "judge": 50,
    }
