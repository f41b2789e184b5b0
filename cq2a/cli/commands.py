"""The ``cq2a`` commands: each reads its parsed flags, calls the application, prints what it
did and returns the exit code."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cq2a.adapters.llm.catalog import ensure_model
from cq2a.adapters.llm.local_server import serve_forever
from cq2a.app.doctor import run_doctor
from cq2a.app.inputs import InputError, read_contexts
from cq2a.app.progress import RunProgress
from cq2a.cli.options import demo_settings, describe_sut, settings_from_args
from cq2a.language.parsing import get_parser
from cq2a.reporting.report import write_report
from cq2a.settings import DEFAULT_LOCAL_MODEL, Settings

if TYPE_CHECKING:
    from cq2a.app.run import RunSummary
    from cq2a.app.suite import SuiteSummary

EXIT_OK, EXIT_BUGS, EXIT_USAGE, EXIT_STOPPED, EXIT_FAILED = 0, 1, 2, 3, 4


def command_run(args: argparse.Namespace, input_path: Path, base: Settings | None = None) -> int:
    from cq2a.app.backend import Backend
    from cq2a.app.run import RunDirError, run_pipeline  # defers langgraph to the run

    settings = settings_from_args(args, base)
    print(describe_sut(settings), flush=True)
    progress = RunProgress(enabled=not args.no_progress, follow=args.follow)
    try:
        backend = Backend(
            engine=args.engine,
            store=args.store,
            ray_address=args.ray_address,
            ray_actors=args.ray_actors,
        )
        with progress:
            summary = run_pipeline(
                input_path,
                args.out,
                settings,
                limit=args.limit,
                resume=args.resume,
                retry_errors=args.retry_errors,
                force=args.force,
                on_event=progress.handle,
                backend=backend,
            )
    except (RunDirError, ValueError, OSError) as error:
        print(f"cq2a: {error}", file=sys.stderr)
        return EXIT_USAGE
    counts = summary.counts
    print(
        f"{summary.status}: {counts['contexts']} contexts, {counts['accepted']} test cases, "
        f"{counts['bugs']} bugs, {summary.usage.total_tokens} tokens, "
        f"{summary.seconds:.0f}s -> {summary.run_dir}"
    )
    print_causes(counts)
    return finish(args, summary, summary.run_dir, f"cq2a run {input_path}")


def finish(
    args: argparse.Namespace, summary: RunSummary | SuiteSummary, out_dir: str, name: str
) -> int:
    """The end of ``run`` and ``test``: the outcome's message, the JUnit file, the exit code."""
    if summary.message:
        print(f"cq2a: {summary.message}", file=sys.stderr)
    if args.junit:
        from cq2a.reporting.junit import write_junit  # defers langchain to the runs that need it

        write_junit(args.junit, out_dir, name, summary.seconds)
    if summary.status == "failed":
        return EXIT_FAILED
    if summary.status != "finished":
        return EXIT_STOPPED
    return exit_code_for_bugs(summary.counts["bugs"], summary.counts["test_cases"], args)


def command_test(args: argparse.Namespace) -> int:
    # deferred: langgraph and langchain are loaded only by the commands that run a suite
    from cq2a.app.run import RunDirError
    from cq2a.app.suite import run_suite

    settings = settings_from_args(args)
    try:
        summary = run_suite(
            args.suite,
            args.out,
            settings,
            filter_failing=args.filter_failing,
            compare=args.compare,
            force=args.force,
            retry_errors=args.retry_errors,
        )
    except (RunDirError, ValueError, OSError) as error:
        print(f"cq2a: {error}", file=sys.stderr)
        return EXIT_USAGE
    counts = summary.counts
    print(
        f"{summary.status}: {counts['test_cases']} tests, {counts['bugs']} bugs, "
        f"{counts['unjudged']} unjudged, {summary.usage.total_tokens} tokens, "
        f"{summary.seconds:.0f}s -> {summary.out_dir}"
    )
    print_causes(counts)
    if summary.diff is not None:
        diff = summary.diff
        print(
            f"compared with {args.compare}: {len(diff.fixed)} fixed, "
            f"{len(diff.still_failing)} still failing, {len(diff.newly_failing)} newly failing, "
            f"{len(diff.not_in_previous)} not in it"
        )
        for name in ("still_failing", "newly_failing"):
            if by_cause := diff.by_cause(name):
                print(f"  {name.replace('_', ' ')} by cause: {cause_counts(by_cause)}")
        for test_id in diff.newly_failing:
            cause = f" ({diff.causes[test_id]})" if test_id in diff.causes else ""
            print(f"  newly failing: {test_id}{cause}")
    return finish(args, summary, summary.out_dir, f"cq2a test {args.suite}")


