"""The claim cache never turns a wrong claim into "correct" (issue 13.1): a near-duplicate is reused only when it
states the same numbers, dates, units, negation, names and qualifiers, and says so on its card; the setup covers the
content of compiled programs and every retrieval setting; a bad entry or a corrupt database costs a hit, never a
claim or the document (issue 13.5)."""

from __future__ import annotations

import json
import sqlite3

import dspy
import numpy as np
import pytest
from checker_support import professional

from factlab.config import compose_config
from factlab.pipeline.cache import ClaimCache
from factlab.programs.paragraphs import ParagraphSplitter
from factlab.retrieval.encoders import HashingEncoder
from factlab.retrieval.retriever import Retriever
from factlab.schema import Judgment
from factlab.stages.build import build_program, stage_identity

# Pairs an embedding finds near-identical (the issue measured MiniLM cosines 0.951-0.978) that state other facts.
DIFFERENT = [
    ("Alexander Fleming discovered penicillin in 1928.", "Alexander Fleming discovered penicillin in 1938."),
    ("The new drug reduces blood pressure in adults.", "The new drug increases blood pressure in adults."),
    ("The company sold 4.2 million phones in 2020.", "The company sold 42 million phones in 2020."),
    ("青霉素由弗莱明于1928年发现。", "青霉素由弗莱明于1938年发现。"),
    ("The drug lowered blood pressure in mice.", "The drug lowered blood pressure in humans."),
    ("Aspirin does not prevent strokes.", "Aspirin does prevent strokes."),
    ("药物K降低了血压。", "药物K没有降低血压。"),
    ("The bridge is 300 metres long.", "The bridge is 300 feet long."),
    ("Marie Curie won the Nobel Prize in 1911.", "Pierre Curie won the Nobel Prize in 1911."),
    ("At least 40% of voters backed the plan.", "About 40% of voters backed the plan."),
]
SAME = [
    ("The Acme X1 phone was released in 2019.", "Acme X1 phone was released in 2019"),
    ("青霉素于1928年被发现。", "青霉素于1928年被发现了"),
]


def same_vector(texts):
    """An embedding under which every text is the same point: the guard alone must refuse the wrong reuses."""
    return np.ones((len(texts), 4), dtype=np.float32) / 2.0


@pytest.mark.parametrize(("first", "second"), DIFFERENT)
def test_a_near_duplicate_that_states_another_fact_is_never_reused(tmp_path, first, second):
    cache = ClaimCache(tmp_path / "c.sqlite", "s", embed=same_vector, threshold=0.95)
    cache.put(first, {"label": "correct"})
    assert cache.get(second) is None and cache.hits["near_refused"] == 1


@pytest.mark.parametrize(("first", "second"), SAME)
def test_a_near_duplicate_that_states_the_same_fact_is_reused_and_says_so(tmp_path, first, second):
    cache = ClaimCache(tmp_path / "c.sqlite", "s", embed=same_vector, threshold=0.95)
    cache.put(first, {"label": "correct"})
    hit = cache.get(second)
    assert hit is not None and hit.kind == "near" and hit.claim == first


def test_the_sentences_citation_is_part_of_the_key(tmp_path):
    cache = ClaimCache(tmp_path / "c.sqlite", "s", embed=same_vector)
    cache.put("Aspirin works.", {"label": "correct"}, context="Smith et al. (2019)")
    assert cache.get("Aspirin works.", context="Lee (2017)") is None
    assert cache.get("Aspirin works.", context="Smith et al. (2019)").kind == "exact"


# --- end to end: a run that checked the 1928 claim must not make the 1938 claim correct ------------------------------

SOURCES = [{"source_id": "nih-pen", "title": "History of penicillin", "url": "https://www.nih.gov/pen", "tier": 1,
            "text": "Alexander Fleming discovered penicillin in 1928 at St Mary's Hospital in London."}]


