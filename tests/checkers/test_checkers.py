"""The checkers behind one interface, over a real index (hashing encoder) with rule-based classifier fakes: every
checker gives cards of one schema; the fast checker batches, decontextualises, applies the consistency signal and
never touches an LM; the funnel escalates exactly what its policy says; the grounding guard drops a claim copied from
the context; the config group composes."""

from __future__ import annotations

import dataclasses

import dspy
import pytest
from checker_support import fast as fast_checker
from checker_support import professional as professional_checker

from factlab.cards.model import ClaimCard
from factlab.checkers.build import CHECKERS, checker_name
from factlab.checkers.funnel import FunnelChecker, FunnelPolicy
from factlab.config import compose_config
from factlab.programs.paragraphs import ParagraphSplitter
from factlab.schema import RELATIONS, Judgment
from factlab.stages.classifiers import CheckworthyClassifier, JudgeClassifier, VerticalModel
from factlab.stages.rules import ClaimQueries, GroundedReview, SentenceClaims

DOC = (
    "# Penicillin\n\nPenicillin is an antibiotic. It was discovered by Alexander Fleming in 1938 at St Mary's "
    "Hospital.\n\nI personally find this story delightful and inspiring.\n\n"
    "Mount Kestrel in the Ardenne range is 4,810 metres high according to the 2019 survey."
)
SOURCES = [
    {"source_id": "nih-pen", "title": "History of penicillin", "url": "https://www.nih.gov/pen", "tier": 1,
     "text": "Penicillin was discovered by Alexander Fleming in 1928 at St Mary's Hospital in London."},
    {"source_id": "blog-pen", "title": "My blog", "url": "https://someblog.net/p", "tier": 3,
     "text": "Fleming found penicillin, I think."},
]


class FakeClassifier:
    """A SequenceClassifier stand-in: `labels`, `predict_proba`, `predict`, counting its batches."""

    def __init__(self, labels, decide):
        self.labels, self.decide, self.batches = list(labels), decide, []

    def predict_proba(self, texts, pairs=None):
        self.batches.append(len(texts))
        pairs = pairs if pairs is not None else [None] * len(texts)
        out = []
        for text, pair in zip(texts, pairs, strict=True):
            label = self.decide(text, pair)
            out.append([0.9 if lab == label else 0.1 / (len(self.labels) - 1) for lab in self.labels])
        return out

    def predict(self, texts, pairs=None):
        probs = self.predict_proba(texts, pairs)
        return [(self.labels[max(range(len(p)), key=p.__getitem__)], max(p)) for p in probs]


def unsure_judge(claim, snippet):
    """A judge that says support whenever the topic matches: the consistency signal must catch the wrong year."""
    return "support" if "penicillin" in snippet.lower() and "penicillin" in claim.lower() else "irrelevant"


def fast_stages(judge=unsure_judge, vertical=lambda text, _: "science"):
    checkworthy = FakeClassifier(["not_checkworthy", "checkworthy"],
                                 lambda t, _: "not_checkworthy" if "personally" in t else "checkworthy")
    vertical = FakeClassifier(["general", "science", "medical"], vertical)
    return {"paragraphs": ParagraphSplitter(), "checkworthy": CheckworthyClassifier(checkworthy),
            "extract_claims": SentenceClaims(), "review_claims": GroundedReview(0.5),
            "vertical": VerticalModel(vertical), "query_rewrite": ClaimQueries(),
            "judge": JudgeClassifier(FakeClassifier(RELATIONS, judge))}


@pytest.fixture
def retriever(hashing_retriever):
    return hashing_retriever(SOURCES)


@pytest.fixture
def rules(default_rules):
    return default_rules


def fast(retriever, rules, **kw):
    return fast_checker(fast_stages(**kw), retriever, rules, k=3, max_workers=2, progress=False,
                        consistency={"max_tier": 1, "min_overlap": 0.6})


def lm_stages(extract=None):
    """The professional path's stages as rule-based fakes (the LM pipeline's wiring, no LM)."""
    def checkworthy(text):
        return dspy.Prediction(checkworthy="personally" not in text, reason="")

    def default_extract(paragraph, context):
        return dspy.Prediction(claims=[s.strip() for s in paragraph.split(". ") if s.strip()])

    def judge(claim, evidence):
        out = [Judgment("contradict" if "1928" in e and "1938" in claim else "insufficient", 0.95) for e in evidence]
        return dspy.Prediction(judgments=out, relation="insufficient", confidence=0.5)

    return {"paragraphs": ParagraphSplitter(), "checkworthy": checkworthy, "extract_claims": extract or default_extract,
            "review_claims": lambda paragraph, claims: dspy.Prediction(reviewed_claims=claims),
            "vertical": lambda claim: dspy.Prediction(vertical="science", confidence=0.9),
            "query_rewrite": lambda claim: dspy.Prediction(queries=[claim]), "judge": judge}


def professional(retriever, rules, extract=None):
    return professional_checker(lm_stages(extract), retriever, rules, k=3, max_workers=2, progress=False,
                                paragraph_workers=2)


