"""Fixtures of the RL tests: the bundled cases as VERL parquet (written once), a hashing-encoder retriever over their
corpus, the retrieval service around it, and a tiny local Qwen2."""

from __future__ import annotations

from pathlib import Path

import pytest
from rl_support import bundled_cases, retrieval_config, write_tiny_qwen


@pytest.fixture(scope="session")
def rl_data(tmp_path_factory) -> dict:
    """The manifest of the bundled cases written as RL parquet (split 80/10/10, seed 0)."""
    from factlab.train.rl.data import prepare

    return prepare(bundled_cases(), "bundled", tmp_path_factory.mktemp("rl_data"),
                   {"train": 0.8, "val": 0.1, "test": 0.1}, seed=0)


@pytest.fixture(scope="session")
def retrievers(rl_data, tmp_path_factory) -> dict:
    from factlab.retrieval.encoders import HashingEncoder
    from factlab.train.rl.retrieval import open_retrievers

    return open_retrievers({rl_data["corpus"]: rl_data["corpus_dir"]}, tmp_path_factory.mktemp("rl_index"),
                           retrieval_config(), encoder=HashingEncoder())


@pytest.fixture(scope="session")
def service(retrievers):
    from factlab.train.rl.retrieval import RetrievalService

    with RetrievalService(retrievers, default_k=3) as running:
        yield running


@pytest.fixture(scope="session")
def tiny_qwen(tmp_path_factory) -> Path:
    return write_tiny_qwen(tmp_path_factory.mktemp("tiny_qwen"))
