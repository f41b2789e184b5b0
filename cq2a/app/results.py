"""The results of a run in its directory: the files of each context as it finishes
(``partial/``), the final files written from the run's state, and run.json."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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


def suite_counts(test_cases: int, verdicts: list[Verdict]) -> dict[str, Any]:
    """The counts run.json keeps of a suite's verdicts (``cq2a run`` and ``cq2a test``)."""
    return {
        "test_cases": test_cases,
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


def bugs_of(cases: list[TestCase], verdicts: Mapping[str, Verdict]) -> list[BugRecord]:
    """The bugs among ``cases``, each with its test's evidence."""
    found = [(verdicts.get(case.id), case) for case in cases]
    return [BugRecord.of(verdict, case) for verdict, case in found if verdict and verdict.bug]


@dataclass
class ResultTally:
    """The counts run.json keeps of a run's work, added up one part at a time."""

    answers: Counter[str] = field(default_factory=Counter)
    candidates: int = 0
    questions_generated: int = 0
    accepted: int = 0
    pending: int = 0
    skipped: int = 0
    relations_failed: int = 0
    candidate_errors: int = 0
    triples_dropped: Counter[str] = field(default_factory=Counter)
    kinds_cut_back: Counter[str] = field(default_factory=Counter)
    rejection_reasons: Counter[str] = field(default_factory=Counter)
    rejected: int = 0
    accepted_by_kind: Counter[str] = field(default_factory=Counter)
    accepted_by_question_kind: Counter[str] = field(default_factory=Counter)

    def add(self, part: Mapping[str, Any], cases: list[TestCase]) -> None:
        candidates: list[Candidate] = part.get("candidates") or []
        answers: list[Answer] = part.get("answers") or []
        plans: list[ContextPlan] = part.get("plans") or []
        skips: list[Skip] = part.get("skipped") or []
        rejected = [c for c in candidates if c.status == "rejected"]
        self.answers.update(a.kind.value for a in answers)
        self.candidates += len(candidates)
        self.questions_generated += sum(a.generated for c in candidates for a in c.attempts)
        self.accepted += len(cases)
        self.rejected += len(rejected)
        self.pending += sum(c.status == "pending" for c in candidates)
        self.skipped += len(skips)
        self.relations_failed += sum(s.reason == "llm_error" for s in skips)
        self.candidate_errors += sum(c.error is not None for c in candidates)
        self.triples_dropped.update(r for plan in plans for r in plan.dropped_triples)
        self.kinds_cut_back.update(kind for plan in plans for kind in plan.cut_back)
        self.rejection_reasons.update(r.value for c in rejected for r in c.reasons)
        self.accepted_by_kind.update(case.kind.value for case in cases)
        self.accepted_by_question_kind.update(case.kind.question_kind for case in cases)

    def counts(self, input_skipped: int) -> dict[str, Any]:
        """The counts, with the input lines the run skipped before any graph."""
        return {
            "skipped": input_skipped + self.skipped,
            "answers": dict(self.answers),
            "candidates": self.candidates,
            "questions_generated": self.questions_generated,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "pending": self.pending,
            "relations_failed": self.relations_failed,
            "triples_dropped": dict(self.triples_dropped),
            "kinds_cut_back": dict(self.kinds_cut_back),
            "llm_errors": self.candidate_errors + self.relations_failed,
            "rejection_reasons": dict(self.rejection_reasons),
            "accepted_by_kind": dict(self.accepted_by_kind),
            "accepted_by_question_kind": dict(self.accepted_by_question_kind),
        }


def thresholds_applied(settings: Settings, languages: Sequence[str] = ()) -> dict[str, Any]:
    """The thresholds the run decided with, the embedding model's defaults resolved; with the
    run's passages' ``languages``, each language's embedder and thresholds too."""
    services = Services(settings)
    applied: dict[str, Any] = {
        "consistency": services.consistency_threshold,
        "oracle": services.oracle_threshold,
        "judge": settings.judge_threshold,
    }
    if languages:
        applied["by_language"] = {
            code: {
                "embedding": speech.embedding_model,
                "consistency": speech.consistency_threshold,
                "oracle": speech.oracle_threshold,
            }
            for code in languages
            for speech in [services.speaking(code)]
        }
    return applied


def languages_of(contexts: Sequence[Context]) -> dict[str, int]:
    """How many of the run's contexts are in each language."""
    return dict(Counter(context.language or "en" for context in contexts))


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
        self,
        parts: Iterable[Mapping[str, Any]],
        verdicts: list[Verdict],
        contexts: list[Context],
        skipped: list[Skip],
        finished: int,
    ) -> dict[str, Any]:
        """Write the final files from the run's work and return the counts for run.json.
        ``parts`` gives the work one piece at a time (a finished context's record, a context
        in flight's state, or a whole-run graph's state), so only the verdicts and the counts
        are ever held whole, however many contexts the run had."""
        passages = {c.id: c for c in contexts}
        by_test = {v.test_id: v for v in verdicts}
        tally = ResultTally()
        names = (out.ANSWERS, out.TEST_CASES, out.BUGS, out.REJECTED, out.PENDING)
        with out.jsonl_files(self.run_dir, *names, out.CANDIDATES, out.SKIPPED) as files:
            files[out.SKIPPED].add(skipped)
            for part in parts:
                candidates: list[Candidate] = part.get("candidates") or []
                cases = test_cases_of(candidates, passages)
                tally.add(part, cases)
                files[out.ANSWERS].add(part.get("answers") or [])
                files[out.TEST_CASES].add(cases)
                files[out.BUGS].add(bugs_of(cases, by_test))
                for status, name in (("rejected", out.REJECTED), ("pending", out.PENDING)):
                    files[name].add(c for c in candidates if c.status == status)
                files[out.CANDIDATES].add(candidates)
                files[out.SKIPPED].add(part.get("skipped") or [])
        out.write_jsonl(self.run_dir / out.VERDICTS, verdicts)
        return {
            "contexts": len(contexts),
            "contexts_finished": finished,
            **tally.counts(len(skipped)),
            **suite_counts(tally.accepted, verdicts),
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
        "languages": languages_of(plan.contexts),
        "thresholds": thresholds_applied(settings, list(languages_of(plan.contexts))),
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
