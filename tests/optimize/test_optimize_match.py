"""extract_claims' and review_claims' metrics match claims with evaluate.py's matcher when optimize.py passes it
(`metric.match`)."""

from __future__ import annotations

import dspy

from factlab.config import compose_config
from factlab.matching.claims import ClaimMatcher
from factlab.optimize.job import _scorer
from factlab.optimize.scoring import StageScorer
from factlab.programs import extract_claims, review_claims
from factlab.retrieval.encoders import HashingEncoder

GOLD = dspy.Example(paragraph="p", context="", claims=["Drug K lowered blood pressure by 10% in mice in 2021."])
REWORDED = dspy.Prediction(claims=["In 2021 mice given drug K had 10% lower blood pressure."])


def test_a_given_match_replaces_the_lexical_matching():
    never = extract_claims.metric(GOLD, REWORDED, match=lambda gold, pred: [])
    always = extract_claims.metric(GOLD, REWORDED, match=lambda gold, pred: [(0, 0, 0.99)])
    assert never.score == 0.0 and "Missing gold claims" in never.feedback
    assert always.score == 1.0 and "Missing" not in always.feedback


def test_review_claims_takes_the_same_match():
    gold = dspy.Example(paragraph="p", claims=["x"], reviewed_claims=list(GOLD.claims))
    reviewed = dspy.Prediction(reviewed_claims=list(REWORDED.claims))
    assert review_claims.metric(gold, reviewed, match=lambda g, p: []).score == 0.0
    assert review_claims.metric(gold, reviewed, match=lambda g, p: [(0, 0, 0.9)]).score == 1.0
    assert StageScorer("review_claims").takes_match


def test_the_scorer_passes_match_only_to_metrics_that_take_it():
    calls = []

    def match(gold, pred):
        calls.append((gold, pred))
        return []

    assert StageScorer("extract_claims", match=match).feedback(GOLD, REWORDED).score == 0.0
    assert calls == [(list(GOLD.claims), list(REWORDED.claims))]
    judge = StageScorer("judge", match=match)
    assert not judge.takes_match and judge.match is None


def test_optimize_scores_extract_claims_with_the_evaluate_matcher():
    cfg = compose_config("optimize", ["stage=extract_claims", "matcher.threshold=0.3"])
    cfg.retrieval.encoder = {"_target_": "factlab.retrieval.encoders.HashingEncoder"}  # no model load
    scorer, tags = _scorer(cfg, [], "extract_claims")
    assert tags == {"metric.match": "encoder >= 0.3"}
    matcher = ClaimMatcher(0.3, 0.5, HashingEncoder().encode)
    expected = matcher.match(list(GOLD.claims), list(REWORDED.claims))
    assert scorer.match(list(GOLD.claims), list(REWORDED.claims)) == expected
    assert scorer.feedback(GOLD, REWORDED).score == extract_claims.metric(GOLD, REWORDED, match=matcher.match).score


def test_metric_match_off_keeps_the_lexical_matching():
    cfg = compose_config("optimize", ["stage=extract_claims", "metric.match.encoder=false"])
    scorer, tags = _scorer(cfg, [], "extract_claims")
    assert scorer.match is None and tags == {"metric.match": "lexical (metric.match.encoder=false)"}
    assert scorer.feedback(GOLD, REWORDED).score == extract_claims.metric(GOLD, REWORDED).score


def test_other_stages_get_no_match_tag():
    cfg = compose_config("optimize", ["stage=checkworthy", "metric.retrieve.enabled=false"])
    assert _scorer(cfg, [], "checkworthy")[1] == {}
