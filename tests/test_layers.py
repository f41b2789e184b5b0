"""The layers contract holds on the installed tree, and breaks when a node imports upward."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = ROOT / "scripts" / "lint_imports.sh"


def lint_imports(source: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(
        ["bash", str(LINT), str(source)], capture_output=True, text=True, env=env, timeout=300
    )


def copy_of_checkout(to: Path) -> Path:
    """The files git tracks, as a fresh clone has them (no .venv, no build output)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    return to


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_of_checkout(tmp_path_factory.mktemp("checkout"))


def test_the_contracts_hold_on_the_wheel_s_tree(checkout: Path) -> None:
    result = lint_imports(checkout)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_an_upward_import_in_a_node_breaks_the_layers(tmp_path: Path) -> None:
    # nodes/ is installed as cq2a.nodes: the checker must see it to catch this
    planted = copy_of_checkout(tmp_path / "planted")
    node = planted / "nodes" / "check.py"
    node.write_text(node.read_text() + "\nfrom cq2a.app import run as _run  # noqa: E402,F401\n")
    result = lint_imports(planted)
    assert result.returncode != 0
    assert "layers point down BROKEN" in result.stdout
    assert "cq2a.nodes.check -> cq2a.app.run" in result.stdout
