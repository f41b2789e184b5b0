"""Gate a repository's own tests on a cq2a suite::

    from cq2a.testing.suites import assert_suite

    def test_qa_model_passes_the_suite(tmp_path):
        assert_suite("tests/qa_suite.jsonl", "callable:mypkg.qa:answer", tmp_path)

The judge is the one the settings (``CQ2A_JUDGE__*``) name.
"""

from __future__ import annotations

from pathlib import Path

from cq2a.app import outputs as out
from cq2a.app.suite import SuiteSummary, run_suite
from cq2a.settings import Settings


def bug_table(out_dir: str | Path, limit: int = 20) -> str:
    """The bugs of a test directory, one line each: id, question, gold and SUT answers."""
    bugs = out.read_jsonl(Path(out_dir) / out.BUGS)
    lines = [
        f"  {b['test_id']}: {b['question']!r} gold {b['gold_answer']!r}, SUT {b['sut_answer']!r}"
        for b in bugs[:limit]
    ]
    if len(bugs) > limit:
        lines.append(f"  ... and {len(bugs) - limit} more in {Path(out_dir) / out.BUGS}")
    return "\n".join(lines)


def assert_suite(
    suite: str | Path,
    sut: str,
    out_dir: str | Path,
    *,
    max_bugs: int = 0,
    settings: Settings | None = None,
) -> SuiteSummary:
    """Run the SUT (``KIND:MODEL``) over the suite and fail with the bug table when it has more
    than ``max_bugs`` bugs, or when the run could not judge every test."""
    kind, _, model = sut.partition(":")
    overrides = {"sut.kind": kind} | ({"sut.model": model} if model else {})
    settings = (settings or Settings()).with_overrides(**overrides)
    summary = run_suite(suite, out_dir, settings, force=True)
    if summary.status != "finished":
        raise AssertionError(f"the suite did not finish ({summary.status}): {summary.message}")
    bugs = summary.counts["bugs"]
    if bugs > max_bugs:
        raise AssertionError(
            f"{bugs} of {summary.counts['test_cases']} tests are bugs (at most {max_bugs} "
            f"allowed):\n{bug_table(out_dir)}"
        )
    return summary
