"""Fixtures for the card and report tests (the `business` fixture comes from tests/conftest.py)."""

import pytest


@pytest.fixture()
def small_report(business):
    """A three-paragraph English report: wrong + correct, review + error, not check-worthy only."""
    from factlab.cards.build import build_claim_card, build_error_card, build_paragraph_card, build_report
    from factlab.rules.business import JudgedEvidence
    from factlab.schema import Evidence, Judgment

    rules = business("default")
    sources = [
        {"source_id": "who-2020", "title": "WHO report", "url": "https://who.int/r",
         "author": "World Health Organization", "year": 2020},
        {"source_id": "blog-1", "title": "A blog", "url": "javascript:alert(1)"},
        {"source_id": "smith-2019", "title": "Aspirin trial", "author": "Smith, J.", "year": 2019},
    ]
    who = JudgedEvidence(
        Evidence("who-2020", "who-2020#p3-c1", "Mortality fell by 10% in 2019.", tier=1, page=3, domain="who.int"),
        Judgment("contradict", 0.92),
    )
    blog = JudgedEvidence(
        Evidence("blog-1", "blog-1#p1-c1", "Mortality fell by 20%.", tier=3, domain="blog.example"),
        Judgment("support", 0.8),
    )
    smith = JudgedEvidence(
        Evidence("smith-2019", "smith-2019#p1-c1", "Aspirin reduced stroke risk.", tier=1, domain="nejm.org"),
        Judgment("support", 0.95),
    )
    text1 = "Mortality fell by 20% in 2019. Smith et al. (2019) found aspirin reduced stroke risk."
    text2 = "Drug X cures disease Y. The trial enrolled 300 patients."
    text3 = "This is a remarkable achievement."
    p1 = build_paragraph_card("p1", 0, len(text1), text1, [
        build_claim_card(claim_id="c1", text="Mortality fell by 20% in 2019.",
                         sentence="Mortality fell by 20% in 2019.",
                         judged=[who, blog], rules=rules, sources=sources),
        build_claim_card(claim_id="c2", text="Smith et al. (2019) found that aspirin reduced stroke risk.",
                         sentence="Smith et al. (2019) found aspirin reduced stroke risk.", judged=[smith], rules=rules,
                         sources=sources),
    ])
    weak = JudgedEvidence(
        Evidence("who-2020", "who-2020#p4-c1", "Drug X showed mixed results.", tier=1, page=4, domain="who.int"),
        Judgment("contradict", 0.55),
    )
    start2 = len(text1) + 2
    p2 = build_paragraph_card("p2", start2, start2 + len(text2), text2, [
        build_claim_card(claim_id="c3", text="Drug X cures disease Y.", sentence="Drug X cures disease Y.",
                         vertical="medical", judged=[weak], rules=rules, sources=sources),
        build_error_card(claim_id="c4", text="The trial enrolled 300 patients.",
                         sentence="The trial enrolled 300 patients.", error="judge timed out after 60 s"),
    ])
    start3 = start2 + len(text2) + 2
    p3 = build_paragraph_card("p3", start3, start3 + len(text3), text3, [
        build_claim_card(claim_id="c5", text=text3, sentence=text3, checkworthy=False, judged=[], rules=rules),
    ])
    return build_report(
        document="reports/demo.md", business=rules.name, paragraphs=[p1, p2, p3], created="2025-01-01T00:00:00+00:00",
        chunks={"who-2020#p3-c1": "WHO annual data. Mortality fell by 10% in 2019. Other text."},
    )
