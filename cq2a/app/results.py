"""The results of a run in its directory: the files of each context as it finishes
(``partial/``), the final files written from the run's state, and run.json."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cq2a.adapters.llm.usage import Usage
from cq2a.app import outputs as out
from cq2a.app.outcome import Outcome
from cq2a.app.rundir import RunPlan, package_versions
from cq2a.models.bugs import BugRecord
from cq2a.models.candidates import test_cases_of
from cq2a.models.records import Answer, Candidate, Context, ContextPlan, Skip, TestCase, Verdict
from cq2a.runtime.services import Services
from cq2a.settings import Settings

#: Where each finished context's candidates go as it finishes, by status; the final files
#: (test_cases.jsonl, rejected.jsonl, pending.jsonl) are rewritten from the whole state.
PARTIAL_BY_STATUS = {
    "accepted": out.ACCEPTED,
    "rejected": out.REJECTED,
    "pending": out.PENDING,
}


def suite_counts(cases: list[TestCase], verdicts: list[Verdict]) -> dict[str, Any]:
    """The counts run.json keeps of a suite's verdicts (``cq2a run`` and ``cq2a test``)."""
    return {
        "test_cases": len(cases),
        "judged": sum(v.stage == "judge" for v in verdicts),
        "unjudged": sum(v.stage == "unjudged" for v in verdicts),
        "judge_low_confidence": sum(v.judge_confident is False for v in verdicts),
        "bugs_by_rule": sum(v.bug and v.stage == "rule" for v in verdicts),
        "sut_inputs_truncated": sum(v.sut_input_truncated for v in verdicts),
        "bugs": sum(v.bug for v in verdicts),
        "bugs_by_kind": dict(Counter(v.kind.value for v in verdicts if v.bug)),
        "bugs_by_question_kind": dict(Counter(v.kind.question_kind for v in verdicts if v.bug)),
        # only for a SUT that retrieves its own passages (cq2a.oracle.attribution)
        "bugs_by_cause": dict(Counter(v.cause for v in verdicts if v.bug and v.cause)),
    }


def thresholds_applied(settings: Settings) -> dict[str, float | int]:
    """The thresholds the run decided with, the embedding model's defaults resolved."""
    services = Services(settings)
    return {
        "consistency": services.consistency_threshold,
        "oracle": services.oracle_threshold,
        "judge": settings.judge_threshold,
    }


@dataclass(frozen=True)
class ResultFiles:
    """The result files of one run directory."""

    run_dir: Path

    def save_context(self, update: dict[str, Any]) -> None:
        """Append one finished context's candidates by status, so a crash loses no finished
        work."""
        candidates: list[Candidate] = update.get("candidates") or []
        for status, name in PARTIAL_BY_STATUS.items():
            chosen = [c for c in candidates if c.status == status]
            out.append_jsonl(self.run_dir / out.PARTIAL / name, chosen)

    def write_verdicts(self, cases: list[TestCase], verdicts: list[Verdict]) -> None:
        """The tests, their verdicts, and the bugs with each test's evidence."""
        case_by_id = {case.id: case for case in cases}
        bugs = [BugRecord.of(v, case_by_id[v.test_id]) for v in verdicts if v.bug]
        out.write_jsonl(self.run_dir / out.TEST_CASES, cases)
        out.write_jsonl(self.run_dir / out.VERDICTS, verdicts)
        out.write_jsonl(self.run_dir / out.BUGS, bugs)

    def write(
        self, values: dict[str, Any], contexts: list[Context], skipped: list[Skip]
    ) -> dict[str, Any]:
        """Write the final files from the run's state and return the counts for run.json."""
        candidates: list[Candidate] = values.get("candidates") or []
        answers: list[Answer] = values.get("answers") or []
        verdicts: list[Verdict] = values.get("verdicts") or []
        plans: list[ContextPlan] = values.get("plans") or []
        graph_skips: list[Skip] = values.get("skipped") or []
        cases = test_cases_of(candidates, {c.id: c for c in contexts})
        rejected = [c for c in candidates if c.status == "rejected"]
        pending = [c for c in candidates if c.status == "pending"]
        out.write_jsonl(self.run_dir / out.ANSWERS, answers)
        self.write_verdicts(cases, verdicts)
        out.write_jsonl(self.run_dir / out.REJECTED, rejected)
        out.write_jsonl(self.run_dir / out.PENDING, pending)
        out.write_jsonl(self.run_dir / out.CANDIDATES, candidates)
        out.write_jsonl(self.run_dir / out.SKIPPED, [*skipped, *graph_skips])
        llm_failed = sum(s.reason == "llm_error" for s in graph_skips)
        return {
            "contexts": len(contexts),
            "contexts_finished": len(values.get("finished") or []),
            "skipped": len(skipped) + len(graph_skips),
            "answers": dict(Counter(a.kind.value for a in answers)),
            "candidates": len(candidates),
            "questions_generated": sum(a.generated for c in candidates for a in c.attempts),
            "accepted": len(cases),
            "rejected": len(rejected),
            "pending": len(pending),
            "relations_failed": llm_failed,
            "triples_dropped": dict(Counter(r for plan in plans for r in plan.dropped_triples)),
            "llm_errors": sum(c.error is not None for c in candidates) + llm_failed,
            "rejection_reasons": dict(Counter(r.value for c in rejected for r in c.reasons)),
            "accepted_by_kind": dict(Counter(case.kind.value for case in cases)),
            "accepted_by_question_kind": dict(Counter(c.kind.question_kind for c in cases)),
            **suite_counts(cases, verdicts),
        }

    def write_record(self, record: dict[str, Any]) -> None:
        out.write_json(self.run_dir / out.RUN, record)


def run_record(
    plan: RunPlan, outcome: Outcome, counts: dict[str, Any], usage: Usage, values: dict[str, Any]
) -> dict[str, Any]:
    """run.json: what ran, with what, how it ended, and what it produced."""
    settings, finished = plan.settings, time.time()
    return {
        "run_id": plan.run_id,
        "status": outcome.status,
        "message": outcome.message,
        "error": outcome.error,
        "input": str(plan.input_path),
        "started": datetime.fromtimestamp(plan.started, UTC).isoformat(),
        "finished": datetime.fromtimestamp(finished, UTC).isoformat(),
        "seconds": round(finished - plan.started, 2),
        "seed": settings.seed,
        "models": {
            "generator": settings.generator.model,
            "reasker": settings.reasker.model,
            "judge": settings.judge.model,
            "sut": f"{settings.sut.kind}:{settings.sut.model}",
            "embedding": settings.embedding_model,
            "parser": settings.parser,
        },
        "versions": package_versions(),
        "settings": settings.public_dump(),
        "thresholds": thresholds_applied(settings),
        "counts": counts,
        "usage": usage_record(usage),
        "judge_probe": _dump(values.get("judge_probe")),
        # the accepted suite's diversity, sentence coverage and question mix (None: no evaluate)
        "figures": _dump(values.get("figures")),
        "skipped": [s.model_dump() for s in plan.skipped],
        "repaired": [{"id": c.id, "note": c.note} for c in plan.contexts if c.note],
    }


def usage_record(usage: Usage) -> dict[str, Any]:
    """What run.json keeps of a run's usage: every count, and the total tokens."""
    return usage.model_dump() | {"total_tokens": usage.total_tokens}


def _dump(value: Any) -> Any:
    return value.model_dump() if isinstance(value, BaseModel) else value