def stages():
    def judge(claim, evidence):
        rel = [Judgment("support" if "1928" in claim else "contradict", 0.95) for _ in evidence]
        return dspy.Prediction(judgments=rel, relation=rel[0].relation if rel else "insufficient", confidence=0.95)

    return {"paragraphs": ParagraphSplitter(), "checkworthy": lambda text: dspy.Prediction(checkworthy=True, reason=""),
            "extract_claims": lambda paragraph, context: dspy.Prediction(claims=[paragraph.strip()]),
            "review_claims": lambda paragraph, claims: dspy.Prediction(reviewed_claims=claims),
            "vertical": lambda claim: dspy.Prediction(vertical="science", confidence=0.9),
            "query_rewrite": lambda claim: dspy.Prediction(queries=[claim]), "judge": judge}


@pytest.fixture
def world(tmp_path):
    folder = tmp_path / "sources"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(json.dumps(s) + "\n" for s in SOURCES))
    cfg = compose_config("verify", ["input=x", "sources=y"])
    from hydra.utils import instantiate

    retriever = Retriever.build(folder, tmp_path / "index", cfg.retrieval, encoder=HashingEncoder())
    return retriever, instantiate(cfg.business)


def run(world, cache, text):
    retriever, rules = world
    pipeline = professional(stages(), retriever, rules, k=2, max_workers=1, cache=cache, progress=False)
    return pipeline.run(text).report.paragraphs[0].claims[0]


def test_end_to_end_a_wrong_year_is_not_served_the_right_years_verdict(world, tmp_path):
    cache = ClaimCache(tmp_path / "c.sqlite", "s", embed=same_vector, threshold=0.95)
    right = run(world, cache, "Alexander Fleming discovered penicillin in 1928.")
    wrong = run(world, cache, "Alexander Fleming discovered penicillin in 1938.")
    assert right.label == "correct" and wrong.label == "wrong" and wrong.reused is None
    again = run(world, cache, "alexander fleming discovered penicillin in 1928")  # exact after normalising
    assert again.label == "correct" and again.reused["kind"] == "exact"
    near = run(world, cache, "Alexander Fleming discovered the penicillin in 1928.")
    assert near.reused["kind"] == "near" and any("reused from the near-identical claim" in h for h in near.hints)


def test_a_cached_card_of_an_older_format_costs_a_hit_not_the_document(world, tmp_path):
    cache = ClaimCache(tmp_path / "c.sqlite", "s", embed=same_vector)
    claim = "Alexander Fleming discovered penicillin in 1928."
    cache.put(claim, {"claim_id": "x", "text": claim, "a_field_of_another_version": 1})
    card = run(world, cache, claim)
    assert card.label == "correct" and card.reused is None and cache.hits["unreadable"] == 1


def test_a_corrupt_cache_database_is_moved_aside_and_rebuilt(tmp_path, caplog):
    path = tmp_path / "claims.sqlite"
    path.write_bytes(b"this is not a sqlite database" * 100)
    cache = ClaimCache(path, "s")
    cache.put("A claim.", {"label": "correct"})
    assert cache.get("A claim.").kind == "exact"
    assert [p.name for p in tmp_path.glob("claims.sqlite.corrupt-*")] and "moved aside" in caplog.text
    sqlite3.connect(str(path)).execute("SELECT count(*) FROM claims").fetchone()


# --- the setup covers what decides a card ----------------------------------------------------------------------


def test_a_program_rewritten_in_place_is_another_setup(tmp_path):
    cfg = compose_config("verify", ["input=x", "sources=y"])
    path = tmp_path / "judge.json"
    build_program(cfg.stage.judge).save(str(path))
    before = stage_identity(cfg.stage.judge, str(path))
    state = json.loads(path.read_text())
    state["judge_snippet"]["signature"]["instructions"] = "Judge carefully."
    path.write_text(json.dumps(state))
    assert stage_identity(cfg.stage.judge, str(path)) != before


@pytest.mark.parametrize("override", ["retrieval.search.min_relevance=0.3", "retrieval.compress.enabled=false",
                                      "business.min_support_overlap=0.2", "k=3"])
def test_retrieval_and_rule_settings_are_part_of_the_setup(world, override, tmp_path):
    from hydra.utils import instantiate

    retriever, _ = world

    def setup(*overrides):
        cfg = compose_config("verify", ["input=x", "sources=y", "checker=professional", *overrides])
        settings = instantiate(cfg.checker.claim_cache, path=str(tmp_path / "claims.sqlite"))
        return settings.open(None, retriever, {}, {}).setup

    assert setup() == setup() and setup() != setup(override)
