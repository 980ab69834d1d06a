"""Stage examples per split: leak-free case splits, seeded caps, and a clear error for an empty split."""

from __future__ import annotations

import pytest

from factlab.config import compose_config
from factlab.data.registry import load_dataset
from factlab.data.splits import split_cases
from factlab.optimize.examples import EmptySplitError, stage_splits

FRACTIONS = {"train": 0.8, "val": 0.1, "test": 0.1}


@pytest.fixture(scope="module")
def cases():
    return load_dataset(compose_config("optimize", ["dataset.max_rows=6"]).dataset).cases


def test_splits_are_disjoint_and_capped_deterministically(cases):
    caps = {"train": 12, "val": 5, "test": None}
    first = stage_splits(cases, "checkworthy", FRACTIONS, 0, caps)
    again = stage_splits(cases, "checkworthy", FRACTIONS, 0, caps)
    assert [len(first[s]) for s in ("train", "val")] == [12, 5]
    assert [e.text for e in first["val"]] == [e.text for e in again["val"]]
    ids = {split: {e.case_id for e in examples} for split, examples in first.items()}
    assert not (ids["test"] & ids["train"]) and not (ids["test"] & ids["val"]) and not (ids["train"] & ids["val"])


def test_prepared_cases_keep_their_split(cases):
    marked = [{**case, "split": "train"} for case in cases[:-2]]
    marked += [{**cases[-2], "split": "val"}, {**cases[-1], "split": "test"}]
    splits = split_cases(marked, FRACTIONS, seed=123)
    assert [c["case_id"] for c in splits["test"]] == [cases[-1]["case_id"]]


def test_an_empty_split_names_the_stage_split_and_fix(cases):
    with pytest.raises(EmptySplitError, match="stage 'checkworthy': split 'val' has no examples"):
        stage_splits(cases[:3], "checkworthy", {"train": 1.0, "val": 0.0, "test": 0.0}, 0,
                     {"train": None, "val": None, "test": None})
