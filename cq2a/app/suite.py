"""Saved suites: the accepted tests of a run, re-run against another version of the software
under test without generating anything (``cq2a test``), and compared with an earlier verdict set.

A suite is a run directory (its ``test_cases.jsonl``) or a JSONL file of test cases. Evaluation
is III-D alone: the SUT answers every test in batches, then the two-stage oracle decides.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from cq2a.adapters.llm.usage import Usage, tally_usage
from cq2a.app import outputs as out
from cq2a.app.outcome import outcome_of_work
from cq2a.app.results import ResultFiles, suite_counts, thresholds_applied, usage_record
from cq2a.app.rundir import RunDirError, package_versions
from cq2a.models.records import BugCause, TestCase, Verdict
from cq2a.runtime.services import release_services, services_for
from cq2a.runtime.steps import evaluate_with
from cq2a.settings import Settings


class SuiteError(ValueError):
    """The suite or a previous directory cannot be read; the message says which line and why."""


#: The first line of an exported suite file says what it is and where its tests come from.
SUITE_FORMAT = "cq2a-suite"
SUITE_VERSION = 1


def suite_header(line: str) -> dict[str, Any] | None:
    """The header of an exported suite, if ``line`` is one."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(record, dict) or record.get("format") != SUITE_FORMAT:
        return None
    return record


def load_suite(path: str | Path) -> list[TestCase]:
    """The test cases of a run directory, its ``test_cases.jsonl``, or an exported suite file,
    in order."""
    return read_suite(path)[1]


def read_suite(path: str | Path) -> tuple[dict[str, Any] | None, list[TestCase]]:
    """An exported suite's header (None for a run's test_cases.jsonl) and its test cases."""
    path = Path(path)
    file = path / out.TEST_CASES if path.is_dir() else path
    if not file.is_file():
        raise SuiteError(f"no suite at {path}: expected a run directory or a {out.TEST_CASES}")
    header = None
    cases = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        if number == 1 and (header := suite_header(line)) is not None:
            if header.get("version") != SUITE_VERSION:
                raise SuiteError(
                    f"{file}: suite version {header.get('version')} is not {SUITE_VERSION}; "
                    "upgrade cq2a to read it"
                )
            continue
        try:
            cases.append(TestCase.model_validate_json(line))
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "line"
            detail = f"{where}: {first['msg']}"
            raise SuiteError(f"{file}:{number}: not a test case ({detail})") from None
    ids = Counter(case.id for case in cases)
    twice = [test_id for test_id, count in ids.items() if count > 1]
    if twice:
        raise SuiteError(f"{file}: test ids occur more than once: {', '.join(twice[:5])}")
    return header, cases


def write_suite(to: str | Path, cases: list[TestCase], sources: list[Any]) -> int:
    """A self-describing suite file: a header line (format, version, where the tests come from),
    then one test case per line."""
    header = {
        "format": SUITE_FORMAT,
        "version": SUITE_VERSION,
        "tests": len(cases),
        "exported": datetime.now(UTC).isoformat(timespec="seconds"),
        "sources": sources,
    }
    out.write_jsonl(Path(to), [header, *cases])
    return len(cases)


def export_suite(run_dir: str | Path, to: str | Path) -> int:
    """Write a run's accepted tests as a suite file that can be committed and reviewed."""
    run_dir = Path(run_dir)
    run_file = run_dir / out.RUN
    run = out.read_json(run_file) if run_file.is_file() else {}
    source = {
        "run_dir": str(run_dir),
        "run_id": run.get("run_id"),
        "input": run.get("input"),
        "models": run.get("models"),
        "seed": run.get("seed"),
        "versions": {"cq2a": (run.get("versions") or {}).get("cq2a")},
    }
    return write_suite(to, load_suite(run_dir), [source])


def merge_suites(suites: list[str | Path], to: str | Path) -> int:
    """One suite of several: the first test of each id is kept, and the sources are listed."""
    cases: dict[str, TestCase] = {}
    sources: list[Any] = []
    for suite in suites:
        header, found = read_suite(suite)
        sources.extend(header.get("sources", []) if header else [{"suite": str(suite)}])
        for case in found:
            cases.setdefault(case.id, case)
    return write_suite(to, list(cases.values()), sources)


def previous_verdicts(previous: str | Path) -> dict[str, Verdict]:
    """The verdicts of an earlier ``cq2a run`` or ``cq2a test`` directory, by test id."""
    file = Path(previous) / out.VERDICTS
    if not file.is_file():
        raise SuiteError(f"no {out.VERDICTS} in {previous}: give a cq2a run or test directory")
    return {v.test_id: v for v in map(Verdict.model_validate, out.read_jsonl(file))}


class VerdictDiff(BaseModel):
    """How this run's verdicts differ from an earlier run's on the same tests, by test id."""

    fixed: list[str]
    still_failing: list[str]
    newly_failing: list[str]
    not_in_previous: list[str]
    #: The cause of each bug this run found, where the SUT named its passages (attribution).
    causes: dict[str, BugCause] = Field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in DIFF_LISTS}

    def by_cause(self, name: Literal["still_failing", "newly_failing"]) -> dict[str, int]:
        """How many of the still or newly failing tests have each cause."""
        return dict(Counter(self.causes[i] for i in getattr(self, name) if i in self.causes))


#: The lists a ``VerdictDiff`` sorts the tests into.
DIFF_LISTS = ("fixed", "still_failing", "newly_failing", "not_in_previous")


