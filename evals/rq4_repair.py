"""RQ4 (paper IV-E, Table IX): does fine-tuning on CQ2A's tests lower the QA model's error rate?

The accepted tests are de-duplicated (same normalised question and answer) and split 70/15/15
(seeded) into train, validation and test. The model answers the test split before and after a
few fine-tuning steps on the train split; an answer is an error when its embedding cosine with
the gold answer is below the embedding model's calibrated threshold (the oracle's stage 1, III-D).

CPU mode (default) fine-tunes a small randomly initialised T5 with a word-level tokenizer trained
on the tests (no downloads); ``--model PATH_OR_ID`` fine-tunes a real seq2seq model such as
UnifiedQA-small, on a GPU with ``--device cuda``. Figures are reported as measured.

    python -m evals.rq4_repair RUN_DIR [RUN_DIR ...] --steps 30 --json rq4.json
    python -m evals.rq4_repair RUN_DIR --model allenai/unifiedqa-v2-t5-small-1363200 \
        --device cuda --steps 300 --json rq4.json
"""

from __future__ import annotations

import argparse
import random
import re
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from cq2a.adapters.sut.base import SUTQuery, answer_text
from cq2a.adapters.sut.seq2seq import Seq2SeqSUT, pick_device, unifiedqa_input
from cq2a.language.embeddings import Embedder, default_threshold, load_embedder
from cq2a.models.records import TestCase
from cq2a.settings import Settings
from evals.runs import emit, load_run, table
from evals.sut_speed import random_t5, train_tokenizer

#: A T5 small enough to fine-tune for a few steps on two CPU cores.
TINY_T5 = {"d_model": 128, "d_ff": 256, "d_kv": 32, "num_layers": 2, "num_heads": 4}


class TooFewTests(ValueError):
    """The pooled tests cannot fill a train and a test split."""


class Split(BaseModel):
    train: list[TestCase]
    validation: list[TestCase]
    test: list[TestCase]
    duplicates_removed: int


def normalised(case: TestCase) -> tuple[str, str]:
    """The duplicate key: lower-cased question and answer with punctuation and spaces collapsed."""

    def norm(text: str) -> str:
        return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())

    return norm(case.question), norm(case.answer)


def split_cases(
    cases: list[TestCase],
    seed: int = 0,
    ratios: tuple[float, float] = (0.7, 0.15),
    by_context: bool = False,
) -> Split:
    """Duplicates removed, then a seeded 70/15/15 split, so no pair is in two splits (IV-E).

    ``by_context`` keeps each context's tests in one split, so the test split asks about passages
    the model was not fine-tuned on (the split then follows the ratios only approximately).
    """
    unique = list({normalised(case): case for case in reversed(cases)}.values())[::-1]
    groups: dict[str, list[TestCase]] = {}
    for case in unique:
        groups.setdefault(case.context_id if by_context else case.id, []).append(case)
    order = list(groups.values())
    random.Random(seed).shuffle(order)
    parts: tuple[list[TestCase], list[TestCase], list[TestCase]] = ([], [], [])
    bounds = (len(unique) * ratios[0], len(unique) * (ratios[0] + ratios[1]))
    placed = 0
    for group in order:
        index = 0 if placed + 0.5 <= bounds[0] else 1 if placed + 0.5 <= bounds[1] else 2
        parts[index].extend(group)
        placed += len(group)
    return Split(
        train=parts[0],
        validation=parts[1],
        test=parts[2],
        duplicates_removed=len(cases) - len(unique),
    )


def build_model(cases: list[TestCase], model_name: str | None, seed: int) -> tuple[Any, Any]:
    """A real seq2seq model and tokenizer, or a tiny random T5 with a tokenizer trained here."""
    if model_name:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        return AutoModelForSeq2SeqLM.from_pretrained(model_name), AutoTokenizer.from_pretrained(
            model_name
        )
    texts = [unifiedqa_input(c.question, c.context) for c in cases] + [c.answer for c in cases]
    tokenizer = train_tokenizer(texts)
    return random_t5(len(tokenizer), seed=seed, **TINY_T5), tokenizer


def error_rate(
    sut: Seq2SeqSUT, cases: list[TestCase], embedder: Embedder, threshold: float
) -> tuple[float | None, list[str]]:
    """Share of ``cases`` whose generated answer has cosine < ``threshold`` with the gold."""
    replies = sut.answer([SUTQuery(question=c.question, context=c.context) for c in cases])
    answers = [answer_text(reply) for reply in replies]
    similarities = embedder.similarity_pairs(answers, [c.answer for c in cases])
    errors = sum(similarity < threshold for similarity in similarities)
    return (errors / len(cases) if cases else None), answers