def cause_counts(by_cause: dict[str, int]) -> str:
    causes = sorted(by_cause.items())
    return ", ".join(f"{count} {cause.replace('_', ' ')}" for cause, count in causes)


def print_causes(counts: dict[str, Any]) -> None:
    """The bugs by cause, for a SUT that retrieves its own passages."""
    if by_cause := counts.get("bugs_by_cause"):
        print(f"bugs by cause: {cause_counts(by_cause)}")


def exit_code_for_bugs(bugs: int, cases: int, args: argparse.Namespace) -> int:
    if args.fail_on_bugs is not None and bugs >= args.fail_on_bugs:
        return EXIT_BUGS
    rate = bugs / cases if cases else 0.0
    if args.fail_on_bug_rate is not None and rate > args.fail_on_bug_rate:
        return EXIT_BUGS
    return EXIT_OK


def command_suite(args: argparse.Namespace) -> int:
    from cq2a.app.suite import export_suite, merge_suites  # defers langchain to this command

    try:
        if args.suite_command == "export":
            count = export_suite(args.run_dir, args.to)
        else:
            count = merge_suites(args.suites, args.to)
    except (ValueError, OSError) as error:
        print(f"cq2a: {error}", file=sys.stderr)
        return EXIT_USAGE
    print(f"wrote {count} tests to {args.to}")
    return EXIT_OK


def command_estimate(args: argparse.Namespace) -> int:
    from cq2a.app.estimate import Rates, estimate_run  # defers langchain to this command

    settings = settings_from_args(args, demo_settings() if args.demo else None)
    try:
        rates = Rates.from_run(args.from_run) if args.from_run else Rates()
        figures = estimate_run(args.input, settings, rates, args.limit)
    except (ValueError, OSError, KeyError) as error:
        print(f"cq2a: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(figures, indent=2))
        return EXIT_OK
    print(
        f"{figures['contexts']} contexts, {figures['answers']} answers, "
        f"{figures['question_slots']} question slots, about {figures['expected_tests']} tests "
        f"(rates: {rates.source})"
    )
    print(f"{'stage':<10}{'requests':>10}{'prompt':>12}{'completion':>12}")
    for name, stage in [*figures["stages"].items(), ("total", figures["total"])]:
        print(
            f"{name:<10}{stage['requests']:>10}{stage['prompt_tokens']:>12}"
            f"{stage['completion_tokens']:>12}"
        )
    print(f"total tokens {figures['total']['total_tokens']}, cost {figures['cost']:.4f}")
    return EXIT_OK


def command_extract(args: argparse.Namespace) -> int:
    from cq2a.answers.plan import select_entities  # defers langchain to this command

    languages = {"language": args.language, "languages": (args.languages or "").split(",")}
    settings = Settings().with_overrides(**{k: v for k, v in languages.items() if v and v != [""]})
    backend = args.parser or settings.parser
    try:
        contexts, skipped = read_contexts(
            args.input,
            settings.max_context_chars,
            settings.passage_chars,
            settings.input_languages(),
        )
    except InputError as error:
        print(f"cq2a: {error}", file=sys.stderr)
        return EXIT_USAGE
    for skip in skipped:
        print(json.dumps({"skipped": skip.model_dump()}), file=sys.stderr)
    for context in contexts[: args.limit]:
        parsed = get_parser(backend, context.language or "en").parse(context)
        answers = select_entities(parsed, context, settings.answers, settings.answers_per_context)
        for answer in answers:
            print(answer.model_dump_json(include={"id", "kind", "text", "sentence_index"}))
    return EXIT_OK


def command_llm(args: argparse.Namespace) -> int:
    if args.llm_command == "fetch":
        print(ensure_model(args.model))
        return EXIT_OK
    slots = args.slots or Settings().local_slots
    serve_forever(args.model or DEFAULT_LOCAL_MODEL, args.port, slots=slots)
    return EXIT_OK


def command_doctor(args: argparse.Namespace) -> int:
    return run_doctor(as_json=args.json)


def command_report(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    path = write_report(Path(args.run_dir))
    print(f"wrote {path} in {time.perf_counter() - started:.1f}s")
    return EXIT_OK
