"""Splits: seeded and deterministic, stratified by label x language, cases sharing a claim kept together."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from factlab.data.splits import LeakageError, assign_splits, check_leakage, split_cases

FRACTIONS = {"train": 0.8, "val": 0.1, "test": 0.1}


def make_cases(count: int = 200) -> list[dict]:
    """Cases with 4 labels x 2 languages in uneven proportions, each with its own claim."""
    labels = ["correct"] * 5 + ["wrong"] * 3 + ["unverifiable"] + ["disputed"]
    return [
        {"case_id": f"c{index:04d}", "lang": "zh" if index % 3 == 0 else "en", "text": f"text {index}",
         "claims": [{"claim_id": "c1", "text": f"Claim number {index}.", "label": labels[index % len(labels)]}]}
        for index in range(count)
    ]


def test_same_seed_same_split_whatever_the_order() -> None:
    cases = make_cases()
    shuffled = cases[:]
    random.Random(7).shuffle(shuffled)
    assert assign_splits(cases, FRACTIONS, seed=1) == assign_splits(shuffled, FRACTIONS, seed=1)
    assert assign_splits(cases, FRACTIONS, seed=1) != assign_splits(cases, FRACTIONS, seed=2)


def test_fractions_hold_in_every_stratum() -> None:
    cases = make_cases(400)
    assignment = assign_splits(cases, FRACTIONS, seed=0)
    sizes = Counter(assignment.values())
    assert sizes == {"train": 320, "val": 40, "test": 40}
    strata = Counter((c["claims"][0]["label"], c["lang"]) for c in cases)
    for (label, lang), total in strata.items():
        in_test = sum(1 for c in cases if (c["claims"][0]["label"], c["lang"]) == (label, lang)
                      and assignment[c["case_id"]] == "test")
        assert abs(in_test - 0.1 * total) <= 1, (label, lang, in_test, total)


def test_split_cases_records_the_split_and_keeps_order() -> None:
    cases = make_cases(50)
    splits = split_cases(cases, FRACTIONS, seed=0)
    assert sum(len(part) for part in splits.values()) == 50
    for name, part in splits.items():
        assert all(case["split"] == name for case in part)
        assert [c["case_id"] for c in part] == sorted(c["case_id"] for c in part)
    assert "split" not in cases[0]  # the input is not modified


def test_cases_sharing_a_claim_move_together() -> None:
    cases = make_cases(100)
    for index in range(0, 100, 10):  # ten pairs of cases share a claim (up to case and punctuation)
        cases[index + 1]["claims"].append({"claim_id": "c2", "text": cases[index]["claims"][0]["text"].upper()})
    for seed in range(5):
        assignment = assign_splits(cases, FRACTIONS, seed=seed)
        for index in range(0, 100, 10):
            assert assignment[cases[index]["case_id"]] == assignment[cases[index + 1]["case_id"]]
        check_leakage(split_cases(cases, FRACTIONS, seed=seed))


def test_leakage_is_refused_naming_claim_and_both_cases() -> None:
    train = [{"case_id": "a-1", "lang": "en", "text": "t", "claims": [{"text": "The drug, works!"}]}]
    test = [{"case_id": "b-9", "lang": "en", "text": "t", "claims": [{"text": "the drug works"}]}]
    with pytest.raises(LeakageError, match=r"'the drug works' is in test \(case b-9\) and in train \(case a-1\)"):
        check_leakage({"train": train, "val": [], "test": test})
    with pytest.raises(LeakageError, match=r"in test \(case b-9\) and in val \(case a-1\)"):
        check_leakage({"train": [], "val": train, "test": test})
    check_leakage({"train": train, "val": test, "test": []})  # train / val may share (no held-out test claim)


def test_bad_fractions_are_refused() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        assign_splits(make_cases(10), {"train": 0.8, "val": 0.1}, seed=0)
    with pytest.raises(ValueError, match="expected fractions for train, val, test"):
        assign_splits(make_cases(10), {"train": 0.9, "dev": 0.1}, seed=0)
