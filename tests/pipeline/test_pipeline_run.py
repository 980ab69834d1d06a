"""The pipeline's orchestration with rule-based stage fakes (no LM) over a real index (hashing encoder):
planted contradiction -> wrong, failure isolation, gold substitution, claim cache across runs, offsets."""

from __future__ import annotations

import dspy
import pytest
from checker_support import professional

from factlab.pipeline.cache import ClaimCache
from factlab.programs.paragraphs import ParagraphSplitter
from factlab.retrieval.encoders import HashingEncoder
from factlab.schema import Judgment

DOC = (
    "# Penicillin\n\nAlexander Fleming discovered penicillin in 1932 at St Mary's Hospital.\n\n"
    "I personally find this story delightful and inspiring.\n\n"
    "Mount Kestrel in the Ardenne range is 4,810 metres high according to the 2019 survey."
)
SOURCES = [
    {"source_id": "nih-pen", "title": "History of penicillin", "url": "https://www.nih.gov/pen", "tier": 1,
     "text": "Alexander Fleming discovered penicillin in 1928 at St Mary's Hospital in London."},
    {"source_id": "blog-pen", "title": "My blog", "url": "https://someblog.net/p", "tier": 3,
     "text": "Fleming found penicillin in 1932, I think."},
]


def fake_stages(fail_on: str | None = None):
    def checkworthy(text):
        return dspy.Prediction(checkworthy="personally" not in text, reason="opinion" if "personally" in text else "")

    def extract(paragraph, context):
        return dspy.Prediction(claims=[s.strip() for s in paragraph.split(". ") if s.strip()])

    def review(paragraph, claims):
        return dspy.Prediction(reviewed_claims=claims)

    def vertical(claim):
        if fail_on and fail_on in claim:
            raise TimeoutError("Request timed out")
        return dspy.Prediction(vertical="science", confidence=0.9)

    def queries(claim):
        return dspy.Prediction(queries=[claim])

    def judge(claim, evidence):
        out = []
        for e in evidence:
            same_topic = "penicillin" in e and "penicillin" in claim
            year_ok = ("1928" in e) == ("1928" in claim)
            rel = ("support" if year_ok else "contradict") if same_topic else "irrelevant"
            out.append(Judgment(rel, 0.95))
        return dspy.Prediction(judgments=out, relation=out[0].relation if out else "insufficient", confidence=0.9)

    return {"paragraphs": ParagraphSplitter(), "checkworthy": checkworthy, "extract_claims": extract,
            "review_claims": review, "vertical": vertical, "query_rewrite": queries, "judge": judge}


@pytest.fixture
def retriever(hashing_retriever):
    return hashing_retriever(SOURCES)


@pytest.fixture
def rules(default_rules):
    return default_rules


def make(retriever, rules, stages, cache=None):
    return professional(stages, retriever, rules, k=3, max_workers=2, cache=cache, progress=False)


def test_planted_contradiction_is_wrong_and_opinion_is_unchecked(retriever, rules):
    trace = make(retriever, rules, fake_stages()).run(DOC)
    report = trace.report
    assert [p.text[:12] for p in report.paragraphs][0].startswith("# Penicillin")
    for p in report.paragraphs:  # offsets slice back to the paragraph text
        assert DOC[p.start:p.end] == p.text
    first = report.paragraphs[0].claims[0]
    assert first.label == "wrong" and first.risk_level == "red" and "nih-pen" in first.depends_on
    assert any(e.chunk_id == "nih-pen#p1-c1" and e.tier == 1 for e in first.evidence)
    opinion = report.paragraphs[1]
    assert opinion.risk_level == "none" and all(not c.checkworthy for c in opinion.claims)
    kestrel = report.paragraphs[2].claims[0]
    assert kestrel.label == "unverifiable"  # nothing relevant in the sources: never `wrong`


def test_one_failing_claim_does_not_sink_the_document(retriever, rules):
    trace = make(retriever, rules, fake_stages(fail_on="Kestrel")).run(DOC)
    kestrel = trace.report.paragraphs[2].claims[0]
    assert kestrel.error and "timeout" in kestrel.error and kestrel.label is None
    assert trace.report.paragraphs[0].claims[0].label == "wrong"
    assert trace.report.summary["errors"] == 1 and trace.report.review_queue


def test_gold_substitution_replaces_one_stage(retriever, rules):
    pipeline = make(retriever, rules, fake_stages())
    trace = pipeline.run(DOC)
    claim = trace.claims[0][0]
    fixed = pipeline.process_claim(type(claim)(claim.claim_id, claim.text, claim.sentence),
                                   fixed={"judge": [Judgment("support", 1.0)] * len(claim.evidence)})
    assert fixed.card.label == "correct"


def test_claim_cache_reuses_results_across_runs(retriever, rules, tmp_path):
    calls = []
    stages = fake_stages()
    inner = stages["judge"]
    stages["judge"] = lambda claim, evidence: (calls.append(claim), inner(claim, evidence))[1]
    cache = ClaimCache(tmp_path / "c.sqlite", "setup-1", embed=HashingEncoder().encode, threshold=0.95)
    make(retriever, rules, stages, cache).run(DOC)
    first = len(calls)
    again = ClaimCache(tmp_path / "c.sqlite", "setup-1", embed=HashingEncoder().encode, threshold=0.95)
    trace = make(retriever, rules, stages, again).run(DOC)
    assert first >= 1 and len(calls) == first  # nothing judged twice
    assert again.hits["exact"] >= 1 and trace.report.paragraphs[0].claims[0].label == "wrong"
    other = ClaimCache(tmp_path / "c.sqlite", "setup-2", embed=HashingEncoder().encode)
    assert other.get("Alexander Fleming discovered penicillin in 1932 at St Mary's Hospital.") is None
