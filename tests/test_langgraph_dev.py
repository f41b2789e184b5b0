"""`langgraph dev` serves the graph: a run streamed through langgraph_sdk, LLMs scripted."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from cq2a.testing.script import PipelineScript
from cq2a.testing.scripted_server import ScriptedLLMServer

REPO = Path(__file__).resolve().parents[1]
LANGGRAPH = Path(sys.executable).with_name("langgraph")
ANSWER = "Charles III"  # the first answer of the default set: a name
CONTEXT = {
    "id": "normans",
    "context": "Rollo signed a treaty with King Charles III of West Francia in 911.",
}
QUESTION = "Which Frankish ruler did Rollo make an agreement with in 911?"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, process: subprocess.Popen, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"langgraph dev exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"langgraph dev did not answer at {url} within {timeout_s}s")


def scripted_env(base_url: str) -> dict[str, str]:
    env = dict(os.environ, LANGGRAPH_CLI_NO_ANALYTICS="1", HF_HUB_OFFLINE="1")
    for role in ("GENERATOR", "REASKER", "JUDGE", "SUT"):
        env[f"CQ2A_{role}__BACKEND"] = "compatible"
        env[f"CQ2A_{role}__BASE_URL"] = base_url
        env[f"CQ2A_{role}__MODEL"] = "scripted"
    env.update(
        CQ2A_SUT__KIND="openai",
        CQ2A_RELATIONS="false",
        CQ2A_QUESTION_MIX="entity=1",
        CQ2A_COVERAGE_ROUNDS="0",
        CQ2A_ANSWERS_PER_CONTEXT="1",
        CQ2A_QUESTIONS_PER_ENTITY="1",
        CQ2A_PROBE_JUDGE="false",
        CQ2A_CACHE_PATH="off",
    )
    return env


async def stream_one_run(url: str) -> tuple[list[dict], dict]:
    from langgraph_sdk import get_client

    client = get_client(url=url)
    thread = await client.threads.create()
    events = []
    async for part in client.runs.stream(
        thread["thread_id"],
        "cq2a",
        input={"contexts": [CONTEXT]},
        stream_mode=["custom", "values"],
        stream_subgraphs=True,
    ):
        if part.event.startswith("custom"):
            events.append(part.data)
        if part.event == "error":
            raise AssertionError(f"run failed: {part.data}")
    state = await client.threads.get_state(thread["thread_id"])
    return events, state["values"]


@pytest.mark.skipif(not LANGGRAPH.exists(), reason="langgraph-cli[inmem] is not installed")
def test_langgraph_dev_streams_a_run_through_the_sdk(tmp_path):
    script = PipelineScript(
        questions=lambda answer, fb: [{"question": QUESTION, "explanation": f"It is {answer}."}],
        votes=lambda q: [ANSWER] * 5,
        sut=lambda question: "England",
        judge=lambda gold, sut: 3,
    )
    with ScriptedLLMServer() as server:
        script.install(server.rules)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = (tmp_path / "langgraph_dev.log").open("w")
        process = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(port)],
            cwd=REPO,
            env=scripted_env(server.base_url),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_until_up(url, process)
            events, values = asyncio.run(stream_one_run(url))
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()
            shutil.rmtree(REPO / ".langgraph_api", ignore_errors=True)

    names = [event.get("event") for event in events]
    assert "stage_finished" in names and "context_finished" in names
    assert {e.get("stage") for e in events if e.get("event") == "stage_finished"} >= {
        "extract",
        "generate",
        "reask",
        "evaluate",
    }
    (candidate,) = values["candidates"]
    assert candidate["status"] == "accepted"
    (verdict,) = values["verdicts"]
    assert verdict["sut_answer"] == "England" and verdict["bug"] is True
    assert verdict["judge_score"] == 3
