"""The ``cq2a`` command line: run, demo, test, suite export|merge, estimate, extract, report,
doctor, llm serve|fetch. ``arguments`` declares the flags, ``options`` turns them into settings,
``commands`` runs each command and says its exit code."""

from __future__ import annotations

from pathlib import Path

from cq2a.cli.arguments import build_parser
from cq2a.cli.commands import (
    EXIT_USAGE,
    command_doctor,
    command_estimate,
    command_extract,
    command_llm,
    command_report,
    command_run,
    command_suite,
    command_test,
)
from cq2a.cli.options import DEMO_OUT, demo_input, demo_settings, describe_sut, settings_from_args

__all__ = ["build_parser", "demo_input", "describe_sut", "main", "settings_from_args"]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        return command_run(args, Path(args.input))
    if args.command == "demo":
        if args.rag and args.out == DEMO_OUT:
            args.out = f"{DEMO_OUT}-rag"  # a run directory holds one run's settings
        source = Path(args.input) if args.input else demo_input()
        return command_run(args, source, demo_settings(rag=args.rag))
    commands = {
        "test": command_test,
        "suite": command_suite,
        "estimate": command_estimate,
        "extract": command_extract,
        "doctor": command_doctor,
        "report": command_report,
        "llm": command_llm,
    }
    command = commands.get(args.command)
    return EXIT_USAGE if command is None else command(args)
