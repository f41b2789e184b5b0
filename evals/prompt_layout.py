"""Would one prefix per passage make a run's prompts cheaper? A run's LLM requests replayed,
prompt processing only, in two layouts, each on a fresh llama.cpp server.

``as-sent``: the messages as the run sent them (the stage's instructions as the system
message, then the passage, then what varies). ``shared-prefix``: one system message for every
stage holding the passage, then the stage's instructions and what varies, so every request of
a passage shares the chat template, the common system text and the passage.

Each layout runs on its own fresh server (the default generator model, the run's slots and
``--cache-ram``), so nothing is cached before the first request; requests go in the order the
run stored them (``llm_cache.sqlite``, one request per distinct prompt), ``--concurrency`` at a
time, with ``max_tokens`` 1. Reported from the server's ``/metrics``: prompt tokens processed and
found in the prompt cache, the hit rate, and the slot seconds spent on prompts; and, for
comparison, what an unbounded prefix cache would process (each prompt minus its longest
common prefix with any earlier one, in characters / 4).

    python -m evals.prompt_layout runs/demo --json evals/results/prompt_layout.json

``--cache-reuse 0,256`` replays each layout twice, the second time on a server started with
``--cache-reuse 256`` (``ReusingServer``).
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cq2a.adapters.llm.catalog import ensure_model
from cq2a.adapters.llm.local_server import (
    LocalLLMServer,
    counters_spent,
    model_alias,
    server_counters,
)
from cq2a.settings import DEFAULT_LOCAL_MODEL, LOCAL_CONTEXT_WINDOW, Settings
from evals.runs import emit, table

LAYOUTS = ("as-sent", "shared-prefix")
#: The one system text every stage would share, before the passage.
SHARED = (
    "You help test question-answering software on the passage below. Each message after it "
    "gives one task about the passage, with its instructions."
)
PASSAGE = re.compile(r"(Context|Passage|Text): (.*?)(\n\n|$)", flags=re.S)
Messages = list[dict[str, str]]


def stored_requests(run_dir: Path) -> list[tuple[str, str]]:
    """(system, user) of each distinct prompt a run sent, in the order it stored them."""
    with sqlite3.connect(run_dir / "llm_cache.sqlite") as db:
        rows = db.execute("SELECT request FROM completions ORDER BY rowid").fetchall()
    prompts: list[tuple[str, str]] = []
    for (request,) in rows:
        messages = json.loads(request)["messages"]
        prompt = (messages[0][1], messages[1][1])
        if prompt not in prompts:
            prompts.append(prompt)
    return prompts


def laid_out(system: str, user: str, layout: str) -> Messages:
    """A request's messages in ``layout``; a prompt with no passage line stays as sent."""
    match = PASSAGE.match(user)
    if layout == "as-sent" or match is None:
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]
    rest = user[match.end() :]
    return [
        {"role": "system", "content": f"{SHARED}\n\nPassage: {match.group(2)}"},
        {"role": "user", "content": f"{system}\n\n{rest}"},
    ]


def unbounded_cache_tokens(prompts: list[Messages]) -> int:
    """Characters / 4 an unbounded prefix cache would process: each prompt (ChatML) minus its
    longest common prefix with any earlier prompt."""
    seen: list[str] = []
    missed = 0
    for messages in prompts:
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        best = 0
        for earlier in seen:
            limit = min(len(earlier), len(text))
            common = next((i for i in range(limit) if earlier[i] != text[i]), limit)
            best = max(best, common)
        missed += len(text) - best
        seen.append(text)
    return missed // 4


class ReusingServer(LocalLLMServer):
    """The local server with ``--cache-reuse N``: a cached chunk of at least N tokens is reused,
    shifted, where a new prompt has it at another position (the passage after another stage's
    system message). Its keys and values were computed after other tokens than the new
    prompt's, so what the model computes is an approximation: measured here, not used by runs."""

    def __init__(self, *args: Any, reuse: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reuse = reuse

    def command(self) -> list[str]:
        return [*super().command(), "--cache-reuse", str(self.reuse)]


def replay(prompts: list[Messages], concurrency: int, slots: int, reuse: int = 0) -> dict[str, Any]:
    """Send ``prompts`` to a fresh server (``--cache-reuse reuse`` when not 0); what its
    ``/metrics`` say it did."""
    path = ensure_model(DEFAULT_LOCAL_MODEL)
    alias = model_alias(DEFAULT_LOCAL_MODEL)
    kind: Any = ReusingServer if reuse else LocalLLMServer
    extra = {"reuse": reuse} if reuse else {}
    with kind(path, alias=alias, n_ctx=LOCAL_CONTEXT_WINDOW, slots=slots, **extra) as server:
        url = f"{server.base_url}/chat/completions"

        def send(messages: Messages) -> None:
            body = {"model": alias, "messages": messages, "max_tokens": 1, "temperature": 0}
            request = urllib.request.Request(
                url, json.dumps(body).encode(), {"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=600) as response:
                response.read()

        before = server_counters(server.base_url)
        started = time.monotonic()
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(send, prompts))
        seconds = time.monotonic() - started
        after = server_counters(server.base_url)
        if before is None or after is None:
            raise SystemExit(f"{server.base_url} serves no /metrics: its tokens cannot be read")
        used = counters_spent(before, after)
    kept = ("prompt_tokens", "prompt_tokens_cached", "cache_hit_rate", "prompt_seconds")
    return {name: used[name] for name in kept} | {"wall_seconds": round(seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a run directory with llm_cache.sqlite")
    parser.add_argument("--concurrency", type=int, default=Settings().concurrency)
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument(
        "--cache-reuse",
        default="0",
        help="comma-separated --cache-reuse chunk sizes to replay each layout with (0: off)",
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    stored = stored_requests(Path(args.run_dir))
    slots = Settings().local_slots
    results: dict[str, dict[str, Any]] = {}
    for layout in args.layouts.split(","):
        prompts = [laid_out(system, user, layout) for system, user in stored]
        for reuse in (int(size) for size in args.cache_reuse.split(",")):
            name = f"{layout}, cache-reuse {reuse}" if reuse else layout
            results[name] = {"unbounded_cache_tokens": unbounded_cache_tokens(prompts)}
            results[name] |= replay(prompts, args.concurrency, slots, reuse)
    columns = ["prompt_tokens", "prompt_tokens_cached", "cache_hit_rate", "prompt_seconds"]
    columns += ["wall_seconds", "unbounded_cache_tokens"]
    rows = [[layout] + [r[c] for c in columns] for layout, r in results.items()]
    result = {
        "run_dir": args.run_dir,
        "requests": len(stored),
        "concurrency": args.concurrency,
        "slots": slots,
        "layouts": results,
    }
    emit(result, table(["layout", *columns], rows), Path(args.json) if args.json else None)


if __name__ == "__main__":
    main()
