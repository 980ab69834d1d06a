"""Verify cards: builders, suggested actions (English and Chinese), review queue, lineage, JSON round trip."""

import json

import pytest

from factlab.cards.actions import suggested_action
from factlab.cards.build import build_claim_card, build_error_card, build_paragraph_card
from factlab.cards.model import ClaimCard, EvidenceItem, Report, read_cards_json, write_cards_json
from factlab.rules.business import JudgedEvidence
from factlab.schema import Evidence, Judgment


def je(source_id, relation, tier=1, conf=0.9, page=1, text="The rate was 10% in 2019.", title=None, domain=""):
    evidence = Evidence(source_id, f"{source_id}#p{page}-c1", text, tier=tier, page=page, domain=domain,
                        title=title if title is not None else f"Title of {source_id}")
    return JudgedEvidence(evidence, Judgment(relation, conf))


EN = "The unemployment rate was 20% in 2019."
ZH = "2019年失业率为20%。"

# (id, claim text, vertical, judged, label, risk, action substrings)
ACTION_CASES = [
    ("wrong-en", EN, "general", [je("stats", "contradict", page=3)], "wrong", "red",
     ["Check Title of stats (stats) p.3: it contradicts the claim", '("The rate was 10% in 2019.")']),
    ("wrong-zh", ZH, "general", [je("stats", "contradict", page=3, text="2019年失业率为10%。")], "wrong", "red",
     ["核对《Title of stats》（stats）第3页：该来源与本句矛盾", "“2019年失业率为10%。”"]),
    ("disputed-conflict-en", EN, "general", [je("a", "support"), je("b", "contradict")], "disputed", "yellow",
     ["Sources disagree: Title of a (a) p.1 supports the claim, Title of b (b) p.1 contradicts it"]),
    ("disputed-conflict-zh", ZH, "general", [je("a", "support"), je("b", "contradict")], "disputed", "yellow",
     ["来源意见不一"]),
    ("disputed-partial-en", EN, "general", [je("a", "partial_support")], "disputed", "yellow",
     ["Only partly supported by Title of a (a) p.1", "narrow the claim"]),
    ("disputed-partial-zh", ZH, "general", [je("a", "partial_support")], "disputed", "yellow",
     ["仅部分得到《Title of a》"]),
    ("no-evidence-en", EN, "general", [], "unverifiable", "blue",
     [f'No evidence found: find a primary source for "{EN}"']),
    ("no-evidence-zh", ZH, "general", [], "unverifiable", "blue", [f"未找到证据：请为“{ZH}”查找一手来源"]),
    ("inconclusive-en", EN, "general", [je("a", "irrelevant")], "unverifiable", "blue", ["No conclusive evidence"]),
    ("inconclusive-zh", ZH, "general", [je("a", "insufficient")], "unverifiable", "blue", ["证据不足以判断"]),
    ("review-en", EN, "finance", [je("a", "contradict", conf=0.5)], "unverifiable", "yellow",
     ["Review by hand: Title of a (a) p.1 may contradict the claim", "confidence 0.50"]),
    ("review-zh", ZH, "finance", [je("a", "contradict", conf=0.5)], "unverifiable", "yellow", ["请人工复核"]),
    ("correct-en", EN, "general", [je("a", "support")], "correct", "none",
     ["No action needed: supported by Title of a"]),
    ("correct-zh", ZH, "general", [je("a", "support")], "correct", "none",
     ["无需处理：《Title of a》（a）第1页支持本句"]),
    ("correct-conflict-en", EN, "general", [je("a", "support"), je("b", "contradict", tier=3)], "correct", "blue",
     ["Supported by Title of a (a) p.1; optionally check Title of b (b) p.1"]),
    ("untitled-source", EN, "general", [je("a", "contradict", title="")], "wrong", "red", ["Check a p.1:"]),
]


