"""``cq2a report`` at scale: the page's size, wall time and peak memory over synthetic runs.

    python -m evals.report_scale --contexts 1000,10000 --json evals/results/report_scale.json
    python -m evals.report_scale --contexts 100             # a quick check
    python -m evals.report_scale --contexts 1000 --source /tmp/old   # another checkout's cq2a

Per size, a run directory of N contexts is written straight from the record models (no LLM, no
pipeline): each context a passage of about 680 characters (eight sentences, two naming the
context's number), three extracted answers with one accepted test each, one rejected slot (a leaking
question), three verdicts of which one is a bug, and run.json with the suite figures a run
records (mix and per-context sentence coverage). Then one ``cq2a report RUN_DIR`` subprocess;
measured: its wall seconds, its peak RSS (``wait4``'s ``ru_maxrss``), the bytes of
``report.html`` and of each file written beside it. ``--source DIR`` runs the report with
``DIR`` first on ``PYTHONPATH`` (e.g. ``git archive OLD cq2a | tar -x -C DIR``), to compare with
the code of another commit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cq2a.app import outputs as out
from cq2a.coverage.diversity import suite_figures
from cq2a.models.bugs import BugRecord
from cq2a.models.records import (
    Answer,
    AnswerKind,
    Attempt,
    Candidate,
    CheckResult,
    ContextPlan,
    Evidence,
    RejectReason,
    TestCase,
    Verdict,
)
from evals.scale import git_commit

REPO = Path(__file__).resolve().parents[1]
#: The passage's sentences; ``{n}`` is the context's number, so no two passages are alike.
SENTENCES = [
    "The river town of Alderbrook {n} was founded by settlers from the northern valleys.",
    "Its first mayor, Helena Marsh, built a stone bridge across the river in the spring.",
    "Trade in wool and timber made the town prosperous for more than two hundred years.",
    "A great flood in the winter destroyed the mills, and many families moved to the coast.",
    "The railway reached Alderbrook {n} much later and brought tourists to the old quarter.",
    "Today the town museum keeps the mayor's letters and a model of the original bridge.",
    "Visitors often walk along the riverbank to the ruins of the mills below the hills.",
    "Each summer the old quarter holds a market where farmers sell cheese, honey and cloth.",
]
#: (answer text, sentence number, kind, question) of each context's three tests.
TARGETS = [
    ("Helena Marsh", 1, "entity-phrase", "Who was the first mayor of Alderbrook {n}?"),
    ("wool and timber", 2, "noun-chunk", "What trade made Alderbrook {n} prosperous?"),
    ("The railway", 4, "noun-chunk", "What brought tourists to Alderbrook {n}?"),
]


class SizeResult(BaseModel):
    contexts: int
    tests: int
    bugs: int
    write_s: float
    wall_s: float
    peak_rss_mb: float
    report_bytes: int
    run_dir_input_bytes: int
    files: dict[str, int]


def passage(n: int) -> tuple[str, list[tuple[int, int]]]:
    """Context ``n``'s text and its sentences' spans."""
    sentences = [s.format(n=n) for s in SENTENCES]
    spans, at = [], 0
    for sentence in sentences:
        spans.append((at, at + len(sentence)))
        at += len(sentence) + 1
    return " ".join(sentences), spans


def context_records(n: int) -> tuple[list[Answer], list[TestCase], Candidate, list[Verdict]]:
    """One context's answers, accepted tests, rejected slot and verdicts (the first a bug)."""
    context_id = f"ctx-{n:06d}"
    text, spans = passage(n)
    answers, cases, verdicts = [], [], []
    for slot, (target, index, kind, question) in enumerate(TARGETS):
        sentence = text[spans[index][0] : spans[index][1]]
        start = text.index(target)
        answer = Answer(
            id=f"{context_id}:a{slot}",
            context_id=context_id,
            kind=AnswerKind(kind),
            text=target,
            sentence=sentence,
            sentence_index=index,
            start=start,
            end=start + len(target),
        )
        case = TestCase(
            id=f"{answer.id}:q0",
            context_id=context_id,
            context=text,
            question=question.format(n=n),
            answer=target,
            kind=answer.kind,
            sentence=sentence,
            start=answer.start,
            end=answer.end,
            explanation="The sentence names it.",
            attempts=1,
            votes=[target] * 5,
            similarity=0.95,
            evidence=[Evidence(start=spans[index][0], end=spans[index][1], text=sentence)],
        )
        bug = slot == 0
        verdicts.append(
            Verdict(
                test_id=case.id,
                context_id=context_id,
                question=case.question,
                gold_answer=target,
                sut_answer="the settlers" if bug else target,
                similarity=0.12 if bug else 1.0,
                stage="judge" if bug else "similarity",
                judge_score=10 if bug else None,
                judge_explanation="The answer names other people." if bug else None,
                bug=bug,
                kind=case.kind,
            )
        )
        answers.append(answer)
        cases.append(case)
    attempt = Attempt(
        number=1,
        question=f"Who was Helena Marsh of Alderbrook {n}?",
        explanation="x",
        checks=[CheckResult(name="leak", passed=False)],
        reasons=[RejectReason.LEAK],
    )
    rejected = Candidate(
        id=f"{answers[0].id}:q1",
        context_id=context_id,
        answer=answers[0],
        slot=1,
        attempts=[attempt],
        status="rejected",
    )
    return answers, cases, rejected, verdicts


