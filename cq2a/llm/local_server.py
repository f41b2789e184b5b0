"""A llama.cpp OpenAI-compatible server on 127.0.0.1 for the offline chat models.

``get_local_server(model)`` starts ``python -m llama_cpp.server`` (llama-cpp-python 0.3.36) on a
free loopback port for a catalog name or GGUF path, waits until ``GET /v1/models`` answers, and
stops it when the process exits (and, through ``cq2a.llm.orphan_guard``, when the process
dies without cleaning up). A server started elsewhere (``cq2a llm serve``) is reused when
``CQ2A_LOCAL_LLM_URL`` (one URL or several, comma-separated) points at a healthy one that serves
the same model, so ``langgraph dev`` workers need not load the weights again.

The chat template is read from the GGUF (``--chat_format`` is left unset): both catalog models
carry a ChatML template, and llama-cpp-python then formats with it and stops on its EOS token.

What the 0.3.36 server does with the request fields the structured-output client relies on
(checked against both catalog models):

* ``response_format={"type": "json_object", "schema": {...}}`` constrains decoding with a grammar
  built from the schema, so the output parses and has that shape. ``{"type": "json_object"}``
  alone forces some JSON object. Grammar-constrained decoding is about half as fast.
* ``response_format={"type": "json_schema", ...}`` (what ``ChatOpenAI.with_structured_output``
  sends by default) is rejected with HTTP 500 (a request validation error: only ``text`` and
  ``json_object`` are accepted). Send ``json_object`` with ``schema`` instead, e.g. through
  ``ChatOpenAI(model_kwargs={"response_format": ...})``, and parse the text yourself.
* ``max_completion_tokens`` is ignored, and ``ChatOpenAI`` sends its ``max_tokens`` under that
  name: without a cap the server generates until EOS or a full context (minutes). Send the cap
  as ``extra_body={"max_tokens": N}`` too, which the server honours.
* ``n`` is accepted and ignored: ``n=5`` returns one choice. Ask several times instead.
* ``seed`` is honoured: repeating a request with the same seed repeats the text, a different seed
  gives a different sample. The first request of a prompt (nothing cached yet) can differ from
  later ones with the same seed, as evaluating a cached prefix changes the floating-point sums.
* the ``model`` field of a request is ignored (one model per server); ``/v1/models`` lists the
  alias given at start, which is how a server is matched to a model.
* requests are served one at a time; concurrent requests queue. By default a streamed response
  is cut short when another request arrives; the server is started with
  ``--interrupt_requests False`` so concurrent streams complete.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from cq2a.llm.catalog import CATALOG, ensure_model

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
EXTERNAL_URL_ENV = "CQ2A_LOCAL_LLM_URL"
LOG_TAIL_CHARS = 3000


class LocalServerError(RuntimeError):
    """The local model server did not start or stopped answering."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def served_models(base_url: str, timeout_s: float = 2.0) -> list[str] | None:
    """The model ids a server at ``base_url`` (ending in ``/v1``) lists, or None if it is down."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout_s) as response:
            body = json.load(response)
    except (OSError, ValueError):
        return None
    return [str(item.get("id")) for item in body.get("data", [])]


def model_alias(model: str) -> str:
    """The id the server lists for ``model``: the catalog name, else the file's stem."""
    return model if model in CATALOG else Path(model).stem


def _check_loopback(host: str) -> None:
    if host not in LOOPBACK_HOSTS:
        raise ValueError(f"the local model server binds only to loopback, not {host!r}")


