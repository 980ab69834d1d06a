"""Table-driven tests of every stage's scoring core and the feedback its metric gives."""

from __future__ import annotations

import dspy
import pytest

from factlab.programs import checkworthy, extract_claims, judge, paragraphs, query_rewrite, review_claims, vertical
from factlab.schema import Judgment


@pytest.mark.parametrize(
    "gold, got, score, phrase",
    [(True, True, 1.0, "Correct"), (True, False, 0.0, "check-worthy"), (False, True, 0.0, "Opinions")],
)
def test_checkworthy_metric(gold, got, score, phrase):
    ex = dspy.Example(text="t", checkworthy=gold, reason="")
    out = checkworthy.metric(ex, dspy.Prediction(checkworthy=got, reason=""))
    assert out.score == score and phrase in out.feedback


@pytest.mark.parametrize("got, score", [("medical", 1.0), ("Medical ", 1.0), ("finance", 0.0)])
def test_vertical_metric(got, score):
    out = vertical.metric(dspy.Example(claim="c", vertical="medical"), dspy.Prediction(vertical=got))
    assert out.score == score


@pytest.mark.parametrize(
    "gold, pred, low, high, phrases",
    [
        (["Acme X1 was released in 2019."], ["Acme X1 was released in 2019."], 1.0, 1.0, []),
        (["Acme X1 was released in 2019.", "Acme X1 costs 300 dollars."], ["Acme X1 was released in 2019."],
         0.6, 0.7, ["Too few claims: 1 written where the paragraph states 2 facts", "Missing gold claims",
                    "costs 300"]),
        (["Acme X1 was released in 2019."], ["It was released in 2019."], 0.0, 0.95, ["not decontextualised"]),
        ([], ["I love it."], 0.0, 0.0, ["Extra claims"]),
        (["Acme X1 was released in 2019.", "Acme X1 costs 300 dollars."],
         ["Acme X1 was released in 2019. Acme X1 costs 300 dollars."], 0.5, 0.6,
         ["not atomic: it copies several sentences into one claim; split it"]),
        (["青霉素于1928年被弗莱明发现。"], ["青霉素于1928年被弗莱明发现"], 1.0, 1.0, []),
    ],
)
def test_extract_claims_metric(gold, pred, low, high, phrases):
    out = extract_claims.metric(dspy.Example(claims=gold), dspy.Prediction(claims=pred))
    assert low <= out.score <= high
    for phrase in phrases:
        assert phrase in out.feedback


def test_review_claims_metric_names_claims_to_drop():
    gold = dspy.Example(reviewed_claims=["A ran 10 km in mice."], dropped=["A cures cancer."], notes=[])
    out = review_claims.metric(gold, dspy.Prediction(reviewed_claims=["A ran 10 km in mice.", "A cures cancer."]))
    assert 0 < out.score < 1 and "Should have been dropped" in out.feedback


def test_query_rewrite_metric_names_missed_chunks():
    gold = dspy.Example(claim="Aspirin was synthesised in 1897", queries=[], evidence=[
        {"chunk_id": "s1#p1-c1", "text": "Felix Hoffmann synthesised aspirin at Bayer in 1897."},
        {"chunk_id": "s2#p1-c1", "text": "Willow bark contains salicin."},
    ])
    out = query_rewrite.metric(gold, dspy.Prediction(queries=["aspirin synthesised 1897 Hoffmann"]))
    assert out.score == 0.5 and "Missed s2#p1-c1" in out.feedback and "Retrieved: s1#p1-c1" in out.feedback
    real = query_rewrite.metric(gold, dspy.Prediction(queries=["q"]), retrieve=lambda qs: ["s1#p1-c1", "s2#p1-c1"])
    assert real.score == 1.0
    assert query_rewrite.metric(gold, dspy.Prediction(queries=[])).score == 0.0


@pytest.mark.parametrize(
    "expected, got, score", [("support", "support", 1.0), ("support", "partial_support", 0.5),
                             ("contradict", "support", 0.0), ("insufficient", "irrelevant", 0.5)],
)
def test_judge_metric(expected, got, score):
    gold = dspy.Example(claim="c", evidence=["Fleming found penicillin in 1928."], relations=[expected],
                        relation=expected)
    out = judge.metric(gold, dspy.Prediction(relation=got, judgments=[Judgment(got, 0.7)]))
    assert out.score == score
    if score < 1 and expected != "insufficient":
        assert "Decisive evidence" in out.feedback and "1928" in out.feedback


def test_paragraphs_metric_boundary_f1():
    doc = "A one two three.\n\nB four five six.\n\nC seven eight."
    gold = dspy.Example(document=doc, paragraphs=[[0, 16], [18, 34], [36, len(doc)]])
    perfect = paragraphs.metric(gold, dspy.Prediction(paragraphs=[{"start": 0, "end": 16}, {"start": 16, "end": 34},
                                                                   {"start": 34, "end": len(doc)}]))
    assert perfect.score == 1.0
    merged = paragraphs.metric(gold, dspy.Prediction(paragraphs=[{"start": 0, "end": 34},
                                                                  {"start": 34, "end": len(doc)}]))
    assert merged.score == pytest.approx(2 / 3) and "Missed a paragraph break" in merged.feedback