@pytest.mark.parametrize(
    "text, vertical, judged, label, risk, needles", [c[1:] for c in ACTION_CASES], ids=[c[0] for c in ACTION_CASES]
)
def test_card_label_risk_and_action(business, text, vertical, judged, label, risk, needles):
    card = build_claim_card(claim_id="c1", text=text, vertical=vertical, judged=judged, rules=business("default"))
    assert (card.label, card.risk_level) == (label, risk)
    for needle in needles:
        assert needle in card.suggested_action
    assert card.suggested_action == suggested_action(card)


def test_insufficient_basis_action_under_medical(business):
    card = build_claim_card(claim_id="c1", text=EN, vertical="medical", judged=[je("blog", "support", tier=3)],
                            rules=business("medical"))
    assert card.label == "unverifiable"
    assert card.suggested_action.startswith("Find a stronger or second source: Title of blog (blog) p.1 (tier 3)")


def test_evidence_sorted_best_tier_then_decisive_then_confidence(business):
    judged = [je("c", "support", tier=2), je("b", "irrelevant", tier=1), je("a", "contradict", tier=1, conf=0.8),
              je("d", "contradict", tier=1, conf=0.95)]
    card = build_claim_card(claim_id="c1", text=EN, judged=judged, rules=business("default"))
    assert [e.source_id for e in card.evidence] == ["d", "a", "b", "c"]
    assert card.depends_on == ["a", "c", "d"], "irrelevant evidence is no basis of the label"


def test_evidence_fields_filled_from_sources(business):
    sources = [{"source_id": "a", "title": "Source A", "url": "https://a.example/x", "domain": "a.example"}]
    judged = [je("a", "support", title="", domain="")]
    card = build_claim_card(claim_id="c1", text=EN, judged=judged, rules=business("default"), sources=sources)
    item = card.evidence[0]
    assert (item.title, item.url, item.domain, item.chunk_id, item.page) == (
        "Source A", "https://a.example/x", "a.example", "a#p1-c1", 1)


def test_error_card_is_not_a_label():
    card = build_error_card(claim_id="c9", text=ZH, error="检索超时")
    assert (card.label, card.relation, card.risk_level, card.error) == (None, None, "yellow", "检索超时")
    assert card.suggested_action == "重新运行或人工核查：检索超时"
    with pytest.raises(ValueError, match="label 'error' is not one of .*sets `error`"):
        ClaimCard("c1", EN, label="error")
    with pytest.raises(ValueError, match="non-empty error"):
        build_error_card(claim_id="c9", text=EN, error="")


def test_not_checkworthy_card(business):
    card = build_claim_card(claim_id="c1", text="What a day.", checkworthy=False, judged=[je("a", "contradict")],
                            rules=business("default"))
    assert (card.label, card.risk_level, card.evidence) == (None, "none", [])
    assert card.suggested_action.startswith("Nothing to check")


def test_citation_not_found_raises_risk_and_action(business):
    sources = [{"source_id": "smith-2019", "title": "Aspirin", "author": "Smith", "year": 2019}]
    card = build_claim_card(claim_id="c1", text="Smith et al. (2018) found that aspirin works.",
                            judged=[je("smith-2019", "support", text="In this trial aspirin works.")],
                            rules=business("default"), sources=sources)
    assert card.label == "correct"
    assert (card.citation.identity_exists, card.citation.content_supports) == (False, False)
    assert card.risk_level == "yellow"
    assert card.suggested_action == 'Check the reference "Smith et al. (2018)": no such work among the sources'
    assert any("Smith et al. (2018)" in h for h in card.hints)


def test_citation_found_but_not_supporting(business):
    sources = [{"source_id": "smith-2019", "title": "Aspirin", "author": "Smith", "year": 2019},
               {"source_id": "other", "title": "Other"}]
    card = build_claim_card(claim_id="c1", text="张三说阿司匹林有效。", sentence="Smith (2019) reports it.",
                            judged=[je("other", "support")], rules=business("default"), sources=sources)
    assert (card.citation.identity_exists, card.citation.content_supports) == (True, False)
    assert card.suggested_action == "核对引用“Smith (2019)”：smith-2019中没有支持本句的段落"


