"""datasets/extra_zh (conf/dataset/extra_zh.yaml): 48 Chinese cases that load, validate row by row, and feed every
stage."""

from __future__ import annotations

from pathlib import Path

from factlab.config import compose_config
from factlab.data.cases import load_corpus
from factlab.data.registry import load_dataset
from factlab.data.validate import validate_file
from factlab.stages.examples import stage_examples

EXTRA = Path(__file__).resolve().parents[2] / "datasets/extra_zh"


def test_extra_zh_loads_validates_and_counts() -> None:
    cases = load_dataset(compose_config("prepare_data", ["dataset=extra_zh"]).dataset).cases  # validates every row
    claims = [claim for case in cases for claim in case["claims"]]
    sentences = [sentence for case in cases for sentence in case["sentences"]]
    assert len(cases) == 48 and len({case["case_id"] for case in cases}) == 48
    assert all(case["case_id"].startswith("extra-zh-c-") and case["lang"] == "zh" for case in cases)
    assert (len(claims), sum(s["checkworthy"] for s in sentences), len(sentences)) == (155, 117, 188)
    assert len(load_corpus(f"{EXTRA}/corpus/zh_c.jsonl")) == 77
    assert validate_file(f"{EXTRA}/cases_zh_c.jsonl")["total"] == {"cases": 48, "claims": 155}
    counts = {stage: len(stage_examples(cases, stage))
              for stage in ("checkworthy", "extract_claims", "review_claims", "judge", "query_rewrite")}
    assert counts == {"checkworthy": 343, "extract_claims": 82, "review_claims": 44, "judge": 155, "query_rewrite": 155}
