"""The wheel installs one import name, cq2a, with graph/, nodes/, prompts/ mapped under it."""

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_wheel_has_only_the_cq2a_package(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("cq2a-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.endswith(".dist-info/")}
    assert {t for t in top_level if not t.endswith(".dist-info")} == {"cq2a"}
    for expected in (
        "cq2a/graph/graph.py",
        "cq2a/nodes/extract.py",
        "cq2a/prompts/judge.system.txt",
        "cq2a/prompts/fr/entity_questions.system.txt",
        "cq2a/data/squad2_dev_sample.jsonl",
    ):
        assert expected in names


def test_readme_documents_every_trace_event():
    from typing import get_args

    from cq2a.runtime.trace import EventType

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("### Trace events", 1)[1].split("\n### ", 1)[0]
    missing = [name for name in get_args(EventType) if f"`{name}`" not in table]
    assert not missing, f"README's trace event table lacks {missing}"
