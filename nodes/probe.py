"""Node: probe the judge once before the run (III-D), so an untrustworthy judge is flagged."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from cq2a.graph.state import RunState
from cq2a.nodes._runtime import services
from cq2a.oracle import probe_judge
from cq2a.settings import Settings
from cq2a.trace import emit, log


def probe(state: RunState, runtime: Runtime[Settings]) -> dict[str, Any]:
    run = services(runtime)
    if not run.settings.probe_judge:
        return {"judge_probe": None}
    result, usage = probe_judge(run.llm.judge, run.settings.judge_threshold)
    emit("judge_probe", passed=result.passed, detail=result.detail)
    if not result.passed:
        log.warning(
            "judge_probe_failed",
            detail=result.detail,
            advice="bugs reported by this judge are unreliable; use a stronger judge model",
        )
    return {"judge_probe": result, "usage": usage}
