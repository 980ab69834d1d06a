"""The timeliness check inside the pipeline's decision: a current claim supported only by a source that a newer one
contradicts is not `correct`, a past-tense claim keeps that support, and the card names the newest source (JSON and
HTML)."""

from __future__ import annotations

from checker_support import professional
from hydra.utils import instantiate

from factlab.cards.build import build_paragraph_card, build_report
from factlab.cards.html import render_html
from factlab.cards.model import Report
from factlab.checkers import flow
from factlab.checkers.professional import ProfessionalChecker
from factlab.config import compose_config
from factlab.pipeline.trace import ClaimTrace
from factlab.retrieval.records import Source
from factlab.schema import Evidence, Judgment


def _pipeline(default_rules, hashing_retriever, option: str) -> ProfessionalChecker:
    cfg = compose_config("verify", ["input=x", "sources=y", f"timeliness={option}"])
    timeliness = instantiate(cfg.timeliness)
    sources = [Source("guide-2019", "g19.md", "Lanzhou hypertension guideline", 1, year=2019),
               Source("guide-2023", "g23.md", "Lanzhou hypertension guideline", 1, year=2023)]
    return professional({}, hashing_retriever([{"source_id": "s", "title": "t", "text": "x"}]), default_rules,
                        progress=False, sources=sources, timeliness=timeliness)


def _trace(text: str) -> ClaimTrace:
    evidence = [Evidence("guide-2019", "guide-2019#p1-c1", "The target is 140/90 mmHg.", tier=1,
                         title="Lanzhou hypertension guideline"),
                Evidence("guide-2023", "guide-2023#p1-c1", "The target is 130/80 mmHg.", tier=1,
                         title="Lanzhou hypertension guideline")]
    judgments = [Judgment("support", 0.9, "states 140/90"), Judgment("contradict", 0.9, "states 130/80")]
    return ClaimTrace("p1-c1", text, text, vertical="medical", evidence=evidence, judgments=judgments)


def test_a_current_claim_on_superseded_support_is_not_correct_and_names_the_newest(default_rules, hashing_retriever):
    pipeline = _pipeline(default_rules, hashing_retriever, "default")
    card = flow.decide(pipeline.parts, _trace("The current guideline's blood pressure target is 140/90 mmHg."))
    assert card.label == "wrong" and card.newest_source["source_id"] == "guide-2023"
    assert any("superseded" in hint for hint in card.hints)
    report = build_report(document="d", business="default",
                          paragraphs=[build_paragraph_card("p1", 0, 10, "text", [card])])
    assert Report.from_dict(report.to_dict()).paragraphs[0].claims[0].newest_source == card.newest_source
    assert "newest source: Lanzhou hypertension guideline (2023)" in render_html(report)


def test_a_past_claim_keeps_the_older_support_and_off_changes_nothing(default_rules, hashing_retriever):
    past = flow.decide(_pipeline(default_rules, hashing_retriever, "default").parts,
        _trace("In 2019 the guideline's blood pressure target was 140/90 mmHg."))
    off = flow.decide(_pipeline(default_rules, hashing_retriever, "off").parts,
        _trace("The current guideline's blood pressure target is 140/90 mmHg."))
    assert "support" in {e.relation for e in past.evidence}
    assert off.newest_source is None and not any("superseded" in hint for hint in off.hints)
