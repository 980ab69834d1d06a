"""Shared fixtures: business rules composed from conf/business/ exactly as a run composes them."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def compose_business(name: str):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(overrides=[f"+business={name}"])
    return instantiate(cfg.business)


@pytest.fixture(scope="session")
def business():
    """business("medical") -> BusinessRules instantiated from conf/business/medical.yaml (cached)."""
    cache = {}

    def get(name: str):
        if name not in cache:
            cache[name] = compose_business(name)
        return cache[name]

    return get


@pytest.fixture
def penicillin_world(tmp_path):
    """A one-source folder and a two-sentence document with a wrong year: the smallest real verify input."""
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "fleming.md").write_text("---\ntitle: History of penicillin\n---\nAlexander Fleming discovered "
                                        "penicillin in 1928 at St Mary's Hospital in London.\n", encoding="utf-8")
    document = tmp_path / "doc.md"
    document.write_text("# Penicillin\n\nAlexander Fleming discovered penicillin in 1938. It saved many lives.\n",
                        encoding="utf-8")
    return document, sources


@pytest.fixture
def hashing_retriever(tmp_path):
    """hashing_retriever(sources) -> a Retriever over a corpus.jsonl of these source dicts (hashing encoder)."""
    import json

    from factlab.config import compose_config
    from factlab.retrieval.encoders import HashingEncoder
    from factlab.retrieval.retriever import Retriever

    def build(sources: list[dict]):
        folder = tmp_path / "sources"
        folder.mkdir(exist_ok=True)
        (folder / "corpus.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sources))
        cfg = compose_config("verify", ["input=x", "sources=y"]).retrieval
        return Retriever.build(folder, tmp_path / "index", cfg, encoder=HashingEncoder())

    return build


@pytest.fixture
def default_rules():
    """The business rules of a default verify config."""
    from factlab.config import compose_config

    return instantiate(compose_config("verify", ["input=x", "sources=y"]).business)