def fine_tune(
    model: Any, tokenizer: Any, train: list[TestCase], steps: int, device: str, **options: Any
) -> list[float]:
    """``steps`` AdamW steps on shuffled mini-batches of the train split; the loss of each."""
    import torch

    rng = random.Random(options.get("seed", 0))
    batch_size, lr = options.get("batch_size", 8), options.get("lr", 1e-3)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.to(device).train()
    losses = []
    for _ in range(steps):
        batch = rng.sample(train, min(batch_size, len(train)))
        inputs = tokenizer(
            [unifiedqa_input(c.question, c.context) for c in batch],
            padding=True,
            truncation=True,
            max_length=512,
            return_tensors="pt",
        ).to(device)
        labels = tokenizer([c.answer.lower() for c in batch], padding=True, return_tensors="pt")
        label_ids = labels["input_ids"].masked_fill(labels["attention_mask"] == 0, -100)
        loss = model(**inputs, labels=label_ids.to(device)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(round(float(loss.detach()), 4))
    model.eval()
    return losses


def repair(
    cases: list[TestCase],
    *,
    steps: int = 30,
    seed: int = 0,
    model_name: str | None = None,
    device: str | None = None,
    embedder: Embedder | None = None,
    threshold: float | None = None,
    batch_size: int = 8,
    lr: float = 1e-3,
    by_context: bool = False,
) -> dict[str, Any]:
    """Error rate on the test split before and after fine-tuning on the train split (Table IX)."""
    device = pick_device(device)
    split = split_cases(cases, seed, by_context=by_context)
    if not split.train or not split.test:
        raise TooFewTests(
            f"too few distinct tests to split: {len(cases) - split.duplicates_removed} give "
            f"train/validation/test {len(split.train)}/{len(split.validation)}/{len(split.test)}"
        )
    embedder = embedder or load_embedder(Settings().embedding_model)
    threshold = default_threshold(embedder.name) if threshold is None else threshold
    model, tokenizer = build_model(cases, model_name, seed)
    sut = Seq2SeqSUT(
        model_name or "random-tiny-t5", model=model, tokenizer=tokenizer, device=device
    )
    before, before_answers = error_rate(sut, split.test, embedder, threshold)
    started = time.perf_counter()
    losses = fine_tune(
        model, tokenizer, split.train, steps, device, seed=seed, batch_size=batch_size, lr=lr
    )
    seconds = time.perf_counter() - started
    after, after_answers = error_rate(sut, split.test, embedder, threshold)
    return {
        "model": model_name or "random-tiny-t5",
        "device": device,
        "embedder": embedder.name,
        "threshold": threshold,
        "split": {
            "train": len(split.train),
            "validation": len(split.validation),
            "test": len(split.test),
            "duplicates_removed": split.duplicates_removed,
        },
        "split_by": "context" if by_context else "test",
        "steps": steps,
        "train_seconds": round(seconds, 2),
        "loss_start": losses[0] if losses else None,
        "loss_end": losses[-1] if losses else None,
        "error_rate_before": before,
        "error_rate_after": after,
        "examples": [
            {"question": c.question, "gold": c.answer, "before": b, "after": a}
            for c, b, a in list(zip(split.test, before_answers, after_answers, strict=True))[:5]
        ],
    }


def render(result: dict[str, Any]) -> str:
    s = result["split"]
    rows = [
        [
            result["model"],
            f"{s['train']}/{s['validation']}/{s['test']}",
            result["steps"],
            result["loss_start"],
            result["loss_end"],
            result["error_rate_before"],
            result["error_rate_after"],
        ]
    ]
    header = ["model", "train/val/test", "steps", "loss0", "lossN", "err_before", "err_after"]
    return table(header, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", type=Path, nargs="+", help="tests of all of them are pooled")
    parser.add_argument("--model", default=None, help="seq2seq model path or id; default tiny T5")
    parser.add_argument("--device", default=None)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--by-context", action="store_true", help="keep each context's tests in one split"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    cases = [case for run_dir in args.run_dirs for case in load_run(run_dir).cases]
    try:
        result = repair(
            cases,
            steps=args.steps,
            seed=args.seed,
            model_name=args.model,
            device=args.device,
            batch_size=args.batch_size,
            lr=args.lr,
            by_context=args.by_context,
        )
    except TooFewTests as error:
        parser.exit(2, f"rq4_repair: {error}; pool more run directories or run more contexts\n")
    result["run_dirs"] = [str(run_dir) for run_dir in args.run_dirs]
    emit(result, render(result), args.json)


if __name__ == "__main__":
    main()
