"""Case views over a small inline fixture: DSPy examples via a fake program module, classifier and RL rows."""

from __future__ import annotations

import sys
import types

import dspy
import pytest

from factlab.data.cases import load_cases
from factlab.data.views import checkworthy_rows, relation_pairs, rl_rows, vertical_rows
from factlab.stages.examples import stage_examples


@pytest.fixture
def cases(case_dir) -> list[dict]:
    return load_cases(case_dir / "cases.jsonl")


@pytest.fixture
def fake_stage(monkeypatch) -> str:
    """A stage module `factlab.programs.fake_stage` whose to_examples serves only cases with paragraphs."""
    module = types.ModuleType("factlab.programs.fake_stage")

    def to_examples(case: dict) -> list[dspy.Example]:
        return [dspy.Example(document=case["text"], span=span, case_id=case["case_id"]).with_inputs("document")
                for span in case.get("paragraphs", [])]

    module.to_examples = to_examples
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return "fake_stage"


def test_stage_examples_concatenate_to_examples_over_cases(cases, fake_stage) -> None:
    examples = stage_examples(cases, fake_stage)
    assert [(e.case_id, e.span) for e in examples] == [("t-en-0001", [0, 45]), ("t-en-0001", [46, 88])]
    assert set(examples[0].inputs().keys()) == {"document"}


def test_stage_examples_refuses_unknown_stage_and_module_without_adapter(cases, monkeypatch) -> None:
    with pytest.raises(ValueError, match=r"unknown stage 'no_such_stage': no module factlab\.programs\.no_such_stage"):
        stage_examples(cases, "no_such_stage")
    monkeypatch.setitem(sys.modules, "factlab.programs.bare", types.ModuleType("factlab.programs.bare"))
    with pytest.raises(ValueError, match="has no to_examples"):
        stage_examples(cases, "bare")


def test_relation_pairs_per_evidence_item_plus_aggregate(cases) -> None:
    rows = relation_pairs(cases)
    en = [row for row in rows if row["case_id"] == "t-en-0001"]
    assert [(row["kind"], row["relation"], row["source"]) for row in en] == [
        ("evidence", "support", "who-penicillin"),
        ("evidence", "contradict", "blog-penicillin"),
        ("claim", "support", "who-penicillin,blog-penicillin"),
    ]
    assert en[2]["evidence"] == en[0]["evidence"] + "\n" + en[1]["evidence"]
    zh = [row for row in rows if row["case_id"] == "t-zh-0001"]
    assert len(zh) == 1 and zh[0]["lang"] == "zh"  # a single evidence item with the claim's relation: no repeat
    assert set(rows[0]) == {"claim", "evidence", "relation", "lang", "case_id", "source", "kind"}


def test_classifier_rows(cases) -> None:
    assert [(r["text"], r["checkworthy"]) for r in checkworthy_rows(cases)] == [
        ("Penicillin was discovered in 1928 by Fleming.", True), ("I love it.", False)]
    assert [(r["level"], r["vertical"]) for r in vertical_rows(cases)] == [("claim", "medical"), ("case", "medical")]


def test_rl_rows_carry_gold_relation_label_and_chunk_ids(cases) -> None:
    rows = rl_rows(cases)
    assert len(rows) == 3
    first = rows[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user"]
    assert first["prompt"][1]["content"] == "Alexander Fleming discovered penicillin in 1928."
    assert first["ground_truth"] == {"relation": "support", "label": "correct",
                                     "chunk_ids": ["who-penicillin#p1-c1", "blog-penicillin#p1-c1"]}
    assert first["extra_info"] == {"case_id": "t-en-0001", "claim": first["prompt"][1]["content"], "lang": "en"}
    assert rows[1]["ground_truth"]["chunk_ids"] == []
