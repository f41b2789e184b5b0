"""DeepEval's Synthesizer on a JSONL of passages, with an OpenAI-compatible local model.

Run with the Python of a virtual environment that has ``deepeval`` (not a project dependency):

    PEER/bin/python evals/peers/deepeval_synthesizer.py --contexts passages.jsonl \
        --base-url http://127.0.0.1:8391/v1 --model qwen2.5-coder-1.5b-instruct --out out.json

It writes what the Synthesizer returned, one golden per row: the passage id, the question
(``input``) and the reference answer (``expected_output``). Default settings, except the model
(the same local model as cq2a's generator, for generation and for DeepEval's quality filter)
and ``max_goldens_per_context``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from deepeval.models import LocalModel  # type: ignore[import-not-found]
from deepeval.synthesizer import Synthesizer  # type: ignore[import-not-found]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contexts", required=True, help="JSONL with id and context")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--per-context", type=int, default=6)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rows = [json.loads(line) for line in Path(args.contexts).read_text().splitlines() if line]
    model = LocalModel(model=args.model, base_url=args.base_url, api_key="local")
    synthesizer = Synthesizer(model=model, max_concurrent=8)
    started = time.monotonic()
    goldens = synthesizer.generate_goldens_from_contexts(
        contexts=[[row["context"]] for row in rows],
        include_expected_output=True,
        max_goldens_per_context=args.per_context,
    )
    seconds = time.monotonic() - started
    by_context = {row["context"]: row["id"] for row in rows}
    out = {
        "seconds": round(seconds, 1),
        "goldens": [
            {
                "context_id": by_context.get((golden.context or [""])[0], ""),
                "question": golden.input,
                "answer": golden.expected_output,
            }
            for golden in goldens
        ],
    }
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
