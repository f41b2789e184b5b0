"""A Hugging Face seq2seq QA model as the software under test, run in batches.

The paper tests UnifiedQA-v2 (``allenai/unifiedqa-v2-t5-large-1363200``) on a GPU. UnifiedQA reads
``question \\n context`` lower-cased, with the literal two characters backslash and n between them;
a question asked alone (``sut.input = "question"``) is the lower-cased question, as UnifiedQA's
closed-book tasks read it.
"""

from __future__ import annotations

from typing import Any

from cq2a.adapters.sut.base import SUTAnswer, SUTQuery, check_answers

UNIFIEDQA = "allenai/unifiedqa-v2-t5-large-1363200"


def unifiedqa_input(question: str, context: str | None) -> str:
    """The UnifiedQA encoding of a query: ``question \\n context``, lower-cased; the question
    alone when there is no context."""
    if context is None:
        return question.strip().lower()
    return f"{question.strip()} \\n {context.strip()}".lower()


def pick_device(device: str | None) -> str:
    """The requested torch device, else ``cuda`` when present, else ``cpu``."""
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(device: str, model_type: str | None = None) -> Any:
    """bf16 on GPUs that support it, else fp16 on GPU and fp32 on CPU.

    T5 overflows in fp16 (its activations exceed the fp16 range), so a T5 model on a GPU without
    bf16 runs in fp32 instead.
    """
    import torch

    if not device.startswith("cuda"):
        return torch.float32
    if torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32 if model_type in {"t5", "mt5", "umt5"} else torch.float16


class Seq2SeqSUT:
    """Batched greedy generation: queries sorted by length, one ``generate`` call per batch."""

    def __init__(
        self,
        model_name: str = UNIFIEDQA,
        *,
        batch_size: int = 16,
        max_new_tokens: int = 32,
        device: str | None = None,
        max_input_tokens: int = 512,
        model: Any = None,
        tokenizer: Any = None,
    ) -> None:
        self.name = f"seq2seq:{model_name}"
        self.model_name = model_name
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.max_input_tokens = max_input_tokens
        self.device = pick_device(device)
        self._model = model.to(self.device).eval() if model is not None else None
        self._tokenizer = tokenizer

    def _load(self) -> tuple[Any, Any]:
        if self._model is None or self._tokenizer is None:
            from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer

            model_type = AutoConfig.from_pretrained(self.model_name).model_type
            dtype = pick_dtype(self.device, model_type)
            self._tokenizer = self._tokenizer or AutoTokenizer.from_pretrained(self.model_name)
            model = AutoModelForSeq2SeqLM.from_pretrained(self.model_name, dtype=dtype)
            self._model = model.to(self.device).eval()
        return self._model, self._tokenizer

    def answer(self, items: list[SUTQuery]) -> list[str | SUTAnswer]:
        if not items:
            return []
        model, tokenizer = self._load()
        texts = [unifiedqa_input(item.question, item.context) for item in items]
        encoded = tokenizer(texts, truncation=True, max_length=self.max_input_tokens)["input_ids"]
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        answers: list[str] = [""] * len(texts)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            outputs = self._generate(model, tokenizer, [encoded[i] for i in batch])
            for index, answer in zip(batch, outputs, strict=True):
                answers[index] = answer
        return check_answers(self.name, answers, len(items))

    def truncated(self, items: list[SUTQuery]) -> list[bool]:
        """Which queries are longer than the model's input window (``max_input_tokens``) and so
        were cut: the model never saw the end of their context."""
        if not items:
            return []
        _, tokenizer = self._load()
        texts = [unifiedqa_input(item.question, item.context) for item in items]
        lengths = [len(ids) for ids in tokenizer(texts)["input_ids"]]
        return [length > self.max_input_tokens for length in lengths]

    def _generate(self, model: Any, tokenizer: Any, input_ids: list[list[int]]) -> list[str]:
        import torch

        padded = tokenizer.pad({"input_ids": input_ids}, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            output = model.generate(
                input_ids=padded["input_ids"],
                attention_mask=padded["attention_mask"],
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                num_beams=1,
            )
        return tokenizer.batch_decode(output, skip_special_tokens=True)
