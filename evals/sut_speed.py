"""How much batching speeds up the seq2seq SUT: batched vs one-at-a-time on the same questions.

The model is a randomly initialised T5 of t5-small's shape (d_model 512, 6 layers, 8 heads,
vocabulary 32128) with a word-level tokenizer trained on the questions and contexts, so the run
needs no downloads. Weights do not change the cost of greedy decoding of ``max_new_tokens``.

    python -m evals.sut_speed --n 64 --batch-size 16 --json evals/results/sut_speed_cpu.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from cq2a.adapters.sut.base import SUTQuery, answer_text
from cq2a.adapters.sut.seq2seq import Seq2SeqSUT, pick_device
from evals.calibrate import SQUAD

T5_SMALL = {"d_model": 512, "d_ff": 2048, "d_kv": 64, "num_layers": 6, "num_heads": 8}


def train_tokenizer(texts: list[str], vocab_size: int = 8000) -> Any:
    """A word-level tokenizer trained on ``texts``, wrapped for transformers (T5 special ids)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["<pad>", "</s>", "<unk>"]
    trainer = trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=specials)
    tokenizer.train_from_iterator([text.lower() for text in texts], trainer)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", tokenizer.token_to_id("</s>"))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
    )


def random_t5(vocab_size: int, seed: int = 0, **shape: Any) -> Any:
    """A randomly initialised T5ForConditionalGeneration (pad 0, eos 1, as T5 has them)."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    ids: dict[str, Any] = {"pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0}
    return T5ForConditionalGeneration(T5Config(vocab_size=vocab_size, **ids, **shape)).eval()


def squad_queries(n: int) -> list[SUTQuery]:
    """The first ``n`` answerable SQuAD questions of the sample, repeated if there are fewer."""
    queries = [
        SUTQuery(question=qa["question"], context=row["context"])
        for line in SQUAD.read_text(encoding="utf-8").splitlines()
        for row in [json.loads(line)]
        for qa in row["qas"]
        if not qa["is_impossible"]
    ]
    return [queries[i % len(queries)] for i in range(n)]


def _timed(sut: Seq2SeqSUT, queries: list[SUTQuery], batch_size: int) -> tuple[float, list[str]]:
    import torch

    sut.batch_size = batch_size
    sut.answer(queries[:batch_size])  # warm-up: kernels, allocator
    if sut.device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    answers = sut.answer(queries)
    if sut.device.startswith("cuda"):
        torch.cuda.synchronize()
    return time.perf_counter() - start, [answer_text(a) for a in answers]


def measure_batch_speedup(
    n_questions: int = 64,
    batch_size: int = 16,
    device: str | None = None,
    max_new_tokens: int = 32,
) -> dict[str, Any]:
    """Seconds for ``n_questions`` answered one at a time and in batches, and their ratio."""
    import torch

    queries = squad_queries(n_questions)
    tokenizer = train_tokenizer([q.question for q in queries] + [q.context or "" for q in queries])
    model = random_t5(32128, **T5_SMALL)
    device = pick_device(device)
    if device.startswith("cuda") and torch.cuda.is_bf16_supported():
        model = model.to(torch.bfloat16)
    sut = Seq2SeqSUT(
        "random-t5-small",
        model=model,
        tokenizer=tokenizer,
        device=device,
        max_new_tokens=max_new_tokens,
    )
    single_s, single = _timed(sut, queries, 1)
    batched_s, batched = _timed(sut, queries, batch_size)
    return {
        "device": device,
        "dtype": str(next(model.parameters()).dtype),
        "torch_threads": torch.get_num_threads(),
        "n_questions": n_questions,
        "batch_size": batch_size,
        "max_new_tokens": max_new_tokens,
        "single_s": round(single_s, 3),
        "batched_s": round(batched_s, 3),
        "speedup": round(single_s / batched_s, 2),
        "same_answers": sum(a == b for a, b in zip(single, batched, strict=True)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--device", default=None)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    result = measure_batch_speedup(args.n, args.batch_size, args.device, args.max_new_tokens)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
