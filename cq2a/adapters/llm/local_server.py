"""llama.cpp's native server (``llama-server``) on 127.0.0.1 for the offline chat models.

``get_local_server(model)`` starts ``llama-server`` (built by scripts/install_llama_cpp.sh from
the llama.cpp tree that llama-cpp-python 0.3.36 vendors) on a free loopback port for a catalog
name or GGUF path, with ``--parallel`` slots, waits until ``GET /v1/models`` lists the model, and
stops it when the process exits (and, through ``cq2a.adapters.llm.orphan_guard``, when the process
dies
without cleaning up). A server started elsewhere (``cq2a llm serve``) is reused when
``CQ2A_LOCAL_LLM_URL`` (one URL or several, comma-separated) points at a healthy one that serves
the same model, so ``langgraph dev`` workers need not load the weights again; its slots are read
from ``GET /props``.

What this server does with the request fields cq2a relies on (checked in its source,
tools/server/server-schema.cpp and server-common.cpp, and against both catalog models):

* ``--parallel N`` gives N slots decoded together in one batch (continuous batching); requests
  beyond N wait in the server's queue. Each slot gets ``--ctx-size / N`` tokens, so the server is
  started with ``n_ctx * N``.
* ``n`` (alias of ``n_cmpl``, 1 <= n <= N) returns n choices from one request: the prompt is
  processed once and shared, and child choices get seeds ``seed + 1``, ``seed + 2``...
  A larger ``n`` is a request error, so clients send at most ``slots`` choices per request.
* ``response_format`` ``{"type": "json_schema", "json_schema": {"schema": ...}}`` and
  ``{"type": "json_object", "schema": ...}`` both constrain decoding with a grammar built from
  the schema.
* ``max_tokens`` and ``max_completion_tokens`` are both honoured; ``seed`` is honoured.
* the chat template is read from the GGUF (Jinja, the default): both catalog models carry one.
* the ``model`` field of a request is ignored (one model per server); ``/v1/models`` lists the
  alias given at start, which is how a server is matched to a model.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from functools import cache
from pathlib import Path
from typing import Any

from cq2a.adapters.llm.catalog import CATALOG, ensure_model

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
EXTERNAL_URL_ENV = "CQ2A_LOCAL_LLM_URL"
SERVER_BINARY_ENV = "CQ2A_LLAMA_SERVER"
INSTALL_HINT = "bash scripts/install_llama_cpp.sh"
#: Host memory for prompts the server keeps when a slot moves on to another prompt, so a
#: context's prefix can be restored in any slot (the server's default is 8 GiB).
PROMPT_CACHE_MIB = 1024
LOG_TAIL_CHARS = 3000


class LocalServerError(RuntimeError):
    """The local model server did not start or stopped answering."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _get_json(url: str, timeout_s: float) -> dict[str, Any] | None:
    """The JSON object a GET of ``url`` returns, or None when the server is down, answers an
    error or something that is not a JSON object."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body = json.load(response)
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def served_models(base_url: str, timeout_s: float = 2.0) -> list[str] | None:
    """The model ids a server at ``base_url`` (ending in ``/v1``) lists, or None if it is down."""
    body = _get_json(f"{base_url}/models", timeout_s)
    if body is None:
        return None
    return [str(item.get("id")) for item in body.get("data", [])]


def server_binary() -> Path | None:
    """The ``llama-server`` executable: ``$CQ2A_LLAMA_SERVER``, else the one beside this
    Python (where scripts/install_llama_cpp.sh puts it), else the first on ``PATH``."""
    chosen = os.environ.get(SERVER_BINARY_ENV)
    if chosen:
        return Path(chosen)
    beside = Path(sys.executable).parent / "llama-server"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("llama-server")
    return Path(found) if found else None


@cache
def server_version() -> str | None:
    """What ``llama-server --version`` says (e.g. ``version: 1 (0c1e570)``), or None when it
    is not installed or does not run."""
    binary = server_binary()
    if binary is None:
        return None
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError:
        return None
    lines = (done.stdout + done.stderr).splitlines()
    return next((line.strip() for line in lines if line.startswith("version")), None)


def server_slots(base_url: str, timeout_s: float = 2.0) -> int | None:
    """How many slots the server at ``base_url`` (ending in ``/v1``) has, from ``GET /props``;
    None when it does not say (not a llama.cpp server, or down)."""
    body = _get_json(f"{base_url.removesuffix('/v1')}/props", timeout_s)
    slots = body.get("total_slots") if body is not None else None
    return slots if isinstance(slots, int) and slots > 0 else None


def model_alias(model: str) -> str:
    """The id the server lists for ``model``: the catalog name, else the file's stem."""
    return model if model in CATALOG else Path(model).stem