def test_fast_checker_batches_decontextualises_and_catches_the_wrong_year(retriever, rules):
    checker = fast(retriever, rules)
    report = checker.check(DOC)
    claims = report.paragraphs[0].claims
    assert [c.text for c in claims] == ["Penicillin is an antibiotic.", "Penicillin was discovered by Alexander "
                                        "Fleming in 1938 at St Mary's Hospital."]  # "It" carried from sentence 1
    year = claims[1]
    assert year.label == "wrong" and year.checker == "fast"  # the judge said support; the rule saw 1938 vs 1928
    assert any("year differs" in h for h in year.hints)
    assert all(not c.checkworthy for c in report.paragraphs[1].claims)  # the opinion is not checked
    assert report.paragraphs[2].claims[0].label == "unverifiable"  # nothing about Kestrel: never wrong
    # one batch per model per document: every sentence, every claim, every (claim, snippet) pair
    assert checker.stages["checkworthy"].classifier.batches == [4]
    assert checker.stages["vertical"].classifier.batches == [3]
    assert len(checker.stages["judge"].classifier.batches) == 1
    assert report.summary["checker"] == "fast"


def test_fast_checker_without_consistency_trusts_the_classifier(retriever, rules):
    checker = fast(retriever, rules)
    checker.parts.verdict.consistency = None
    assert checker.check(DOC).paragraphs[0].claims[1].label == "correct"


def test_a_failing_batch_falls_back_to_claim_by_claim(retriever, rules):
    def vertical(claim, _):
        if "Kestrel" in claim:
            raise TimeoutError("vertical timed out")
        return "science"

    report = fast(retriever, rules, vertical=vertical).check(DOC)
    kestrel = report.paragraphs[2].claims[0]
    assert kestrel.error and kestrel.label is None
    assert report.paragraphs[0].claims[1].label == "wrong"  # the others were checked one by one


def test_every_checker_gives_cards_of_one_schema(retriever, rules):
    reports = {"fast": fast(retriever, rules).check(DOC), "professional": professional(retriever, rules).check(DOC),
               "funnel": FunnelChecker(fast(retriever, rules), professional(retriever, rules),
                                       FunnelPolicy()).check(DOC)}
    fields = {f.name for f in dataclasses.fields(ClaimCard)}
    for name, report in reports.items():
        data = report.to_dict()
        assert data["summary"]["checker"] == name
        for paragraph in data["paragraphs"]:
            for card in paragraph["claims"]:
                assert set(card) == fields, name
                ClaimCard.from_dict(card)  # reads back
    assert set(reports["fast"].to_dict()) == set(reports["professional"].to_dict()) == set(reports["funnel"].to_dict())


@pytest.mark.parametrize(("policy", "card", "reason"), [
    ({}, dict(label="wrong", relation="contradict", confidence=0.9), "label wrong"),
    ({}, dict(label="disputed", relation="contradict", confidence=0.9), "label disputed"),
    ({}, dict(label="correct", relation="support", confidence=0.9), None),
    ({}, dict(label="unverifiable", relation="insufficient", confidence=0.2), None),
    ({}, dict(label=None, error="judge timed out"), "fast path failed"),
    ({"errors": False}, dict(label=None, error="judge timed out"), None),
    ({"labels": []}, dict(label="wrong", relation="contradict", confidence=0.9), None),
    ({"relations": ["partial_support"]}, dict(label="disputed", relation="partial_support"), "label disputed"),
    ({"labels": [], "relations": ["partial_support"]}, dict(label="disputed", relation="partial_support"),
     "relation partial_support"),
    ({"verticals": ["science"]}, dict(label="correct", relation="support", confidence=0.9),
     "vertical science"),
    ({"below_confidence": 0.6}, dict(label="correct", relation="support", confidence=0.55), "confidence 0.55 < 0.6"),
    ({"below_confidence": 0.6}, dict(label="correct", relation="support", confidence=0.65), None),
    ({}, dict(label="correct", relation="support", confidence=0.9, vertical="medical"), "high-risk vertical medical"),
    ({"high_risk": False}, dict(label="correct", relation="support", confidence=0.9, vertical="medical"), None),
    ({}, dict(label="wrong", relation="contradict", checkworthy=False), None),
])
def test_funnel_policy_escalates_exactly_what_it_says(rules, policy, card, reason):
    card = ClaimCard("c1", "A claim.", **{"vertical": "science", **card})
    assert FunnelPolicy(**policy).reason(card, rules.is_high_risk(card.vertical)) == reason


def test_funnel_caps_the_share_most_urgent_first(rules):
    cards = [ClaimCard("c1", "x", label="disputed", relation="contradict", confidence=0.5),
             ClaimCard("c2", "x", label="wrong", relation="contradict", confidence=0.9),
             ClaimCard("c3", "x", label="correct", relation="support", confidence=0.9),
             ClaimCard("c4", "x", label=None, error="boom")]
    assert FunnelPolicy(max_share=0.5).select(cards, rules) == [(1, "label wrong"), (3, "fast path failed")]
    assert [i for i, _ in FunnelPolicy().select(cards, rules)] == [0, 1, 3]


