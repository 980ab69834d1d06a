"""The judge's training mix: its parts split on their own, a held-out file goes to test whole, the caps hold, and
the contrastive cases come from train only (the public parts need ../shared/data: marked `data`)."""

from __future__ import annotations

from collections import Counter

import pytest
from data_checks import assert_resplit_keeps_held_out

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


def test_claims_bench_keeps_the_usual_held_out_cases_and_is_big_enough():
    """extract_claims' benchmark (bundled + extra_zh, both in the repo): the usual val and test cases stay held out,
    its train is a subset of the usual train, and it gives val >= 50 and test >= 130 paragraphs."""
    from factlab.stages.examples import stage_examples

    cfg = compose_config("optimize", ["experiment=compare_extract_claims"])
    bench = load_dataset(cfg.dataset).cases
    assert_resplit_keeps_held_out(bench, ["bundled", "extra_zh"], cfg)
    sizes = {split: len(stage_examples([c for c in bench if c["split"] == split], "extract_claims"))
             for split in ("train", "val", "test")}
    # 72 / 135 / 88: a paragraph without a check-worthy sentence is no example (the pipeline never extracts there);
    # extract_bench (claims_bench + vertical_claims) is the benchmark with test >= 150
    assert sizes["val"] >= 50 and sizes["test"] >= 130 and sizes["train"] >= 80