def _check_loopback(host: str) -> None:
    if host not in LOOPBACK_HOSTS:
        raise ValueError(f"the local model server binds only to loopback, not {host!r}")


class LocalLLMServer:
    """One ``llama-server`` subprocess serving one GGUF file, or an attached external one."""

    def __init__(
        self,
        model_path: Path | None,
        *,
        alias: str,
        host: str = "127.0.0.1",
        port: int | None = None,
        n_ctx: int = 4096,
        slots: int = 1,
        n_threads: int | None = None,
        startup_timeout_s: float = 180.0,
        external_url: str | None = None,
    ) -> None:
        if slots < 1:
            raise ValueError(f"a server needs at least one slot, not {slots}")
        _check_loopback(host)
        self.model_path = model_path
        self.alias = alias
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.slots = slots
        self.n_threads = n_threads or os.cpu_count() or 1
        self.startup_timeout_s = startup_timeout_s
        self.external_url = external_url
        self.log_path: Path | None = None
        self._started = False
        self._process: subprocess.Popen[bytes] | None = None

    @classmethod
    def attach(cls, base_url: str, alias: str) -> LocalLLMServer:
        """Use a server started elsewhere; ``stop`` leaves it running. Its slots are what it
        reports, else one."""
        base_url = base_url.rstrip("/")
        return cls(None, alias=alias, slots=server_slots(base_url) or 1, external_url=base_url)

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, e.g. ``http://127.0.0.1:8123/v1``."""
        if self.external_url:
            return self.external_url
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The command line that starts the server."""
        binary = server_binary()
        return [
            sys.executable,
            "-m",
            "cq2a.adapters.llm.orphan_guard",  # stops the server if cq2a dies without cleaning up
            str(binary or "llama-server"),
            "--model",
            str(self.model_path),
            "--alias",
            self.alias,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--ctx-size",
            str(self.n_ctx * self.slots),  # each slot gets ctx-size / parallel
            "--parallel",
            str(self.slots),
            "--threads",
            str(self.n_threads),
            "--cache-ram",
            str(PROMPT_CACHE_MIB),
            "--no-webui",
            "--metrics",
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
        if server_binary() is None:
            raise LocalServerError(
                f"llama-server is not installed (looked for ${SERVER_BINARY_ENV}, "
                f"{Path(sys.executable).parent / 'llama-server'} and PATH); build it with "
                f"{INSTALL_HINT}"
            )
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
#: Each registered server's counters when this process first used it.
_first_counters: dict[str, dict[str, float]] = {}

#: The token counters of a llama.cpp server's ``/metrics`` (Prometheus text, ``llamacpp:``)
#: that say what its prompt cache saved: prompt tokens processed, prompt tokens reused from a
#: slot's or the host's prompt cache, tokens generated, and the seconds spent on each.
COUNTERS = (
    "prompt_tokens_total",
    "prompt_tokens_cached_total",
    "tokens_predicted_total",
    "prompt_seconds_total",
    "tokens_predicted_seconds_total",
)


def server_counters(base_url: str, timeout_s: float = 5.0) -> dict[str, float] | None:
    """The ``COUNTERS`` of the llama.cpp server at ``base_url`` (ending in ``/v1``); None when
    it does not serve ``/metrics`` (not llama.cpp, started without ``--metrics``, or down)."""
    try:
        url = f"{base_url.removesuffix('/v1')}/metrics"
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            text = response.read().decode()
    except (OSError, ValueError):
        return None
    found: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.removeprefix("llamacpp:").partition(" ")
        if name in COUNTERS and not line.startswith("#"):
            try:
                found[name] = float(value)
            except ValueError:
                continue
    return found or None


def local_server_counters() -> dict[str, dict[str, float]]:
    """The ``COUNTERS`` of every server this process uses now, by model."""
    return {model: counters for model, (_, counters) in _counted_servers().items()}


def _counted_servers() -> dict[str, tuple[LocalLLMServer, dict[str, float]]]:
    """Every server this process uses that serves ``/metrics``, with its counters now."""
    with _servers_lock:
        servers = dict(_servers)
    counted = {
        model: (server, server_counters(server.base_url)) for model, server in servers.items()
    }
    return {model: (server, c) for model, (server, c) in counted.items() if c is not None}


def prompt_cache_use(before: dict[str, dict[str, float]]) -> dict[str, dict[str, Any]]:
    """What each local server this process used did since ``before`` (``local_server_counters``
    then; a server first used since counts from its first use): prompt tokens processed and
    reused from its cache, the hit rate ``cached / (processed + cached)``, tokens generated,
    and whether the server is shared (attached with ``CQ2A_LOCAL_LLM_URL``: its counters
    include other processes' requests)."""
    used: dict[str, dict[str, Any]] = {}
    for model, (server, now) in _counted_servers().items():
        start = before.get(model) or _first_counters.get(model) or {}
        used[model] = counters_spent(start, now) | {"shared": server.external_url is not None}
    return used


def counters_spent(start: dict[str, float], now: dict[str, float]) -> dict[str, Any]:
    """What a server did between two reads of its ``COUNTERS``: prompt tokens processed and
    reused from its cache, the hit rate ``cached / (processed + cached)``, tokens generated,
    and the seconds spent on each."""
    spent = {name: now.get(name, 0.0) - start.get(name, 0.0) for name in COUNTERS}
    processed, cached = spent["prompt_tokens_total"], spent["prompt_tokens_cached_total"]
    return {
        "prompt_tokens": int(processed),
        "prompt_tokens_cached": int(cached),
        "cache_hit_rate": round(cached / (processed + cached), 4) if processed + cached else None,
        "tokens_predicted": int(spent["tokens_predicted_total"]),
        "prompt_seconds": round(spent["prompt_seconds_total"], 1),
        "predicted_seconds": round(spent["tokens_predicted_seconds_total"], 1),
    }


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
    model: str, model_dir: str | Path | None = None, n_ctx: int = 4096, slots: int = 1
) -> LocalLLMServer:
    """The running server for ``model`` in this process, started (or attached) on first use
    with ``slots`` parallel slots; a server already running keeps the slots it has."""
    with _servers_lock:
        server = _servers.get(model)
        if server is not None and server.is_running():
            return server
        server = find_external_server(model)
        if server is None:
            path = ensure_model(model, model_dir)
            server = LocalLLMServer(
                path, alias=model_alias(model), n_ctx=n_ctx, slots=slots
            ).start()
        _servers[model] = server
        _first_counters[model] = server_counters(server.base_url) or {}
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
    slots: int = 1,
) -> int:
    """Serve ``model`` in the foreground until interrupted (``cq2a llm serve``)."""
    _check_loopback(host)
    path = ensure_model(model, model_dir)
    server = LocalLLMServer(
        path, alias=model_alias(model), host=host, port=port, n_ctx=n_ctx, slots=slots
    )
    server.start()
    print(f"serving {server.alias} at {server.base_url} with {server.slots} slots", flush=True)
    print(f"use it from other processes: export {EXTERNAL_URL_ENV}={server.base_url}", flush=True)
    try:
        return server.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()
