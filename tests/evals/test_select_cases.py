"""evaluate.py's case selection: the split, then case_ids, then a seeded sample (sample_cases), then max_cases."""

from __future__ import annotations

import pytest

from factlab.config import compose_config
from factlab.data.registry import load_dataset
from factlab.evals.job import select_cases


@pytest.fixture(scope="module")
def bundled():
    return load_dataset(compose_config("evaluate", ["tracking=off"]).dataset).cases


def test_sample_cases_is_a_seeded_subset_of_the_split_in_its_order(bundled):
    split = select_cases(compose_config("evaluate", ["tracking=off"]), bundled)
    sample = select_cases(compose_config("evaluate", ["tracking=off", "sample_cases=6"]), bundled)
    again = select_cases(compose_config("evaluate", ["tracking=off", "sample_cases=6"]), bundled)
    ids = [c["case_id"] for c in split]
    picked = [c["case_id"] for c in sample]
    assert len(picked) == 6 and picked == [c["case_id"] for c in again]
    assert set(picked) < set(ids) and picked == [i for i in ids if i in set(picked)]
    assert picked != ids[:6]  # not simply the first cases (the split is ordered by id: English first)
    first = select_cases(compose_config("evaluate", ["tracking=off", "sample_cases=6", "max_cases=2"]), bundled)
    assert [c["case_id"] for c in first] == picked[:2]
