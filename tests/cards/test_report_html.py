"""The self-contained HTML report: structure, escaping, anchors, Chinese."""

import re

import pytest

from factlab.cards.build import build_claim_card, build_paragraph_card, build_report
from factlab.cards.html import chunk_anchor, render_html, write_report_html
from factlab.rules.business import JudgedEvidence
from factlab.schema import Evidence, Judgment


def _ids(page):
    return set(re.findall(r'\sid="([^"]+)"', page))


def _fragment_links(page):
    return re.findall(r'href="#([^"]*)"', page)


def test_renders_small_report(small_report):
    page = render_html(small_report)
    assert page.startswith("<!DOCTYPE html>")
    assert '<meta charset="utf-8">' in page
    for paragraph in small_report.paragraphs:
        assert f'id="para-{paragraph.paragraph_id}"' in page
        assert f'class="para risk-{paragraph.risk_level}"' in page
    for _, claim in small_report.claims():
        assert claim.claim_id in page
    assert "wrong" in page and "contradict" in page and "0.92" in page
    assert "<details>" in page and "<summary>" in page
    # the claim sentence is marked inside the paragraph text with its risk colour
    assert '<mark class="hl risk-red" title="c1">Mortality fell by 20% in 2019.</mark>' in page


def test_self_contained(small_report):
    page = render_html(small_report)
    assert "<link" not in page
    assert not re.search(r"<script[^>]*\bsrc=", page)
    assert "@import" not in page and "url(" not in page
    assert page.count("<script>") == 1 and page.count("<style>") == 1


def test_side_list_riskiest_first(small_report):
    page = render_html(small_report)
    nav = page[page.index('<nav class="side">'):page.index("</nav>")]
    assert re.findall(r'data-target="para-(p\d)"', nav) == ["p1", "p2", "p3"]  # red, yellow, none


def test_side_list_reorders_by_risk(business):
    rules = business("default")
    calm = build_paragraph_card("first", 0, 5, "Calm.", [])
    bad = build_paragraph_card("second", 7, 12, "Bad.", [build_claim_card(
        claim_id="c1", text="Bad.", rules=rules,
        judged=[JudgedEvidence(Evidence("s", "s#p1-c1", "No.", tier=1), Judgment("contradict", 0.9))])])
    page = render_html(build_report(document="d", business="default", paragraphs=[calm, bad], created="t"))
    nav = page[page.index('<nav class="side">'):page.index("</nav>")]
    assert re.findall(r'data-target="para-(\w+)"', nav) == ["second", "first"]
    body = page[page.index("<main>"):]
    assert body.index('id="para-first"') < body.index('id="para-second"'), "the document keeps its order"


def test_every_referenced_anchor_exists(small_report):
    page = render_html(small_report)
    ids = _ids(page)
    links = _fragment_links(page)
    assert links, "the report links evidence to its chunks"
    assert set(links) <= ids
    for _, claim in small_report.claims():
        for item in claim.evidence:
            assert f'href="#{chunk_anchor(item.chunk_id)}"' in page
            assert f'id="{chunk_anchor(item.chunk_id)}"' in page


def test_sources_section_shows_chunk_text_and_lineage(small_report):
    page = render_html(small_report)
    sources = page[page.index('id="sources"'):]
    marked = '<mark class="snip risk-none" title="">Mortality fell by 10% in 2019.</mark>'
    assert f"WHO annual data. {marked} Other text." in sources
    assert '<a href="#para-p1">p1</a>, <a href="#para-p2">p2</a>' in sources  # who-2020 lineage
    assert "Full chunk text not stored" in sources  # blog-1 has only its snippet
    assert 'href="https://who.int/r"' in page


def test_escapes_everything(business):
    rules = business("default")
    evil = "<script>alert('x')</script>"
    judged = [JudgedEvidence(
        Evidence("s1", "s1#p1-c1\"><b>", f"snippet {evil}", tier=1, title=f"T {evil}", domain="d<i>"),
        Judgment("contradict", 0.9),
    )]
    claim = build_claim_card(claim_id=f"c{evil}", text=f"Claim {evil}", sentence=f"Claim {evil}", judged=judged,
                             rules=rules, sources=[{"source_id": "s1", "url": "javascript:alert(1)"}])
    paragraph = build_paragraph_card(f"p{evil}", 0, 10, f"Claim {evil} end.", [claim])
    report = build_report(document=f"doc{evil}.md", business=evil, paragraphs=[paragraph], created=evil,
                          chunks={"s1#p1-c1\"><b>": f"chunk {evil}"})
    page = render_html(report)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "<b>" not in page and "<i>" not in page
    assert "javascript:" not in page
    assert page.count("<script>") == 1
    assert set(_fragment_links(page)) <= _ids(page)


def test_chinese_report(business, tmp_path):
    rules = business("default")
    text = "青霉素于1928年被发现。"
    judged = [JudgedEvidence(Evidence("bk", "bk#p2-c1", "弗莱明于1928年发现青霉素。", tier=1, page=2, title="医学史"),
                             Judgment("support", 0.9))]
    claim = build_claim_card(claim_id="c1", text=text, sentence=text, judged=judged, rules=rules)
    report = build_report(document="报告.md", business="default", created="t",
                          paragraphs=[build_paragraph_card("p1", 0, len(text), text, [claim])])
    path = write_report_html(report, tmp_path / "r" / "report.html")
    page = path.read_text(encoding="utf-8")
    assert '<html lang="zh">' in page
    assert text in page and "弗莱明于1928年发现青霉素。" in page
    assert "事实核查报告" in page and "第 2 页" in page
    assert "无需处理：《医学史》（bk）第2页支持本句" in page


@pytest.mark.parametrize("chunk_id", ["who-2020#p1-c1", "a_b", "a_5f_b", "中文#p1", "x y"])
def test_chunk_anchor_is_safe_and_injective(chunk_id):
    anchor = chunk_anchor(chunk_id)
    assert re.fullmatch(r"chunk-[A-Za-z0-9_-]+", anchor)
    others = {"who-2020#p1-c1", "a_b", "a_5f_b", "中文#p1", "x y"} - {chunk_id}
    assert anchor not in {chunk_anchor(o) for o in others}


def test_only_checked_sentences_are_marked(small_report):
    page = render_html(small_report)
    assert "This is a remarkable achievement.</mark>" not in page  # p3's sentence is not check-worthy
    assert 'title="c2">Smith et al. (2019) found aspirin reduced stroke risk.</mark>' in page