def test_citation_ok_keeps_risk(business):
    sources = [{"source_id": "smith-2019", "title": "Aspirin", "author": "Smith", "year": 2019}]
    card = build_claim_card(claim_id="c1", text="Smith (2019) found that aspirin works.",
                            judged=[je("smith-2019", "support")], rules=business("default"), sources=sources)
    assert card.citation.ok and card.risk_level == "none"


def test_no_sources_skips_citation_check(business):
    card = build_claim_card(claim_id="c1", text="Smith (2019) found it.", judged=[], rules=business("default"))
    assert card.citation is None


@pytest.mark.parametrize(
    "risks, expected",
    [([], "none"), (["none"], "none"), (["none", "blue"], "blue"), (["blue", "yellow"], "yellow"),
     (["yellow", "red", "none"], "red")],
)
def test_paragraph_risk_is_max_over_claims(risks, expected):
    claims = [ClaimCard(f"c{i}", EN, risk_level=r) for i, r in enumerate(risks)]
    assert build_paragraph_card("p1", 0, 10, "x" * 10, claims).risk_level == expected


def test_report_review_queue_summary_lineage(small_report):
    report = small_report
    assert [(r.paragraph_id, r.claim_id) for r in report.review_queue] == [("p2", "c3"), ("p2", "c4")]
    assert report.review_queue[1].reason.startswith("Rerun / check manually: judge timed out")
    assert [p.risk_level for p in report.paragraphs] == ["red", "yellow", "none"]
    s = report.summary
    assert (s["paragraphs"], s["claims"], s["errors"], s["review"], s["not_checkworthy"]) == (3, 5, 1, 2, 1)
    assert s["labels"] == {"correct": 1, "wrong": 1, "disputed": 0, "unverifiable": 1}
    assert s["paragraph_risk"] == {"red": 1, "yellow": 1, "blue": 0, "none": 1}
    assert report.lineage == {"blog-1": ["p1"], "smith-2019": ["p1"], "who-2020": ["p1", "p2"]}


def test_json_round_trip(small_report, tmp_path):
    assert Report.from_dict(json.loads(json.dumps(small_report.to_dict()))) == small_report
    path = write_cards_json(small_report, tmp_path / "out" / "cards.json")
    assert read_cards_json(path) == small_report


def test_json_keeps_chinese_readable(business, tmp_path):
    card = build_claim_card(claim_id="c1", text=ZH, judged=[], rules=business("default"))
    report = Report("doc.md", "default", "2025-01-01", [build_paragraph_card("p1", 0, len(ZH), ZH, [card])])
    text = write_cards_json(report, tmp_path / "cards.json").read_text(encoding="utf-8")
    assert ZH in text and "\\u" not in text


def test_from_dict_errors_name_the_field(small_report):
    data = small_report.to_dict()
    data["paragraphs"][0]["claims"][1]["evidence"][0]["bogus"] = 1
    where = r"report\.paragraphs\[0\]\.claims\[1\]\.evidence\[0\]"
    with pytest.raises(ValueError, match=where + r": unknown field\(s\) \['bogus'\]"):
        Report.from_dict(data)
    data = small_report.to_dict()
    del data["paragraphs"][0]["text"]
    with pytest.raises(ValueError, match=r"report\.paragraphs\[0\]: missing required field\(s\) \['text'\]"):
        Report.from_dict(data)


def test_read_cards_json_names_file_on_bad_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{\n  nope", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json: not valid JSON \(line 2"):
        read_cards_json(path)


def test_evidence_item_rejects_unknown_relation():
    with pytest.raises(ValueError, match="relation 'maybe'"):
        EvidenceItem("s", "s#p1-c1", 1, "x", 1, "maybe", 0.5)
