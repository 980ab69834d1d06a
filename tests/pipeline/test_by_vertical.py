"""A program per vertical: `by_vertical.extract_claims` routes each paragraph to the program compiled for its
vertical (the vertical stage decides), the rest to the shared one; optimize.py `vertical=` compiles on one
vertical's cases, with the same split as without."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils.dummies import DummyLM
from hydra.errors import InstantiationException
from hydra.utils import instantiate

from factlab.checkers.professional import ProfessionalChecker
from factlab.checkers.verdict import Verdict
from factlab.config import compose_config
from factlab.data.registry import load_dataset
from factlab.optimize.examples import EmptySplitError, stage_splits
from factlab.stages.build import build_program
from factlab.stages.routed import ByVertical


def test_by_vertical_builds_one_program_per_named_vertical(tmp_path):
    cfg = compose_config("verify", ["input=x", "sources=y"])
    medical = build_program(cfg.stage.extract_claims)
    medical.extract.signature = medical.extract.signature.with_instructions("MEDICAL RULEBOOK: extract claims.")
    medical.save(str(tmp_path / "medical.json"))
    cfg.by_vertical.extract_claims = {"medical": str(tmp_path / "medical.json")}
    stages = _checker(cfg).stages
    routed = stages["extract_claims"]
    assert isinstance(routed, ByVertical) and routed.classify is stages["vertical"]
    assert routed.programs["medical"].module.extract.signature.instructions.startswith("MEDICAL RULEBOOK")
    assert not routed.shared.module.extract.signature.instructions.startswith("MEDICAL RULEBOOK")
    lm = DummyLM([{"vertical": "medical", "confidence": "0.9"}, {"claims": ["Drug X lowers fever."]}])
    with dspy.context(lm=lm):
        out = routed(paragraph="Drug X lowers fever.", context="")
    assert out.claims == ["Drug X lowers fever."] and routed.last_vertical == "medical"
    assert "MEDICAL RULEBOOK" in lm.history[-1]["messages"][0]["content"]  # the medical program answered


def test_by_vertical_refuses_a_stage_that_cannot_be_routed():
    cfg = compose_config("verify", ["input=x", "sources=y", "+by_vertical.judge={medical: x.json}"])
    with pytest.raises(InstantiationException, match="by_vertical.judge: only extract_claims"):
        _checker(cfg)


def _checker(cfg) -> ProfessionalChecker:
    """The professional checker's stages and routed programs as its config builds them (no retriever, no LM)."""
    node = compose_config("verify", ["input=x", "sources=y", "checker=professional"]).checker
    stages = {name: instantiate(cfg.stage[name]) for name in node.stages}
    routed = instantiate(node.routed, stages=cfg.stage, refs=cfg.by_vertical)
    return ProfessionalChecker(stages, None, Verdict(instantiate(cfg.business)), routed=routed)


def test_vertical_examples_come_from_the_same_split():
    cfg = compose_config("optimize", ["stage=extract_claims", "vertical=medical"])
    cases = load_dataset(cfg.dataset).cases
    every = stage_splits(cases, "extract_claims", cfg.splits, cfg.seed, cfg.max_examples)
    medical = stage_splits(cases, "extract_claims", cfg.splits, cfg.seed, cfg.max_examples, "medical")
    verticals = {c["case_id"]: c.get("vertical") for c in cases}
    for split in every:
        assert medical[split] and {verticals[e.case_id] for e in medical[split]} == {"medical"}
        assert {e.case_id for e in medical[split]} <= {e.case_id for e in every[split]}
    with pytest.raises(EmptySplitError, match="vertical 'astrology'"):
        stage_splits(cases, "extract_claims", cfg.splits, cfg.seed, cfg.max_examples, "astrology")
