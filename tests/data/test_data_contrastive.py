"""Synthetic contrastive pairs: every family edits what it says, in both languages, with the implied relation;
edits that do not apply are skipped; cases come out valid and in train only."""

from __future__ import annotations

import pytest

from factlab.data.cases import validate_case
from factlab.data.contrastive import FAMILIES, RELATION_OF, contrastive_cases, edits

MICE = "在小鼠中，药物K使血压降低了10%。"
EXAMPLES = [  # (claim, evidence, family, expected edited claim)
    ("Fleming discovered penicillin in 1928.", "In 1928 Fleming found penicillin.", "number",
     "Fleming discovered penicillin in 1920."),
    ("Fleming discovered penicillin in 1928.", "In 1928 Fleming found penicillin.", "negation",
     "Fleming did not discover penicillin in 1928."),
    ("The bridge is 300 km long.", "The bridge is 300 km long.", "unit", "The bridge is 300 m long."),
    ("The trial was led by Alice Brown.", "Alice Brown and Carol White led the trial.", "entity",
     "The trial was led by Carol White."),
    ("Aspirin reduced the risk of stroke in mice.", "In mice, aspirin reduced the risk of stroke.", "qualifier_dropped",
     "Aspirin reduced the risk of stroke."),
    ("Aspirin reduced the risk of stroke in mice.", "In mice, aspirin reduced the risk of stroke.", "qualifier_added",
     "Aspirin always reduced the risk of stroke in mice."),
    ("长江全长约6300公里。", "长江全长约6300公里。", "unit", "长江全长约6300米。"),
    (MICE, MICE, "negation", "在小鼠中，药物K使血压没有降低10%。"),
    (MICE, MICE, "qualifier_dropped", "药物K使血压降低了10%。"),
    ("吸烟导致肺癌风险增加。", "吸烟导致肺癌风险增加。", "qualifier_added", "在所有人群中，吸烟导致肺癌风险增加。"),
]


@pytest.mark.parametrize(("claim", "evidence", "family", "expected"), EXAMPLES)
def test_each_family_makes_the_edit_it_names(claim, evidence, family, expected):
    made = {e.family: e for e in edits(claim, evidence)}
    assert made[family].claim == expected and made[family].relation == RELATION_OF[family]


def test_an_edit_that_does_not_apply_is_skipped():
    families = {e.family for e in edits("Fleming did not find gold.", "Fleming found penicillin.")}
    assert "negation" not in families and "number" not in families and "qualifier_dropped" not in families


def test_cases_are_valid_train_only_and_only_from_support_pairs():
    case = {"case_id": "x-1", "lang": "en", "text": "Fleming discovered penicillin in 1928.",
            "sources": [{"source_id": "s", "title": "S", "text": "In 1928 Fleming found penicillin."}],
            "claims": [{"claim_id": "c1", "text": "Fleming discovered penicillin in 1928.", "relation": "support",
                        "label": "correct", "evidence": [{"source_id": "s", "chunk_id": "s#p1-c1",
                                                          "text": "In 1928 Fleming found penicillin.",
                                                          "relation": "support"}]}]}
    made = contrastive_cases([case])
    assert {c["case_id"].split("-")[1] for c in made} <= set(FAMILIES) and len(made) >= 2
    for new in made:
        validate_case(new, new["case_id"])
        assert new["split"] == "train" and new["claims"][0]["relation"] in ("contradict", "partial_support")
    contradicted = {**case, "claims": [{**case["claims"][0], "relation": "contradict",
                                        "evidence": [{**case["claims"][0]["evidence"][0], "relation": "contradict"}]}]}
    assert contrastive_cases([contradicted]) == []
    with pytest.raises(ValueError, match="expected some of"):
        contrastive_cases([case], ["typo"])
