"""Which rows a capped RL split keeps: the first rows are a few whole cases in one language; the seeded sample spans
the split (the 2026-12-05 CPU run trained on 32 English claims and was held out on 20 English + 20 Chinese)."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest
from rl_support import bundled_cases

from factlab.train.rl.data import prepare

SPLIT = {"train": 0.8, "val": 0.1, "test": 0.1}


def languages(manifest: dict, split: str) -> Counter:
    return Counter(info["lang"] for info in pd.read_parquet(manifest["files"][split])["extra_info"])


def test_a_seeded_sample_keeps_both_languages_where_the_first_rows_keep_one(tmp_path):
    first = prepare(bundled_cases(), "bundled", tmp_path / "first", SPLIT, max_rows={"train": 32}, row_sample="first")
    seeded = prepare(bundled_cases(), "bundled", tmp_path / "seeded", SPLIT, max_rows={"train": 32},
                     row_sample="seeded")
    assert first["rows"]["train"] == seeded["rows"]["train"] == 32
    assert set(languages(first, "train")) == {"en"}
    assert set(languages(seeded, "train")) == {"en", "zh"}
    again = prepare(bundled_cases(), "bundled", tmp_path / "again", SPLIT, max_rows={"train": 32}, row_sample="seeded")
    def kept(manifest: dict) -> list[int]:
        return [int(info["index"]) for info in pd.read_parquet(manifest["files"]["train"])["extra_info"]]

    assert kept(again) == kept(seeded) == sorted(kept(seeded)) != kept(first)


def test_an_unknown_row_sample_is_refused(tmp_path):
    with pytest.raises(ValueError, match="row_sample"):
        prepare(bundled_cases(), "bundled", tmp_path, SPLIT, max_rows={"train": 4}, row_sample="random")
