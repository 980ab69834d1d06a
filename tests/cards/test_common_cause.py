"""The common-cause lineage: paragraphs resting on one low-tier or contested source are flagged together in the
report (fact-layer findings), and the grouping holds on its gold (factlab.evals.layer_gold.score_common_cause,
printed by benchmarks/common_cause.py)."""

from __future__ import annotations

from factlab.cards.build import build_report, common_cause_findings
from factlab.cards.model import ClaimCard, EvidenceItem, ParagraphCard, Report
from factlab.evals.layer_gold import score_common_cause


def _paragraph(pid: str, *evidence: tuple[str, int, str]) -> ParagraphCard:
    items = [EvidenceItem(s, f"{s}#p1-c1", 1, "snippet", t, r, 0.9, title=s.title()) for s, t, r in evidence]
    claim = ClaimCard(f"{pid}-c1", "claim", label="correct", relation="support", evidence=items,
                      depends_on=sorted({s for s, _, _ in evidence}))
    return ParagraphCard(pid, 0, 5, "text.", "none", [claim])


def test_a_group_on_a_low_tier_source_is_flagged_in_the_report_and_survives_json():
    paragraphs = [_paragraph("p1", ("blog", 3, "support")), _paragraph("p2", ("blog", 3, "support")),
                  _paragraph("p3", ("gov", 1, "support"))]
    report = build_report(document="d", business="default", paragraphs=paragraphs)
    assert [(f.layer, f.kind, f.paragraph_id, f.other_paragraph_id) for f in report.findings] == [
        ("fact", "common_cause", "p1", "p2"), ("fact", "common_cause", "p2", "p1")]
    assert "tier 3 only" in report.findings[0].evidence and "p1, p2" in report.findings[0].suggested_action
    assert report.summary["findings"] == {"fact": 2}
    assert Report.from_dict(report.to_dict()).findings == report.findings
    assert build_report(document="d", business="default", paragraphs=paragraphs, common_cause_tier=None).findings == []


def test_contested_counts_only_from_above_the_low_tier_and_corroboration_breaks_the_group():
    contested = [_paragraph("p1", ("tool", 1, "support"), ("trial", 2, "contradict")),
                 _paragraph("p2", ("tool", 1, "support"))]
    assert {f.paragraph_id for f in common_cause_findings(contested)} == {"p1", "p2"}
    forum = [_paragraph("p1", ("report", 1, "support"), ("forum", 3, "contradict")),
             _paragraph("p2", ("report", 1, "support"), ("forum", 3, "contradict"))]
    assert common_cause_findings(forum) == []
    corroborated = [_paragraph("p1", ("blog", 3, "support"), ("gov", 1, "support")),
                    _paragraph("p2", ("blog", 3, "support"), ("gov", 1, "support"))]
    assert common_cause_findings(corroborated) == []


def test_the_grouping_holds_on_its_gold():
    """A regression guard: the developers wrote the gold and adjusted the rule on it (docs/layers.md)."""
    table = score_common_cause()["table"]["all"]
    assert table["precision"] == 1.0 and table["recall"] == 1.0