def diff_verdicts(before: dict[str, Verdict], after: list[Verdict]) -> VerdictDiff:
    """Fixed (a bug before, none now), still failing, newly failing (regressions), and tests
    the earlier run did not have. An unjudged verdict is neither a bug nor a pass: it is left
    out of fixed and newly failing."""
    diff: dict[str, list[str]] = {name: [] for name in DIFF_LISTS}
    for verdict in after:
        old = before.get(verdict.test_id)
        if old is None:
            diff["not_in_previous"].append(verdict.test_id)
        elif old.bug and verdict.bug:
            diff["still_failing"].append(verdict.test_id)
        elif old.bug and verdict.stage != "unjudged":
            diff["fixed"].append(verdict.test_id)
        elif verdict.bug and old.stage != "unjudged":
            diff["newly_failing"].append(verdict.test_id)
    causes = {v.test_id: v.cause for v in after if v.bug and v.cause is not None}
    return VerdictDiff(**diff, causes=causes)


class SuiteSummary(BaseModel):
    out_dir: str
    status: str
    message: str = ""
    counts: dict[str, Any]
    diff: VerdictDiff | None = None
    usage: Usage
    seconds: float


def retry_state(out_dir: Path) -> tuple[list[TestCase], list[Verdict], Usage]:
    """An earlier ``cq2a test`` directory's tests, the verdicts it settled, and what it spent."""
    run_file = out_dir / out.RUN
    if not run_file.exists() or out.read_json(run_file).get("kind") != "test":
        raise RunDirError(f"nothing to retry in {out_dir}: it holds no cq2a test run")
    record = out.read_json(run_file)
    settled = [v for v in previous_verdicts(out_dir).values() if v.stage != "unjudged"]
    spent = {k: v for k, v in (record.get("usage") or {}).items() if k in Usage.model_fields}
    return load_suite(out_dir), settled, Usage(**spent)


def run_suite(
    suite: str | Path,
    out_dir: str | Path,
    settings: Settings,
    *,
    filter_failing: str | Path | None = None,
    compare: str | Path | None = None,
    force: bool = False,
    retry_errors: bool = False,
) -> SuiteSummary:
    """Run the SUT and the oracle over a saved suite; every outcome leaves verdicts, bugs and
    run.json in ``out_dir``.

    ``filter_failing``: only the tests that were bugs in that earlier directory. ``compare``:
    the verdicts are diffed with that directory's (fixed, still failing, newly failing).
    ``retry_errors``: ``out_dir`` holds an earlier ``cq2a test`` of these tests; only those it
    left without a verdict (a stop, a failure) or unjudged run again."""
    started = time.time()
    out_dir = Path(out_dir)
    run_file = out_dir / out.RUN
    kept: list[Verdict] = []
    spent = Usage()
    if retry_errors:
        cases, kept, spent = retry_state(out_dir)
    else:
        if run_file.exists() and not force:
            raise RunDirError(
                f"{out_dir} holds an earlier run; choose another --out, pass --force, or "
                "--retry-errors to re-run only its tests without a verdict"
            )
        cases = load_suite(suite)
        if filter_failing is not None:
            failing = {i for i, v in previous_verdicts(filter_failing).items() if v.bug}
            cases = [case for case in cases if case.id in failing]
    before = previous_verdicts(compare) if compare is not None else None
    out_dir.mkdir(parents=True, exist_ok=True)
    done = {v.test_id for v in kept}
    todo = [case for case in cases if case.id not in done]
    if settings.cache_path is None:
        settings = settings.model_copy(update={"cache_path": str(out_dir / out.LLM_CACHE)})
    run_key = "suite:" + hashlib.sha256(str(out_dir.resolve()).encode()).hexdigest()[:12]
    release_services()
    verdicts: list[Verdict] = []
    again = "run the same command with --retry-errors"
    try:
        with outcome_of_work() as outcome, tally_usage() as tally:
            verdicts = evaluate_with(services_for(settings, run_key), todo)
    finally:
        release_services(run_key)
    status, message, error = outcome.status, outcome.message, outcome.error
    if status == "stopped":
        message = f"{message}; once fixed, {again}"
    elif status == "failed":
        message = f"{message}; after a fix, {again}"
    by_id = {v.test_id: v for v in [*kept, *verdicts]}
    verdicts = [by_id[case.id] for case in cases if case.id in by_id]
    usage = spent + tally.total
    counts = suite_counts(len(cases), verdicts)
    if status == "finished" and counts["unjudged"]:
        status = "incomplete"
        why = "the judge gave no verdict, or the SUT failed the query"
        message = f"{counts['unjudged']} verdicts are unjudged ({why}); {again}"
    ResultFiles(out_dir).write_verdicts(cases, verdicts)
    diff = diff_verdicts(before, verdicts) if before is not None and verdicts else None
    finished = time.time()
    record = {
        "kind": "test",
        "status": status,
        "message": message,
        "error": error,
        "suite": str(suite),
        "filter_failing": str(filter_failing) if filter_failing is not None else None,
        "compare": str(compare) if compare is not None else None,
        "seconds": round(finished - started, 2),
        "models": {
            "judge": settings.judge.model,
            "sut": f"{settings.sut.kind}:{settings.sut.model}",
            "embedding": settings.embedding_model,
        },
        "versions": package_versions(),
        "settings": settings.public_dump(),
        # a suite run applies the oracle's thresholds only (no consistency step)
        "thresholds": {
            stage: value
            for stage, value in thresholds_applied(settings).items()
            if stage != "consistency"
        },
        "counts": counts,
        "diff": diff.model_dump() if diff else None,
        "usage": usage_record(usage),
    }
    out.write_json(run_file, record)
    return SuiteSummary(
        out_dir=str(out_dir),
        status=status,
        message=message,
        counts=counts,
        diff=diff,
        usage=usage,
        seconds=record["seconds"],
    )