class LocalLLMServer:
    """One ``llama_cpp.server`` subprocess serving one GGUF file, or an attached external one."""

    def __init__(
        self,
        model_path: Path | None,
        *,
        alias: str,
        host: str = "127.0.0.1",
        port: int | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        startup_timeout_s: float = 180.0,
        external_url: str | None = None,
    ) -> None:
        _check_loopback(host)
        self.model_path = model_path
        self.alias = alias
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self.startup_timeout_s = startup_timeout_s
        self.external_url = external_url
        self.log_path: Path | None = None
        self._started = False
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    def attach(cls, base_url: str, alias: str) -> LocalLLMServer:
        """Use a server started elsewhere; ``stop`` leaves it running."""
        return cls(None, alias=alias, external_url=base_url.rstrip("/"))

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, e.g. ``http://127.0.0.1:8123/v1``."""
        if self.external_url:
            return self.external_url
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The command line that starts the server."""
        return [
            sys.executable,
            "-m",
            "cq2a.llm.orphan_guard",  # stops the server if cq2a dies without cleaning up
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--model_alias",
            self.alias,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--interrupt_requests",
            "False",
        ]

    def is_running(self) -> bool:
        """Whether the subprocess is alive (an attached server counts as running)."""
        if self.external_url:
            return True
        return self._process is not None and self._process.poll() is None

    def is_healthy(self, timeout_s: float = 2.0) -> bool:
        """Whether ``GET /v1/models`` answers."""
        return served_models(self.base_url, timeout_s) is not None

    def start(self) -> LocalLLMServer:
        """Start the subprocess and wait until it answers; raises ``LocalServerError``."""
        if self.is_running():
            return self
        self.port = self.port or free_port(self.host)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        with tempfile.NamedTemporaryFile(prefix="cq2a-llama-", suffix=".log", delete=False) as log:
            self.log_path = Path(log.name)
            self._process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        atexit.register(self.stop)
        self._wait_until_healthy()
        return self

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                self._fail(f"exited with code {self._process.returncode}")
            if self.alias in (served_models(self.base_url) or []):
                self._started = True
                return
            time.sleep(0.25)
        self._fail(f"did not answer within {self.startup_timeout_s:.0f} s")

    def _fail(self, why: str) -> None:
        self.stop()
        raise LocalServerError(
            f"llama.cpp server for {self.alias} {why}; command: {' '.join(self.command())}\n"
            f"log {self.log_path}:\n{self.log_tail()}"
        )

    def log_tail(self, chars: int = LOG_TAIL_CHARS) -> str:
        """The end of the server's log."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-chars:]

    def stop(self, grace_s: float = 10.0) -> None:
        """Terminate the subprocess, then kill it if it lingers. Idempotent.

        The log is deleted after a server that started cleanly; a failed start keeps it.
        """
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._started and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)

    def wait(self) -> int:
        """Block until the subprocess exits; its exit code."""
        if self._process is None:
            return 0
        return self._process.wait()

    def __enter__(self) -> LocalLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_servers: dict[str, LocalLLMServer] = {}
_servers_lock = threading.Lock()


def find_external_server(model: str) -> LocalLLMServer | None:
    """A healthy server from ``CQ2A_LOCAL_LLM_URL`` that serves ``model``, if any."""
    alias = model_alias(model)
    for url in filter(None, os.environ.get(EXTERNAL_URL_ENV, "").split(",")):
        base_url = url.strip().rstrip("/")
        models = served_models(base_url)
        if models is not None and (alias in models or model in models):
            return LocalLLMServer.attach(base_url, alias)
    return None


def get_local_server(
    model: str, model_dir: str | Path | None = None, n_ctx: int = 4096
) -> LocalLLMServer:
    """The running server for ``model`` in this process, started (or attached) on first use."""
    with _servers_lock:
        server = _servers.get(model)
        if server is not None and server.is_running():
            return server
        server = find_external_server(model)
        if server is None:
            path = ensure_model(model, model_dir)
            server = LocalLLMServer(path, alias=model_alias(model), n_ctx=n_ctx).start()
        _servers[model] = server
        return server


def stop_local_servers() -> None:
    """Stop every server this process started (attached external servers keep running)."""
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.stop()


def serve_forever(
    model: str,
    port: int,
    host: str = "127.0.0.1",
    model_dir: str | Path | None = None,
    n_ctx: int = 4096,
) -> int:
    """Serve ``model`` in the foreground until interrupted (``cq2a llm serve``)."""
    _check_loopback(host)
    path = ensure_model(model, model_dir)
    server = LocalLLMServer(path, alias=model_alias(model), host=host, port=port, n_ctx=n_ctx)
    server.start()
    print(f"serving {server.alias} at {server.base_url}", flush=True)
    print(f"use it from other processes: export {EXTERNAL_URL_ENV}={server.base_url}", flush=True)
    try:
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
