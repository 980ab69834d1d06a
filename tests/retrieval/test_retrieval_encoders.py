"""Mean-pooling encoders: e5's query / passage prefixes, MiniLM's none (no model loaded: the embedding step is
replaced by one that records its inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from factlab.retrieval.encoders import E5Encoder, MeanPoolEncoder, MiniLMEncoder


def recording(cls):
    class Recording(cls):
        def __init__(self):
            super().__init__(model_path="unused")
            self.seen: list[str] = []

        def _embed(self, texts):
            self.seen.extend(texts)
            return np.ones((len(texts), 4), dtype=np.float32) / 2.0

    return Recording()


def test_e5_reads_query_and_passage_prefixes():
    encoder = recording(E5Encoder)
    encoder.encode(["青霉素于1928年被发现。"])
    encoder.encode_queries(["青霉素 发现 年份"])
    assert encoder.seen == ["passage: 青霉素于1928年被发现。", "query: 青霉素 发现 年份"]


def test_minilm_sides_agree():
    encoder = recording(MiniLMEncoder)
    encoder.encode(["a"])
    encoder.encode_queries(["a"])
    assert encoder.seen == ["a", "a"]


def test_names_differ_by_model_and_length():
    assert E5Encoder(max_length=128).name != MiniLMEncoder(max_length=128).name
    assert E5Encoder(max_length=128).name != E5Encoder(max_length=256).name


def test_base_class_needs_a_model_path():
    with pytest.raises(ValueError, match="model_path"):
        MeanPoolEncoder().default_path()
