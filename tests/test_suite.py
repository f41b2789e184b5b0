"""``cq2a test``: a saved suite re-run against another SUT with the scripted judge, the verdict
diff, ``--filter-failing``, JUnit XML, and bad suites."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cq2a.app import outputs as out
from cq2a.app.suite import SuiteError, load_suite
from cq2a.cli import describe_sut, main
from cq2a.language.embeddings import MINILM_THRESHOLD
from cq2a.runtime.services import release_services
from cq2a.settings import Settings
from cq2a.testing.scripted_server import ScriptedLLMServer
from evals import reliability_worker as worker

WORKER = "callable:evals.reliability_worker"
COMMON = ["--model", "scripted", "--backend", "compatible", "--no-progress"]


@pytest.fixture(autouse=True)
def fresh_runtimes():
    release_services()
    yield
    release_services()


def ids(path: Path) -> set[str]:
    return {r["test_id"] for r in out.read_jsonl(path)}


def test_a_suite_reruns_against_a_second_sut_and_the_diff_names_exactly_what_changed(
    tmp_path, capsys
):
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(2))
    run_dir, second, recheck = tmp_path / "run", tmp_path / "second", tmp_path / "recheck"
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        live = [*COMMON, "--base-url", server.base_url]
        code = main(
            ["run", str(input_path), "--out", str(run_dir), "--sut", f"{WORKER}:decoding_sut"]
            + [
                "--answers-per-context",
                "2",
                "--questions-per-entity",
                "2",
                "--no-relations",
                "--question-mix",
                "entity=1",
                "--coverage-rounds",
                "0",
            ]
            + ["--no-judge-probe", "--junit", str(tmp_path / "run.xml"), *live]
        )
        assert code == 0
        generated = len(server.requests)
        code = main(
            ["test", str(run_dir), "--out", str(second), "--sut", f"{WORKER}:swapped_sut"]
            + ["--compare", str(run_dir), "--junit", str(tmp_path / "second.xml"), *live]
        )
        assert code == 0
        code = main(
            ["test", str(run_dir), "--out", str(recheck), "--sut", f"{WORKER}:swapped_sut"]
            + ["--filter-failing", str(run_dir), "--fail-on-bugs", "1", *live]
        )
        asked = [json.dumps(r.body) for r in server.requests[generated:]]
    assert code == 0  # every earlier bug is fixed in the second SUT
    assert not any("Target answer" in body for body in asked)  # nothing was generated

    suite = load_suite(run_dir)
    first_bugs, all_tests = ids(run_dir / out.BUGS), {case.id for case in suite}
    assert first_bugs and first_bugs != all_tests  # the first SUT passes some tests
    assert ids(second / out.BUGS) == all_tests - first_bugs
    record = out.read_json(second / out.RUN)
    assert record["kind"] == "test" and record["status"] == "finished"
    # the oracle threshold it applied, the embedding model's default resolved (none was set)
    assert record["settings"]["oracle_threshold"] is None
    assert record["thresholds"] == {"oracle": MINILM_THRESHOLD, "judge": 50}
    assert set(record["diff"]["fixed"]) == first_bugs
    assert set(record["diff"]["newly_failing"]) == all_tests - first_bugs
    assert record["diff"]["still_failing"] == [] and record["diff"]["not_in_previous"] == []
    printed = capsys.readouterr().out
    assert f"{len(first_bugs)} fixed" in printed
    assert f"{len(all_tests - first_bugs)} newly failing" in printed
    assert ids(recheck / out.VERDICTS) == first_bugs and not ids(recheck / out.BUGS)

    for xml_file, bugs in (("run.xml", first_bugs), ("second.xml", all_tests - first_bugs)):
        root = ET.parse(tmp_path / xml_file).getroot()
        (testsuite,) = root.iter("testsuite")
        cases = testsuite.findall("testcase")
        assert int(testsuite.get("tests")) == len(cases) == len(all_tests)
        assert int(testsuite.get("failures")) == len(bugs)
        failed = [c for c in cases if c.find("failure") is not None]
        assert sorted(c.get("name").split(": ")[0] for c in failed) == sorted(bugs)
        for case in failed:
            text = case.find("failure").text
            assert "gold answer:" in text and "SUT answer:" in text and "judge:" in text


def one_context_run(server: ScriptedLLMServer, tmp_path: Path) -> Path:
    """A scripted ``cq2a run`` of one context against ``decoding_sut``: the suite to re-run."""
    input_path = worker.write_input(tmp_path / "in.jsonl", worker.contexts(1))
    code = main(
        ["run", str(input_path), "--out", str(tmp_path / "run"), "--no-relations"]
        + ["--sut", f"{WORKER}:decoding_sut", "--no-judge-probe"]
        + [*COMMON, "--base-url", server.base_url]
    )
    assert code == 0
    return tmp_path / "run"


def test_a_suite_gates_ci_on_its_bugs(tmp_path):
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        live = [*COMMON, "--base-url", server.base_url]
        one_context_run(server, tmp_path)
        bugs = len(out.read_jsonl(tmp_path / "run" / out.BUGS))
        assert bugs
        test = ["test", str(tmp_path / "run"), "--sut", f"{WORKER}:decoding_sut", *live]
        assert main([*test, "--out", str(tmp_path / "a"), "--fail-on-bugs", str(bugs)]) == 1
        assert main([*test, "--out", str(tmp_path / "b"), "--fail-on-bugs", str(bugs + 1)]) == 0
        assert main([*test, "--out", str(tmp_path / "b")]) == 2  # an earlier run is kept


def test_a_bad_suite_line_is_named_and_nothing_is_run(tmp_path, capsys):
    suite = tmp_path / "suite.jsonl"
    suite.write_text('{"id": "a"}\n', encoding="utf-8")
    with pytest.raises(SuiteError, match=r"suite.jsonl:1: not a test case"):
        load_suite(suite)
    assert main(["test", str(suite), "--out", str(tmp_path / "t")]) == 2
    assert "suite.jsonl:1" in capsys.readouterr().err
    assert not (tmp_path / "t" / out.RUN).exists()


def test_a_dead_judge_is_not_a_pass_and_retry_errors_settles_only_what_it_left(tmp_path):
    from cq2a.adapters.llm.local_server import free_port

    test = ["test", str(tmp_path / "run"), "--out", str(tmp_path / "t")]
    test += ["--sut", f"{WORKER}:decoding_sut", *COMMON]
    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        one_context_run(server, tmp_path)
        dead = f"http://127.0.0.1:{free_port()}/v1"
        code = main([*test, "--base-url", dead])
        record = out.read_json(tmp_path / "t" / out.RUN)
        assert code == 3 and record["status"] in ("stopped", "incomplete")
        assert "--retry-errors" in record["message"]
        assert record["counts"]["bugs"] == 0 and (tmp_path / "t" / out.VERDICTS).exists()
        before = len(server.requests)
        assert main([*test, "--base-url", server.base_url, "--retry-errors"]) == 0
        judged_again = len(server.requests) - before
    record = out.read_json(tmp_path / "t" / out.RUN)
    assert record["status"] == "finished"
    assert ids(tmp_path / "t" / out.BUGS) == ids(tmp_path / "run" / out.BUGS)
    assert ids(tmp_path / "t" / out.VERDICTS) == ids(tmp_path / "run" / out.VERDICTS)
    # only the unjudged ones: each its votes, then the median vote's explanation
    assert judged_again == 2 * len(ids(tmp_path / "run" / out.BUGS))


def test_assert_suite_fails_with_the_bug_table_and_passes_within_max_bugs(tmp_path):
    from cq2a.testing.suites import assert_suite

    with ScriptedLLMServer() as server:
        worker.script().install(server.rules)
        one_context_run(server, tmp_path)
        judge = worker.settings_for(server.base_url)
        bugs = out.read_jsonl(tmp_path / "run" / out.BUGS)
        with pytest.raises(AssertionError, match=rf"{len(bugs)} of \d+ tests are bugs") as failed:
            assert_suite(tmp_path / "run", f"{WORKER}:decoding_sut", tmp_path / "a", settings=judge)
        assert all(b["test_id"] in str(failed.value) for b in bugs)
        passed = assert_suite(
            tmp_path / "run",
            f"{WORKER}:decoding_sut",
            tmp_path / "b",
            max_bugs=len(bugs),
            settings=judge,
        )
    assert passed.counts["bugs"] == len(bugs)


def case(test_id: str, question: str = "Which region took its name from the Normans?") -> dict:
    return {
        "id": test_id,
        "context_id": test_id.split(":")[0],
        "context": "The Normans gave their name to Normandy, a region in France.",
        "question": question,
        "answer": "Normandy",
        "kind": "entity-word",
        "sentence": "The Normans gave their name to Normandy, a region in France.",
        "explanation": "The passage names Normandy.",
        "attempts": 1,
        "votes": ["Normandy"] * 5,
        "similarity": 1.0,
    }


def test_an_exported_suite_describes_itself_reads_back_and_merges_without_twins(tmp_path):
    run_a, run_b = tmp_path / "a", tmp_path / "b"
    out.write_jsonl(run_a / out.TEST_CASES, [case("c1:e0:q0"), case("c1:e0:q1")])
    out.write_json(run_a / out.RUN, {"run_id": "r-a", "input": "in.jsonl", "seed": 7})
    out.write_jsonl(run_b / out.TEST_CASES, [case("c1:e0:q1", "A twin?"), case("c2:e0:q0")])
    assert main(["suite", "export", str(run_a), "--to", str(tmp_path / "a.jsonl")]) == 0
    header, *rest = out.read_jsonl(tmp_path / "a.jsonl")
    assert header["format"] == "cq2a-suite" and header["version"] == 1 and header["tests"] == 2
    assert header["sources"][0]["run_id"] == "r-a" and header["sources"][0]["seed"] == 7
    assert [c.id for c in load_suite(tmp_path / "a.jsonl")] == ["c1:e0:q0", "c1:e0:q1"]

    merged = tmp_path / "merged.jsonl"
    assert main(["suite", "merge", str(tmp_path / "a.jsonl"), str(run_b), "--to", str(merged)]) == 0
    cases = load_suite(merged)
    assert [c.id for c in cases] == ["c1:e0:q0", "c1:e0:q1", "c2:e0:q0"]
    assert cases[1].question.startswith("Which region")  # the first of two twins is kept
    assert len(out.read_jsonl(merged)[0]["sources"]) == 2

    future = tmp_path / "future.jsonl"
    future.write_text('{"format": "cq2a-suite", "version": 9}\n', encoding="utf-8")
    with pytest.raises(SuiteError, match="version 9"):
        load_suite(future)


def test_a_run_says_what_it_tests_and_warns_about_the_offline_default_sut():
    default = describe_sut(Settings())
    assert default.startswith("software under test: openai:smollm2-135m-instruct (local server)")
    assert "answers few questions right" in default and "--sut" in default
    mine = describe_sut(Settings().with_overrides(**{"sut.kind": "callable", "sut.model": "m:f"}))
    assert mine == "software under test: callable:m:f"
