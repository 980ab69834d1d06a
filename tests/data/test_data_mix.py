"""The judge's training mix: its parts split on their own, a held-out file goes to test whole, the caps hold, and
the contrastive cases come from train only (the public parts need ../shared/data: marked `data`)."""

from __future__ import annotations

from collections import Counter

import pytest

from factlab.config import compose_config
from factlab.data.registry import load_dataset


@pytest.mark.data
def test_the_mix_splits_caps_and_holds_out(public_data_root, monkeypatch):
    monkeypatch.setenv("FACTLAB_DATA_ROOT", str(public_data_root))
    cfg = compose_config("train", ["dataset=judge_mix", "dataset.max_rows=120"]).dataset
    cases = load_dataset(cfg).cases
    splits = Counter(c["split"] for c in cases)
    assert set(splits) == {"train", "val", "test"}
    ocnli = [c for c in cases if c["case_id"].startswith("ocnli-")]
    assert all(c["split"] == "test" for c in ocnli if c["case_id"].startswith("ocnli-dev"))
    assert not any(c["split"] == "test" for c in ocnli if not c["case_id"].startswith("ocnli-dev"))
    made = [c for c in cases if c["case_id"].startswith("judge_mix-contrastive")]
    assert made and all(c["split"] == "train" for c in made)
    parts = Counter((c["case_id"].split("-")[0], c["split"]) for c in cases)
    assert parts[("lingnli", "val")] <= 100 and parts[("lingnli", "test")] <= 300
    test_texts = {c["text"] for c in cases if c["split"] == "test"}
    assert not any(c["text"] in test_texts for c in cases if c["split"] == "train")
