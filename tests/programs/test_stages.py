"""Wiring, parsing and metric feedback of every stage program, with DSPy's DummyLM (no real LM)."""

from __future__ import annotations

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from factlab.matching.text import count_tokens
from factlab.models.errors import call_safely
from factlab.programs import checkworthy, extract_claims, judge, paragraphs, query_rewrite, review_claims, vertical
from factlab.schema import Judgment

ADAPTER = dspy.ChatAdapter(use_json_adapter_fallback=False)


def run_with(answers, program, **inputs):
    with dspy.context(lm=DummyLM(answers), adapter=ADAPTER):
        return program(**inputs)


@pytest.mark.parametrize("text", ["青霉素于1928年由弗莱明发现。", "Penicillin was discovered in 1928."])
def test_checkworthy_parses_bool_and_reason(text):
    pred = run_with([{"checkworthy": "True", "reason": "a dated discovery"}], checkworthy.CheckWorthiness(), text=text)
    assert pred.checkworthy is True and pred.reason


def test_vertical_is_mapped_onto_configured_list():
    program = vertical.VerticalClassifier(verticals=["general", "medical"])
    pred = run_with([{"vertical": "medical  # note: one of general; medical", "confidence": "0.9"}], program,
                    claim="Aspirin lowers fever.")
    assert pred.vertical == "medical" and pred.confidence == pytest.approx(0.9)
    with pytest.raises(ValueError, match="not one of general, medical"):
        run_with([{"vertical": "cooking", "confidence": "0.9"}], program, claim="x")


def test_vertical_aliases_map_near_misses_and_are_checked():
    program = vertical.VerticalClassifier(verticals=["general", "medical"],
                                          aliases={"health": "medical", "健康": "medical"})
    for answer in ("Health", "健康"):
        pred = run_with([{"vertical": answer, "confidence": "0.8"}], program, claim="Aspirin lowers fever.")
        assert pred.vertical == "medical"
    # a named vertical wins over an alias
    pred = run_with([{"vertical": "general (not health)", "confidence": "0.8"}], program, claim="x")
    assert pred.vertical == "general"
    with pytest.raises(ValueError, match="not in verticals"):
        vertical.VerticalClassifier(verticals=["general"], aliases={"health": "medical"})


def test_extract_claims_dedupes_and_caps():
    program = extract_claims.ClaimExtractor(max_claims=2)
    answer = {"claims": '["Acme X1 was released in 2019.", "Acme X1 was released in 2019.", "b", "c"]'}
    pred = run_with([answer], program, paragraph="Acme X1 was released in 2019.", context="")
    assert pred.claims == ["Acme X1 was released in 2019.", "b"]


def test_review_claims_skips_lm_for_no_claims():
    assert review_claims.ClaimReviewer()(paragraph="x", claims=[]).reviewed_claims == []


def test_query_rewrite_adds_yearless_variant_and_never_returns_nothing():
    program = query_rewrite.QueryRewriter(max_queries=2)
    pred = run_with([{"queries": '["China GDP growth 2023", "国内生产总值 2023年"]'}], program,
                    claim="China's GDP grew 5.2% in 2023.")
    assert pred.queries == ["China GDP growth 2023", "国内生产总值 2023年", "China GDP growth", "国内生产总值"]
    empty = run_with([{"queries": "[]"}], query_rewrite.QueryRewriter(yearless_variant=False), claim="A claim.")
    assert empty.queries == ["A claim."]


def test_judge_one_call_per_snippet_and_aggregates():
    answers = [
        {"relation": "contradict", "confidence": "0.8", "reason": "1928 vs 1938"},
        {"relation": "irrelevant", "confidence": "0.9", "reason": "other topic"},
    ]
    pred = run_with(answers, judge.Judge(), claim="Penicillin was discovered in 1938.",
                    evidence=["Fleming discovered penicillin in 1928.", "Bananas are yellow."])
    assert [j.relation for j in pred.judgments] == ["contradict", "irrelevant"]
    assert pred.relation == "contradict" and pred.confidence == pytest.approx(0.8)


def test_judge_reads_a_non_numeric_confidence_as_neutral_not_as_a_parse_error():
    # The 0.5B student copied the labeled demos' placeholder into `confidence`; with a float field that was a parse
    # error, and 10 of them cancelled the judge's whole bootstrap compile.
    answers = [{"relation": "support", "confidence": "Not supplied for this particular example.", "reason": "same"}]
    pred = run_with(answers, judge.Judge(), claim="Penicillin was discovered in 1928.",
                    evidence=["Fleming discovered penicillin in 1928."])
    assert pred.relation == "support" and pred.confidence == pytest.approx(0.5)


def test_vertical_confidence_is_a_number_whatever_the_model_writes():
    pred = run_with([{"vertical": "medical", "confidence": "about 90%"}], vertical.VerticalClassifier(),
                    claim="Aspirin lowers fever.")
    assert pred.vertical == "medical" and pred.confidence == pytest.approx(0.9)


def test_paragraphs_keep_offsets_and_reject_empty():
    doc = "# Title\n\nFirst paragraph has enough words to stand.\n\n第二段包含足够多的中文字符来成为独立段落。\n"
    pred = paragraphs.ParagraphSplitter()(document=doc)
    assert [doc[p["start"]:p["end"]] for p in pred.paragraphs] == [p["text"] for p in pred.paragraphs]
    assert len(pred.paragraphs) == 2 and pred.paragraphs[0]["text"].startswith("# Title")
    with pytest.raises(ValueError, match="empty"):
        paragraphs.ParagraphSplitter()(document="  \n ")


def test_paragraphs_split_overlong_blocks():
    doc = " ".join(f"Sentence number {i} has some words." for i in range(60))
    pred = paragraphs.ParagraphSplitter(max_tokens=50)(document=doc)
    assert len(pred.paragraphs) > 3
    assert all(count_tokens(p["text"]) <= 60 for p in pred.paragraphs)


def test_paragraphs_lm_refinement_merges_same_topic():
    doc = "Alpha one two three four five six seven.\n\nAlpha continues eight nine ten eleven twelve."
    program = paragraphs.ParagraphSplitter(use_lm=True)
    pred = run_with([{"same_topic": "True"}], program, document=doc)
    assert len(pred.paragraphs) == 1 and pred.paragraphs[0]["end"] == len(doc)


def test_unparseable_output_is_a_per_item_error():
    program = checkworthy.CheckWorthiness()
    with dspy.context(lm=DummyLM([{"reason": "no flag"}]), adapter=ADAPTER):
        pred, error = call_safely("checkworthy", program, text="x")
    assert pred is None and error.kind == "parse" and "checkworthy" in str(error)


class _TimeoutLM(dspy.BaseLM):
    def __init__(self):
        super().__init__(model="timeout")

    def forward(self, prompt=None, messages=None, **kwargs):
        raise TimeoutError("Request timed out after 1s")


def test_lm_timeout_is_a_per_item_error():
    with dspy.context(lm=_TimeoutLM(), adapter=ADAPTER):
        pred, error = call_safely("judge", judge.Judge(), claim="c", evidence=["e"])
    assert pred is None and error.kind == "timeout"


def test_aggregate_prefers_weighted_decisive_relation():
    assert judge.aggregate([Judgment("support", 0.4), Judgment("contradict", 0.3), Judgment("contradict", 0.3)])[0] == (
        "contradict")
    assert judge.aggregate([Judgment("insufficient", 0.5), Judgment("irrelevant", 0.9)])[0] == "insufficient"
