"""The paper's research questions as runnable harnesses, and the benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def emit(report: dict[str, Any], path: Path | None) -> None:
    """Print a harness's figures as JSON, and write them to ``path`` when given."""
    text = json.dumps(report, indent=2)
    print(text)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
