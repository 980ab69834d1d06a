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


@pytest.fixture()
def small_report(business):
    """A three-paragraph English report: wrong + correct, review + error, not check-worthy only."""
    from factlab.cards.build import build_claim_card, build_error_card, build_paragraph_card, build_report
    from factlab.rules.business import JudgedEvidence
    from factlab.schema import Evidence, Judgment

    rules = business("default")
    sources = [
        {"source_id": "who-2020", "title": "WHO report", "url": "https://who.int/r",
         "author": "World Health Organization", "year": 2020},
        {"source_id": "blog-1", "title": "A blog", "url": "javascript:alert(1)"},
        {"source_id": "smith-2019", "title": "Aspirin trial", "author": "Smith, J.", "year": 2019},
    ]
    who = JudgedEvidence(
        Evidence("who-2020", "who-2020#p3-c1", "Mortality fell by 10% in 2019.", tier=1, page=3, domain="who.int"),
        Judgment("contradict", 0.92),
    )
    blog = JudgedEvidence(
        Evidence("blog-1", "blog-1#p1-c1", "Mortality fell by 20%.", tier=3, domain="blog.example"),
        Judgment("support", 0.8),
    )
    smith = JudgedEvidence(
        Evidence("smith-2019", "smith-2019#p1-c1", "Aspirin reduced stroke risk.", tier=1, domain="nejm.org"),
        Judgment("support", 0.95),
    )
    text1 = "Mortality fell by 20% in 2019. Smith et al. (2019) found aspirin reduced stroke risk."
    text2 = "Drug X cures disease Y. The trial enrolled 300 patients."
    text3 = "This is a remarkable achievement."
    p1 = build_paragraph_card("p1", 0, len(text1), text1, [
        build_claim_card(claim_id="c1", text="Mortality fell by 20% in 2019.",
                         sentence="Mortality fell by 20% in 2019.",
                         judged=[who, blog], rules=rules, sources=sources),
        build_claim_card(claim_id="c2", text="Smith et al. (2019) found that aspirin reduced stroke risk.",
                         sentence="Smith et al. (2019) found aspirin reduced stroke risk.", judged=[smith], rules=rules,
                         sources=sources),
    ])
    weak = JudgedEvidence(
        Evidence("who-2020", "who-2020#p4-c1", "Drug X showed mixed results.", tier=1, page=4, domain="who.int"),
        Judgment("contradict", 0.55),
    )
    start2 = len(text1) + 2
    p2 = build_paragraph_card("p2", start2, start2 + len(text2), text2, [
        build_claim_card(claim_id="c3", text="Drug X cures disease Y.", sentence="Drug X cures disease Y.",
                         vertical="medical", judged=[weak], rules=rules, sources=sources),
        build_error_card(claim_id="c4", text="The trial enrolled 300 patients.",
                         sentence="The trial enrolled 300 patients.", error="judge timed out after 60 s"),
    ])
    start3 = start2 + len(text2) + 2
    p3 = build_paragraph_card("p3", start3, start3 + len(text3), text3, [
        build_claim_card(claim_id="c5", text=text3, sentence=text3, checkworthy=False, judged=[], rules=rules),
    ])
    return build_report(
        document="reports/demo.md", business=rules.name, paragraphs=[p1, p2, p3], created="2025-01-01T00:00:00+00:00",
        chunks={"who-2020#p3-c1": "WHO annual data. Mortality fell by 10% in 2019. Other text."},
    )
