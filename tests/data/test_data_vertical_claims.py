"""datasets/vertical_claims (conf/dataset/vertical_claims.yaml): 160 cases of extraction and check-worthiness gold in
four verticals and two languages that load and validate row by row; and extract_bench, the mix that gives each of the
four verticals its own val and test paragraphs while every case a part's usual split holds out stays held out."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from data_checks import assert_resplit_keeps_held_out

from factlab.config import compose_config
from factlab.data.registry import load_dataset
from factlab.data.validate import validate_file
from factlab.programs.extract_claims import claim_flaws
from factlab.stages.examples import stage_examples

FOLDER = Path(__file__).resolve().parents[2] / "datasets/vertical_claims"
VERTICALS = ("finance", "law", "medical", "science")


def test_vertical_claims_load_validate_and_count() -> None:
    cases = load_dataset(compose_config("optimize", ["dataset=vertical_claims"]).dataset).cases  # validates each row
    assert len(cases) == 160 and len({case["case_id"] for case in cases}) == 160
    assert Counter((case["vertical"], case["lang"]) for case in cases) == {(v, lang): 20 for v in VERTICALS
                                                                           for lang in ("en", "zh")}
    assert all(case["case_id"].startswith(f"vc-{case['lang']}-") and case["sources"] == [] for case in cases)
    claims = [claim for case in cases for claim in case["claims"]]
    sentences = [sentence for case in cases for sentence in case["sentences"]]
    assert (len(claims), sum(s["checkworthy"] for s in sentences), len(sentences)) == (1527, 874, 1173)
    assert not [claim["text"] for claim in claims if claim_flaws(claim["text"])]
    assert all(claim["vertical"] == case["vertical"] for case in cases for claim in case["claims"])
    assert sum(validate_file(path)["total"]["cases"] for path in sorted(FOLDER.glob("cases_*.jsonl"))) == 160
    examples = stage_examples(cases, "extract_claims")
    assert len(examples) == 356 and all(example.claims for example in examples)  # 16 paragraphs hold no fact to check


def test_extract_bench_holds_out_what_each_part_holds_out_and_serves_every_vertical() -> None:
    cfg = compose_config("optimize", ["experiment=compare_extract_vertical"])
    bench = load_dataset(cfg.dataset).cases
    assert_resplit_keeps_held_out(bench, ["bundled", "extra_zh", "vertical_claims"], cfg)
    for vertical in VERTICALS:
        sizes = {split: len(stage_examples([c for c in bench if c["split"] == split and c.get("vertical") == vertical],
                                           "extract_claims")) for split in ("train", "val", "test")}
        assert sizes["train"] >= 25 and sizes["val"] >= 24 and sizes["test"] >= 50, (vertical, sizes)
