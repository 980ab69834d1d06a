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
