"""verify.py end to end with the local 0.5B model on a short English and a short Chinese report against the
bundled corpus (real llama.cpp server, real MiniLM index). Marked `llm`; asserts structure and that a planted
contradiction of a tier-1 source is not labelled `correct`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factlab.checkers.job import run
from factlab.config import compose_config
from factlab.schema import LABELS, RISK_LEVELS

pytestmark = pytest.mark.llm
ROOT = Path(__file__).resolve().parents[2]
# Short documents keep CI fast; each plants one contradiction of a tier-1 source of the bundled corpus
# (ena-penicillin-nlm: 1928; zha-gen-07: 4.8万公里) next to an opinion that must stay unchecked.
DOCS = {
    "en": ("# Penicillin\n\nPenicillin was discovered by Alexander Fleming in 1932 at St Mary's Hospital in London.\n\n"
           "Honestly, I think this is one of the most elegant stories in all of science.\n", "1932"),
    "zh": ("# 铁路简报\n\n截至2024年底，全国高速铁路营业里程为3.2万公里。\n\n"
           "我认为这些成就令人振奋，值得每个人骄傲。\n", "3.2万公里"),
}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    """One MiniLM index of the bundled corpus for both documents: the second run reuses the first's embeddings
    instead of embedding the 258 sources again (335 chunks of a similar corpus took 90 s on a 2-core AMD EPYC)."""
    return tmp_path_factory.mktemp("index")


@pytest.fixture(scope="module", params=sorted(DOCS))
def verified(request, tmp_path_factory, index_dir):
    text, marker = DOCS[request.param]
    out = tmp_path_factory.mktemp(f"verify-{request.param}")
    doc = out / "report.md"
    doc.write_text(text, encoding="utf-8")
    cfg = compose_config("verify", [f"input={doc}", f"sources={ROOT / 'datasets/bundled/corpus'}",
                                    f"output_dir={out}", f"index_dir={index_dir}", "k=3", "progress=false",
                                    "claim_cache.enabled=false", "checker=professional"])
    result = run(cfg)
    return out, result, marker, text


def test_cards_and_report_are_written_with_structure(verified):
    out, result, _, text = verified
    cards = json.loads((out / "cards.json").read_text())
    html = (out / "report.html").read_text()
    assert cards["paragraphs"] and result["summary"]["claims"] >= 2
    for p in cards["paragraphs"]:
        assert p["risk_level"] in RISK_LEVELS and p["end"] > p["start"]
        assert text[p["start"]:p["end"]] == p["text"]
        for c in p["claims"]:
            assert c["label"] in (*LABELS, None)
            assert c["error"] or not c["checkworthy"] or c["suggested_action"]
            for e in c["evidence"]:
                assert e["chunk_id"].startswith(e["source_id"] + "#p") and e["tier"] in (1, 2, 3)
    assert "<html" in html.lower() and cards["paragraphs"][0]["paragraph_id"] in html
    costs = result["costs"]
    assert costs["judge"]["calls"] > 0 and costs["retrieval"]["items"] > 0


def test_planted_tier1_contradiction_is_not_correct(verified):
    out, _, marker, _ = verified
    cards = json.loads((out / "cards.json").read_text())
    planted = [c for p in cards["paragraphs"] for c in p["claims"] if marker in c["text"] and c["checkworthy"]]
    assert planted, f"no claim carries the planted error {marker!r}"
    assert all(c["label"] != "correct" for c in planted), [(c["text"], c["label"]) for c in planted]