def accepted_slot(case: TestCase, answer: Answer) -> Candidate:
    """The candidate record of an accepted test, as ``candidates.jsonl`` holds it."""
    attempt = Attempt(
        number=1,
        question=case.question,
        explanation=case.explanation,
        checks=[CheckResult(name="leak", passed=True)],
        votes=case.votes,
        majority_answer=case.answer,
        majority_count=len(case.votes),
        similarity=case.similarity,
    )
    return Candidate(
        id=case.id,
        context_id=case.context_id,
        answer=answer,
        slot=0,
        attempts=[attempt],
        status="accepted",
    )


class Writers:
    """The run's JSONL files, each written a line at a time."""

    NAMES = (out.ANSWERS, out.TEST_CASES, out.CANDIDATES, out.REJECTED, out.VERDICTS, out.BUGS)

    def __init__(self, run_dir: Path) -> None:
        self.handles = {name: (run_dir / name).open("w", encoding="utf-8") for name in self.NAMES}

    def write(self, name: str, record: BaseModel) -> None:
        self.handles[name].write(record.model_dump_json() + "\n")

    def close(self) -> None:
        for handle in self.handles.values():
            handle.close()


def write_context(writers: Writers, n: int) -> tuple[list[TestCase], ContextPlan]:
    """Write context ``n``'s records; its tests and plan go to the suite figures."""
    answers, cases, rejected, verdicts = context_records(n)
    for answer, case, verdict in zip(answers, cases, verdicts, strict=True):
        writers.write(out.ANSWERS, answer)
        writers.write(out.TEST_CASES, case)
        writers.write(out.CANDIDATES, accepted_slot(case, answer))
        writers.write(out.VERDICTS, verdict)
        if verdict.bug:
            writers.write(out.BUGS, BugRecord.of(verdict, case))
    writers.write(out.CANDIDATES, rejected)
    writers.write(out.REJECTED, rejected)
    return cases, ContextPlan(id=cases[0].context_id, sentence_spans=passage(n)[1])


def contexts_written(run_dir: Path, count: int) -> Iterator[tuple[list[TestCase], ContextPlan]]:
    writers = Writers(run_dir)
    try:
        for n in range(count):
            yield write_context(writers, n)
    finally:
        writers.close()


def write_run_dir(run_dir: Path, count: int) -> None:
    """A finished run of ``count`` contexts: its JSONL files and run.json with suite figures."""
    run_dir.mkdir(parents=True, exist_ok=True)
    cases: list[TestCase] = []
    plans: list[ContextPlan] = []
    for context_cases, plan in contexts_written(run_dir, count):
        cases += context_cases
        plans.append(plan)
    out.write_jsonl(run_dir / out.SKIPPED, [])
    figures = suite_figures(cases, plans, {"entity": 0.8, "yesno": 0.2})
    out.write_json(
        run_dir / out.RUN,
        {
            "run_id": f"scale-{count}",
            "status": "finished",
            "seconds": 60.0,
            "seed": 0,
            "counts": {"contexts": count},
            "usage": {"total_tokens": 1000 * count},
            "settings": {"judge_threshold": 50},
            "judge_probe": {"passed": True, "detail": "ok"},
            "figures": figures.model_dump(),
        },
    )


def directory_bytes(run_dir: Path) -> dict[str, int]:
    return {path.name: path.stat().st_size for path in sorted(run_dir.iterdir()) if path.is_file()}


def measure(work: Path, count: int, source: Path | None = None) -> SizeResult:
    """Write a run of ``count`` contexts, then time one ``cq2a report`` subprocess on it."""
    run_dir = work / f"run_{count}"
    started = time.perf_counter()
    write_run_dir(run_dir, count)
    write_s = time.perf_counter() - started
    inputs = sum(directory_bytes(run_dir).values())
    command = [sys.executable, "-m", "cq2a.cli", "report", str(run_dir.resolve())]
    log = (work / f"report_{count}.log").open("wb")
    started = time.perf_counter()
    environment = os.environ | ({"PYTHONPATH": str(source)} if source else {})
    # Run from the work folder: ``-m`` puts the working directory first on sys.path.
    child = subprocess.Popen(command, cwd=work, env=environment, stdout=log, stderr=log)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    log.close()
    if os.waitstatus_to_exitcode(status) != 0:
        tail = (work / f"report_{count}.log").read_text(encoding="utf-8", errors="replace")
        raise RuntimeError(f"cq2a report failed:\n{tail[-2000:]}")
    files = directory_bytes(run_dir)
    return SizeResult(
        contexts=count,
        tests=3 * count,
        bugs=count,
        write_s=round(write_s, 2),
        wall_s=round(wall, 2),
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),  # kilobytes on Linux
        report_bytes=files.get("report.html", 0),
        run_dir_input_bytes=inputs,
        files=files,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", default="1000,100000", help="sizes, comma-separated")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--source", type=Path, default=None, help="cq2a's code from this folder")
    parser.add_argument("--keep", type=Path, default=None, help="keep the run directories here")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="cq2a-report-scale-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for count in [int(size) for size in args.contexts.split(",")]:
            results.append(measure(work, count, args.source))
            row = results[-1]
            print(
                f"{count} contexts: report {row.wall_s} s, peak RSS {row.peak_rss_mb} MB, "
                f"report.html {row.report_bytes:,} bytes (run written in {row.write_s} s)",
                file=sys.stderr,
            )
    payload: dict[str, Any] = {
        "commit": git_commit(),
        "source": str(args.source or REPO),
        "cpus": os.cpu_count(),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "results": [item.model_dump() for item in results],
    }
    print(json.dumps(payload, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