def test_funnel_escalates_the_policy_claims_to_the_professional_path(retriever, rules):
    funnel = FunnelChecker(fast(retriever, rules), professional(retriever, rules), FunnelPolicy())
    report = funnel.check(DOC)
    year = report.paragraphs[0].claims[1]
    assert year.checker == "professional" and year.escalation["reason"] == "label wrong"
    assert year.escalation["fast"]["label"] == "wrong" and year.label == "wrong"
    others = [c for _, c in report.claims() if c.checkworthy and c is not year]
    assert others and all(c.checker == "fast" and c.escalation is None for c in others)
    summary = report.summary["funnel"]
    assert summary["escalated"] == 1 and summary["reasons"] == {"label wrong": 1} and summary["claims"] == 3
    assert {"fast_s", "professional_s"} <= set(summary)
    assert "professional/judge" in funnel.meter.costs() and "fast/judge" in funnel.meter.costs()


def test_grounding_guard_drops_a_claim_copied_from_the_context(retriever, rules):
    """Regression: the 0.5B extractor copied a sentence of the context summary into a later paragraph's claims."""
    def extract(paragraph, context):
        own = [s.strip() for s in paragraph.split(". ") if s.strip()]
        return dspy.Prediction(claims=own + ([context] if context else []))

    trace = professional(retriever, rules, extract=extract).run(DOC)
    kestrel_unit = trace.units[2]
    assert [t.text for t in kestrel_unit.claims] == [
        "Mount Kestrel in the Ardenne range is 4,810 metres high according to the 2019 survey."]
    assert kestrel_unit.ungrounded and "Penicillin" in kestrel_unit.ungrounded[0]
    assert trace.report.summary["ungrounded_claims"] >= 1


def test_checker_group_composes_every_checker():
    for name in CHECKERS:
        cfg = compose_config("verify", ["input=x", "sources=y", f"checker={name}"])
        assert checker_name(cfg) == name
    funnel = compose_config("evaluate", ["checker=funnel"]).checker
    assert funnel.fast.name == "fast" and funnel.professional.name == "professional"
    assert compose_config("verify", ["input=x", "sources=y", "checker=nearline"]).checker.inner.name == "fast"
    assert checker_name(compose_config("verify", ["input=x", "sources=y"])) == "fast"  # docs/results.md: defaults
    assert checker_name(compose_config("evaluate", [])) == "professional"  # the workbench scores the LM pipeline


def test_professional_checks_unverifiable_claims_again_with_the_multi_round_agent(retriever, rules):
    from functools import partial

    from dspy.utils.dummies import DummyLM

    from factlab.agents.multi_round import MultiRoundChecker

    def step(question):
        return {"facts": [], "questions": [question], "next_action": "search"}

    answers = [step("Penicillin was discovered by Alexander Fleming"),
               {"relation": "contradict", "confidence": 0.9, "chunk_ids": ["nih-pen#p1-c1"]},
               step("Mount Kestrel height survey"),
               {"relation": "support", "confidence": 0.9, "chunk_ids": ["no-such#p1-c1"]}]
    checker = professional_checker(lm_stages(), retriever, rules, k=3, max_workers=1, progress=False,
                                   agent=partial(MultiRoundChecker, max_rounds=1), agent_when=["unverifiable"])
    dspy.configure(lm=DummyLM(answers))  # global: the claims run in worker threads (no student handle here)
    try:
        report = checker.check(DOC)
    finally:
        dspy.configure(lm=None)
    antibiotic, year = report.paragraphs[0].claims
    assert antibiotic.label == "wrong" and "single pass: unverifiable" in antibiotic.hints[0]
    assert [e.chunk_id for e in antibiotic.evidence] == ["nih-pen#p1-c1"]
    assert year.label == "wrong" and not any("multi-round" in h for h in year.hints)  # decided in one pass
    kestrel = report.paragraphs[2].claims[0]
    assert kestrel.label == "unverifiable" and any("nothing decisive" in h for h in kestrel.hints)


@pytest.mark.parametrize(("before", "sentence", "claim"), [
    # found in a review of report_zh_short.md: 同年 took 1935 from "1935.3克"
    (["2024年，我国取得了成果。", "嫦娥六号共采集月球样品1935.3克。"], "同年，研究院发布了“天衡三号”。",
     "2024年，研究院发布了“天衡三号”。"),
    (["The probe returned 1,935 grams in 2024.", "It weighed 1935.3 g."], "That year the lab opened.",
     "in 2024 the lab opened."),
    (["样品共1935克。"], "同年，研究院发布了处理器。", "同年，研究院发布了处理器。"),  # no year written as a year
])
def test_that_year_takes_a_year_not_a_measurement(before, sentence, claim):
    from factlab.stages.rules import sentence_claim

    assert sentence_claim(sentence, before)[0] == claim
