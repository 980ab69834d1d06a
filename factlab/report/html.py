"""Render a `Report` as ONE self-contained HTML file: inline CSS, a little vanilla JS, no network.

Layout: a side list of paragraphs riskiest first (click scrolls to the paragraph), the document with
each paragraph coloured by risk and its claim sentences marked, per claim its label / relation /
confidence, the suggested action, hints, citation check and expandable evidence, and a closing
"Sources" section with one anchor `chunk-<escaped chunk_id>` per cited chunk (see `chunk_anchor`).
All document text is escaped; only http(s) urls become links.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from factlab.cards.model import ClaimCard, EvidenceItem, ParagraphCard, Report, excerpt
from factlab.rules.business import risk_rank
from factlab.schema import LABELS, RISK_LEVELS, detect_language

_UI = {
    "en": {
        "title": "Fact-check report", "document": "Document", "business": "Business rules", "created": "Created",
        "paragraphs": "Paragraphs, riskiest first", "review": "Review queue", "sources": "Sources",
        "claims": "claims", "evidence": "Evidence", "no_evidence": "No evidence retrieved.",
        "open_chunk": "source chunk", "open_url": "open source", "tier": "tier", "page": "p.{page}",
        "used_by": "Paragraphs resting on this source", "not_checkworthy": "not check-worthy", "error": "error",
        "needs_review": "review", "citation": "Citation", "found": "found", "not_found": "not found among the sources",
        "supports": "a snippet of it supports the claim", "not_supports": "no snippet of it supports the claim",
        "expand": "Expand all evidence", "collapse": "Collapse all evidence", "empty_queue": "Nothing to review.",
        "hints": "Hints", "paragraph": "Paragraph", "snippets_only": "Full chunk text not stored; cited snippets:",
    },
    "zh": {
        "title": "事实核查报告", "document": "文档", "business": "业务规则", "created": "生成时间",
        "paragraphs": "段落（风险由高到低）", "review": "复核队列", "sources": "来源",
        "claims": "条陈述", "evidence": "证据", "no_evidence": "未检索到证据。",
        "open_chunk": "来源片段", "open_url": "打开来源", "tier": "级别", "page": "第 {page} 页",
        "used_by": "依赖该来源的段落", "not_checkworthy": "无需核查", "error": "出错",
        "needs_review": "待复核", "citation": "引用", "found": "已找到", "not_found": "来源中未找到",
        "supports": "其中有段落支持本句", "not_supports": "其中没有支持本句的段落",
        "expand": "展开全部证据", "collapse": "收起全部证据", "empty_queue": "无待复核项。",
        "hints": "提示", "paragraph": "段落", "snippets_only": "未保存完整片段文本；引用的摘录：",
    },
}

_CSS = """
:root { --red:#c5221f; --red-bg:#fce8e6; --yellow:#b06000; --yellow-bg:#fef7e0; --blue:#1967d2;
  --blue-bg:#e8f0fe; --none:#bdc1c6; --none-bg:transparent; --ink:#202124; --muted:#5f6368; --line:#dadce0; }
* { box-sizing: border-box; }
body { margin:0; color:var(--ink); background:#f8f9fa; line-height:1.6;
  font-family: system-ui, -apple-system, "Segoe UI", "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei",
  "Noto Sans CJK SC", "Source Han Sans SC", sans-serif; }
header { padding:16px 24px; background:#fff; border-bottom:1px solid var(--line); }
header h1 { margin:0 0 4px; font-size:1.3rem; }
.meta { color:var(--muted); font-size:.85rem; }
.meta span + span::before { content:" · "; }
.chips { margin-top:8px; display:flex; flex-wrap:wrap; gap:6px; }
.chip { border:1px solid var(--line); border-radius:12px; padding:0 10px; font-size:.8rem; background:#fff; }
.layout { display:grid; grid-template-columns: 300px minmax(0,1fr); gap:0; }
nav.side { position:sticky; top:0; align-self:start; max-height:100vh; overflow:auto; padding:12px 14px;
  border-right:1px solid var(--line); background:#fff; font-size:.85rem; }
nav.side h2 { font-size:.9rem; margin:12px 0 6px; }
nav.side ol { list-style:none; margin:0; padding:0; }
nav.side li a { display:block; padding:4px 6px; margin-bottom:3px; border-radius:4px; color:var(--ink);
  text-decoration:none; border-left:4px solid var(--none); }
nav.side li a:hover { background:#f1f3f4; }
main { padding:16px 24px 48px; min-width:0; }
.para { background:#fff; border:1px solid var(--line); border-left:6px solid var(--none); border-radius:6px;
  padding:10px 14px; margin-bottom:14px; scroll-margin-top:12px; }
.para.flash { box-shadow:0 0 0 3px #fbbc04; transition: box-shadow .3s; }
.para-head { font-size:.8rem; color:var(--muted); }
.para-text { margin:6px 0 8px; white-space:pre-wrap; }
.risk-red { border-left-color:var(--red) !important; } .para.risk-red { background:var(--red-bg); }
.risk-yellow { border-left-color:var(--yellow) !important; } .para.risk-yellow { background:var(--yellow-bg); }
.risk-blue { border-left-color:var(--blue) !important; } .para.risk-blue { background:var(--blue-bg); }
mark.hl { background:transparent; border-bottom:2px solid var(--none); padding:0 1px; }
mark.hl.risk-red { border-bottom-color:var(--red); background:rgba(197,34,31,.12); }
mark.hl.risk-yellow { border-bottom-color:var(--yellow); background:rgba(249,171,0,.18); }
mark.hl.risk-blue { border-bottom-color:var(--blue); background:rgba(26,115,232,.10); }
.claim { background:#fff; border:1px solid var(--line); border-left:4px solid var(--none); border-radius:4px;
  padding:8px 10px; margin:6px 0; }
.badge { display:inline-block; font-size:.75rem; border-radius:3px; padding:0 6px; margin-right:4px;
  border:1px solid var(--line); background:#f1f3f4; }
.badge.label-correct { background:#e6f4ea; border-color:#137333; color:#137333; }
.badge.label-wrong { background:var(--red-bg); border-color:var(--red); color:var(--red); }
.badge.label-disputed { background:var(--yellow-bg); border-color:var(--yellow); color:var(--yellow); }
.badge.label-unverifiable { background:var(--blue-bg); border-color:var(--blue); color:var(--blue); }
.badge.error, .badge.review { background:var(--yellow-bg); border-color:var(--yellow); color:var(--yellow); }
.claim-text { margin:4px 0; font-weight:600; }
.action { margin:4px 0; }
.action::before { content:"\\2192  "; color:var(--muted); }
ul.hints { margin:2px 0 4px 18px; padding:0; color:var(--muted); font-size:.85rem; }
.citation { font-size:.85rem; margin:2px 0; }
details { margin-top:4px; } summary { cursor:pointer; color:var(--muted); font-size:.85rem; }
ol.evidence { margin:4px 0; padding-left:20px; }
ol.evidence li { margin-bottom:6px; font-size:.9rem; }
.ev-meta { color:var(--muted); font-size:.8rem; }
blockquote { margin:4px 0; padding:4px 10px; border-left:3px solid var(--line); background:#f8f9fa; }
.rel-support { color:#137333; } .rel-contradict { color:var(--red); } .rel-partial_support { color:var(--yellow); }
section.sources { margin-top:28px; }
.chunk { background:#fff; border:1px solid var(--line); border-radius:6px; padding:8px 12px; margin-bottom:10px;
  scroll-margin-top:12px; }
.chunk h3 { font-size:.95rem; margin:0; }
.chunk .text { white-space:pre-wrap; }
.chunk mark { background:#fff3bf; }
.chunk:target, .claim:target { box-shadow:0 0 0 3px #fbbc04; }
button.toggle { font-size:.8rem; margin:6px 0; }
@media (max-width: 800px) { .layout { grid-template-columns: 1fr; } nav.side { position:static; max-height:none; } }
"""

_JS = """
(function () {
  function flash(id) {
    var el = document.getElementById(id);
    if (!el) return;
    el.scrollIntoView({behavior: "smooth", block: "start"});
    el.classList.add("flash");
    setTimeout(function () { el.classList.remove("flash"); }, 1500);
  }
  document.querySelectorAll("nav.side a[data-target]").forEach(function (a) {
    a.addEventListener("click", function (ev) {
      ev.preventDefault();
      var id = a.getAttribute("data-target");
      history.replaceState(null, "", "#" + id);
      flash(id);
    });
  });
  var button = document.getElementById("toggle-evidence");
  if (button) {
    button.addEventListener("click", function () {
      var open = button.getAttribute("data-open") !== "1";
      document.querySelectorAll("main details").forEach(function (d) { d.open = open; });
      button.setAttribute("data-open", open ? "1" : "0");
      button.textContent = open ? button.getAttribute("data-collapse") : button.getAttribute("data-expand");
    });
  }
})();
"""


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def anchor_id(prefix: str, key: str) -> str:
    """An HTML id / URL fragment safe for any key: [A-Za-z0-9-] kept, every other char as `_<hex>_`.

    The encoding is injective (`_` itself is encoded), so distinct keys never share an anchor.

    >>> anchor_id("chunk", "who-2020#p1-c1")
    'chunk-who-2020_23_p1-c1'
    >>> anchor_id("chunk", "a_b")
    'chunk-a_5f_b'
    """
    kept = (ch if (ch.isascii() and (ch.isalnum() or ch == "-")) else f"_{ord(ch):x}_" for ch in key)
    return f"{prefix}-" + "".join(kept)


def chunk_anchor(chunk_id: str) -> str:
    """Anchor id of a chunk in the Sources section.

    >>> chunk_anchor("nih-1#p2-c3")
    'chunk-nih-1_23_p2-c3'
    """
    return anchor_id("chunk", chunk_id)


def paragraph_anchor(paragraph_id: str) -> str:
    return anchor_id("para", paragraph_id)


def claim_anchor(paragraph_id: str, claim_id: str) -> str:
    return anchor_id("claim", f"{paragraph_id}/{claim_id}")


def _safe_url(url: str) -> str | None:
    """Only http(s) urls become links (a `javascript:` url in source metadata must not run).

    >>> _safe_url("javascript:alert(1)") is None
    True
    >>> _safe_url(" https://who.int/x ")
    'https://who.int/x'
    """
    url = url.strip()
    return url if re.match(r"^https?://", url, flags=re.IGNORECASE) else None


def _highlight(text: str, spans: list[tuple[int, int, str, str]], mark_class: str = "hl") -> str:
    """Escape `text`, wrapping each (start, end, risk, title) span in <mark>; overlaps take the riskier level."""
    spans = [(s, e, r, t) for s, e, r, t in spans if 0 <= s < e <= len(text)]
    cuts = sorted({0, len(text), *(s for s, _, _, _ in spans), *(e for _, e, _, _ in spans)})
    out = []
    for left, right in zip(cuts, cuts[1:], strict=False):
        piece = _esc(text[left:right])
        covering = [(r, t) for s, e, r, t in spans if s <= left and right <= e]
        if covering:
            risk = max((r for r, _ in covering), key=risk_rank)
            titles = ", ".join(dict.fromkeys(t for _, t in covering if t))
            out.append(f'<mark class="{mark_class} risk-{_esc(risk)}" title="{_esc(titles)}">{piece}</mark>')
        else:
            out.append(piece)
    return "".join(out)


def _claim_spans(paragraph: ParagraphCard) -> list[tuple[int, int, str, str]]:
    spans = []
    for claim in paragraph.claims:
        if not claim.checkworthy:
            continue  # nothing was checked there: leave the sentence unmarked
        needle = claim.sentence.strip()
        at = paragraph.text.find(needle) if needle else -1
        if at >= 0:
            spans.append((at, at + len(needle), claim.risk_level, claim.claim_id))
    return spans


def _evidence_html(item: EvidenceItem, ui: dict[str, str]) -> str:
    title = item.title or item.source_id
    meta = [
        f"<strong>{_esc(title)}</strong>",
        _esc(item.source_id),
        f"{_esc(ui['tier'])} {_esc(item.tier)}",
    ]
    if item.domain:
        meta.append(_esc(item.domain))
    meta.append(_esc(ui["page"].format(page=item.page)))
    meta.append(f'<span class="rel-{_esc(item.relation)}">{_esc(item.relation)} {item.confidence:.2f}</span>')
    links = [f'<a href="#{_esc(chunk_anchor(item.chunk_id))}">{_esc(ui["open_chunk"])} {_esc(item.chunk_id)}</a>']
    url = _safe_url(item.url)
    if url:
        links.append(f'<a href="{_esc(url)}" target="_blank" rel="noopener noreferrer">{_esc(ui["open_url"])}</a>')
    return (
        f'<li><div class="ev-meta">{" · ".join(meta)}</div>'
        f"<blockquote>{_esc(item.snippet)}</blockquote>{' · '.join(links)}</li>"
    )


def _claim_html(paragraph: ParagraphCard, claim: ClaimCard, ui: dict[str, str]) -> str:
    badges = []
    if claim.error:
        badges.append(f'<span class="badge error">{_esc(ui["error"])}</span>')
    elif not claim.checkworthy or claim.label is None:
        badges.append(f'<span class="badge">{_esc(ui["not_checkworthy"])}</span>')
    else:
        badges.append(f'<span class="badge label-{_esc(claim.label)}">{_esc(claim.label)}</span>')
        badges.append(f'<span class="badge">{_esc(claim.relation)}</span>')
        badges.append(f'<span class="badge">{claim.confidence:.2f}</span>')
    if claim.review:
        badges.append(f'<span class="badge review">{_esc(ui["needs_review"])}</span>')
    anchor = claim_anchor(paragraph.paragraph_id, claim.claim_id)
    parts = [
        f'<div class="claim risk-{_esc(claim.risk_level)}" id="{_esc(anchor)}">',
        f'<div class="claim-head">{"".join(badges)}<span class="badge">{_esc(claim.claim_id)}</span></div>',
        f'<p class="claim-text">{_esc(claim.text)}</p>',
        f'<p class="action">{_esc(claim.suggested_action)}</p>',
    ]
    if claim.hints:
        parts.append('<ul class="hints">' + "".join(f"<li>{_esc(h)}</li>" for h in claim.hints) + "</ul>")
    if claim.citation is not None:
        c = claim.citation
        found = f"{ui['found']} ({c.matched_source_id})" if c.identity_exists else ui["not_found"]
        content = ("; " + (ui["supports"] if c.content_supports else ui["not_supports"])) if c.identity_exists else ""
        parts.append(f'<p class="citation">{_esc(ui["citation"])} “{_esc(c.cited)}”: {_esc(found + content)}</p>')
    if claim.checkworthy and not claim.error:
        body = (
            '<ol class="evidence">' + "".join(_evidence_html(e, ui) for e in claim.evidence) + "</ol>"
            if claim.evidence
            else f"<p>{_esc(ui['no_evidence'])}</p>"
        )
        parts.append(f"<details><summary>{_esc(ui['evidence'])} ({len(claim.evidence)})</summary>{body}</details>")
    parts.append("</div>")
    return "".join(parts)


def _paragraph_html(paragraph: ParagraphCard, ui: dict[str, str]) -> str:
    anchor = paragraph_anchor(paragraph.paragraph_id)
    return (
        f'<article class="para risk-{_esc(paragraph.risk_level)}" id="{_esc(anchor)}">'
        f'<div class="para-head">{_esc(ui["paragraph"])} {_esc(paragraph.paragraph_id)} · '
        f"[{paragraph.start}, {paragraph.end}) · {_esc(paragraph.risk_level)} · "
        f"{len(paragraph.claims)} {_esc(ui['claims'])}</div>"
        f'<p class="para-text">{_highlight(paragraph.text, _claim_spans(paragraph))}</p>'
        f'<div class="claims">{"".join(_claim_html(paragraph, c, ui) for c in paragraph.claims)}</div>'
        "</article>"
    )


@dataclass
class _ChunkEntry:
    first: EvidenceItem
    snippets: list[str] = field(default_factory=list)


def _sources_html(report: Report, ui: dict[str, str]) -> str:
    chunks: dict[str, _ChunkEntry] = {}
    for _, claim in report.claims():
        for item in claim.evidence:
            entry = chunks.setdefault(item.chunk_id, _ChunkEntry(item))
            if item.snippet and item.snippet not in entry.snippets:
                entry.snippets.append(item.snippet)
    blocks = []
    for chunk_id, entry in chunks.items():
        item = entry.first
        meta = [_esc(item.source_id), _esc(chunk_id), f"{_esc(ui['tier'])} {_esc(item.tier)}"]
        if item.domain:
            meta.append(_esc(item.domain))
        url = _safe_url(item.url)
        if url:
            meta.append(f'<a href="{_esc(url)}" target="_blank" rel="noopener noreferrer">{_esc(url)}</a>')
        used = report.lineage.get(item.source_id, [])
        used_html = ""
        if used:
            links = ", ".join(f'<a href="#{_esc(paragraph_anchor(p))}">{_esc(p)}</a>' for p in used)
            used_html = f'<div class="meta">{_esc(ui["used_by"])}: {links}</div>'
        full = report.chunks.get(chunk_id)
        if full:
            spans = []
            for snippet in entry.snippets:
                at = full.find(snippet)
                if at >= 0:
                    spans.append((at, at + len(snippet), "none", ""))
            text_html = f'<div class="text">{_highlight(full, spans, mark_class="snip")}</div>'
        else:
            text_html = f'<div class="meta">{_esc(ui["snippets_only"])}</div>' + "".join(
                f"<blockquote>{_esc(s)}</blockquote>" for s in entry.snippets
            )
        blocks.append(
            f'<div class="chunk" id="{_esc(chunk_anchor(chunk_id))}"><h3>{_esc(item.title or item.source_id)}</h3>'
            f'<div class="meta">{" · ".join(meta)}</div>{used_html}{text_html}</div>'
        )
    return f'<section class="sources" id="sources"><h2>{_esc(ui["sources"])}</h2>{"".join(blocks)}</section>'


def _side_html(report: Report, ui: dict[str, str]) -> str:
    ranked = sorted(report.paragraphs, key=lambda p: -risk_rank(p.risk_level))  # stable: document order in a level
    items = []
    for p in ranked:
        target = paragraph_anchor(p.paragraph_id)
        items.append(
            f'<li><a href="#{_esc(target)}" data-target="{_esc(target)}" class="risk-{_esc(p.risk_level)}">'
            f"<strong>{_esc(p.paragraph_id)}</strong> · {_esc(p.risk_level)} · {len(p.claims)} {_esc(ui['claims'])}"
            f"<br>{_esc(excerpt(p.text, 60))}</a></li>"
        )
    by_pair = {(p.paragraph_id, c.claim_id): c for p, c in report.claims()}
    queue = []
    for entry in report.review_queue:
        claim = by_pair.get((entry.paragraph_id, entry.claim_id))
        risk = claim.risk_level if claim else "yellow"
        target = claim_anchor(entry.paragraph_id, entry.claim_id)
        queue.append(
            f'<li><a href="#{_esc(target)}" data-target="{_esc(target)}" class="risk-{_esc(risk)}">'
            f"<strong>{_esc(entry.paragraph_id)}/{_esc(entry.claim_id)}</strong><br>{_esc(excerpt(entry.reason, 90))}"
            "</a></li>"
        )
    queue_html = "<ol>" + "".join(queue) + "</ol>" if queue else f"<p>{_esc(ui['empty_queue'])}</p>"
    return (
        f'<nav class="side"><h2>{_esc(ui["paragraphs"])}</h2><ol>{"".join(items)}</ol>'
        f'<h2>{_esc(ui["review"])} ({len(report.review_queue)})</h2>{queue_html}</nav>'
    )


def _chips(report: Report) -> str:
    summary = report.summary
    chips = []
    for key in ("paragraphs", "claims"):
        if key in summary:
            chips.append(f"{key}: {summary[key]}")
    labels = summary.get("labels", {})
    chips.extend(f"{label}: {labels[label]}" for label in LABELS if label in labels)
    for key in ("errors", "review", "not_checkworthy"):
        if key in summary:
            chips.append(f"{key}: {summary[key]}")
    risks = summary.get("paragraph_risk", {})
    chips.extend(f"¶ {level}: {risks[level]}" for level in RISK_LEVELS if level in risks)
    return '<div class="chips">' + "".join(f'<span class="chip">{_esc(c)}</span>' for c in chips) + "</div>"


def render_html(report: Report) -> str:
    """Render the whole report as one self-contained HTML page (UTF-8, no external resources).

    Args:
        report: the report built by `factlab.cards.model.build_report`.

    Returns:
        The HTML text. UI words are Chinese when the document text is mostly Chinese.
    """
    lang = detect_language("".join(p.text for p in report.paragraphs) or report.document)
    ui = _UI[lang]
    return "".join(
        [
            f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
            f"<title>{_esc(ui['title'])}: {_esc(report.document)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n",
            f"<header><h1>{_esc(ui['title'])}</h1>",
            f'<div class="meta"><span>{_esc(ui["document"])}: {_esc(report.document)}</span>',
            f"<span>{_esc(ui['business'])}: {_esc(report.business)}</span>",
            f"<span>{_esc(ui['created'])}: {_esc(report.created)}</span></div>",
            _chips(report),
            f'<button type="button" class="toggle" id="toggle-evidence" data-expand="{_esc(ui["expand"])}" '
            f'data-collapse="{_esc(ui["collapse"])}">{_esc(ui["expand"])}</button>',
            "</header>\n",
            '<div class="layout">',
            _side_html(report, ui),
            '<main><section class="document">',
            "".join(_paragraph_html(p, ui) for p in report.paragraphs),
            "</section>",
            _sources_html(report, ui),
            "</main></div>\n",
            f"<script>{_JS}</script>\n</body>\n</html>\n",
        ]
    )


def write_report_html(report: Report, path: str | Path) -> Path:
    """Write `render_html(report)` to `path` as UTF-8; return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report), encoding="utf-8")
    return path
