"""The scale-out tests' services (cq2a/testing/services.py: a throwaway PostgreSQL, a loopback-only
network namespace for Ray), as pytest sees them.

Where a service cannot start, a test skips with the command that fixes it, except under CI
(the `CI` environment variable), where it fails: CI must not pass with these tests skipped.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import NoReturn

import pytest

from cq2a.testing import services
from cq2a.testing.services import Postgres, ServiceUnavailable

__all__ = ["Postgres", "run_in_loopback_namespace", "running_postgres", "unavailable"]


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail under CI, where a test that needs a service must run."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this fails instead of skipping)", pytrace=False)
    pytest.skip(reason)


@contextmanager
def running_postgres() -> Iterator[Postgres]:
    """A throwaway cluster with the database `cq2a_test`, or a skip (a failure under CI)."""
    with ExitStack() as stack:
        try:
            cluster = stack.enter_context(services.running_postgres())
        except ServiceUnavailable as missing:
            unavailable(str(missing))
        yield cluster


def run_in_loopback_namespace(
    argv: Sequence[str], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `argv` in a new network namespace whose only interface is loopback, up."""
    try:
        return services.run_in_loopback_namespace(argv, timeout, env)
    except ServiceUnavailable as missing:
        unavailable(str(missing))
