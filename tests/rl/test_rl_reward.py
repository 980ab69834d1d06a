"""compute_score: table tests (verdict through the judge's scoring core and the business rules, format, recall)."""

from __future__ import annotations

import pytest

from factlab.train.rl.reward import compute_score, label_for_relation

GT_SUPPORT = {"relation": "support", "label": "correct", "chunk_ids": ["a#p1-c1", "b#p1-c1"]}
GT_WRONG = {"relation": "contradict", "label": "wrong", "chunk_ids": []}
GT_LABEL_ONLY = {"relation": None, "label": "unverifiable", "chunk_ids": []}
SEARCHED = '<tool_call>{"name": "search", "arguments": {"query": "q"}}</tool_call>\n'


def answer(body: str) -> str:
    return f"<answer>{body}</answer>"


@pytest.mark.parametrize(("solution", "ground_truth", "kwargs", "expected"), [
    # right relation and label, searched: full marks
    (SEARCHED + answer('{"relation": "support", "label": "correct"}'), GT_SUPPORT, {}, 1.0),
    # right relation, no label given: the rules' label for support (correct) counts
    (SEARCHED + answer('{"relation": "support"}'), GT_SUPPORT, {}, 1.0),
    # near miss (partial_support for support): judge core gives 0.5; rules label disputed != correct
    (SEARCHED + answer('{"relation": "partial_support"}'), GT_SUPPORT, {}, 0.9 * 0.25 + 0.1),
    # right verdict without searching: format half
    (answer('{"relation": "contradict", "label": "wrong"}'), GT_WRONG, {}, 0.9 + 0.05),
    # wrong verdict, good format
    (SEARCHED + answer('{"relation": "support", "label": "correct"}'), GT_WRONG, {}, 0.1),
    # no parseable answer, but searched
    (SEARCHED + "<answer>not json</answer>", GT_WRONG, {}, 0.05),
    # aliases are normalised (refuted -> contradict)
    (SEARCHED + answer('{"relation": "refuted"}'), GT_WRONG, {}, 1.0),
    # label-only gold (HoVer-style): insufficient -> unverifiable by the rules
    (SEARCHED + answer('{"relation": "insufficient"}'), GT_LABEL_ONLY, {}, 1.0),
    # recall: one of two gold chunks cited
    (SEARCHED + answer('{"relation": "support", "chunk_ids": ["a#p1-c1"]}'), GT_SUPPORT,
     {"recall_weight": 0.2}, 0.7 + 0.1 + 0.1),
    # recall weight moves to the verdict when the claim has no gold chunk ids
    (SEARCHED + answer('{"relation": "contradict"}'), GT_WRONG, {"recall_weight": 0.2}, 1.0),
    # the LAST answer counts
    (SEARCHED + answer('{"relation": "support"}') + answer('{"relation": "contradict"}'), GT_WRONG, {}, 1.0),
])
def test_compute_score_table(solution, ground_truth, kwargs, expected):
    result = compute_score("factlab/bundled", solution, ground_truth, {"vertical": "general"}, **kwargs)
    assert result["score"] == pytest.approx(expected)
    assert set(result) == {"score", "acc", "format", "recall", "answered"}
    assert result["answered"] == float('"relation": "' in solution and "not json" not in solution)
    assert all(isinstance(value, float) for value in result.values())


def test_reward_is_pure_and_reads_numpy_ground_truth():
    import numpy as np

    gt = {"relation": "support", "label": "correct", "chunk_ids": np.array(["a#p1-c1"], dtype=object)}
    solution = SEARCHED + answer('{"relation": "support", "chunk_ids": ["a#p1-c1"]}')
    first = compute_score("s", solution, gt, recall_weight=0.1)
    assert first == compute_score("s", solution, gt, recall_weight=0.1) and first["recall"] == 1.0


def test_high_risk_vertical_uses_the_rules():
    assert label_for_relation("contradict", "medical") == "wrong"  # confidence 1.0 clears contradict_min_confidence


@pytest.mark.parametrize("kwargs", [{"format_weight": -0.1}, {"format_weight": 0.6, "recall_weight": 0.5}])
def test_bad_weights_are_refused(kwargs):
    with pytest.raises(ValueError, match="weights"):
        compute_score("s", "", GT_WRONG, **kwargs)


def test_gold_without_relation_or_label_is_refused():
    with pytest.raises(ValueError, match="ground_truth"):
        compute_score("s", "", {"relation": None, "label": None, "chunk_ids": []})


def test_the_recipes_business_reaches_the_reward():
    """business=legal (min_evidence 2) must reach the label term; the reward once read conf/business/default.yaml."""
    assert label_for_relation("support", business="default") == "correct"
    assert label_for_relation("support", business="legal") == "unverifiable"  # one snippet < min_evidence 2
    solution = SEARCHED + answer('{"relation": "support"}')
    gold = {"relation": "support", "label": "correct", "chunk_ids": []}
    default = compute_score("s", solution, gold, format_weight=0.0)
    legal = compute_score("s", solution, gold, format_weight=0.0, business="legal")
    assert (default["acc"], legal["acc"]) == (1.0, 0.5)
    with pytest.raises(ValueError, match="no conf/business/nope.yaml"):
        compute_score("s", solution, gold, business="nope")


def test_verl_is_told_the_recipes_business():
    from factlab.train.rl.search_r1 import verl_overrides

    args = verl_overrides({"files": {"train": "t.parquet"}}, "m", "tools.yaml", 1, 5, "ckpt", business="medical")
    assert "reward.custom_reward_function.reward_kwargs.business=medical" in args
