"""Render a `Report` as ONE self-contained HTML file: inline CSS, a little vanilla JS, no network.

Layout: a side list of paragraphs riskiest first (click scrolls to the paragraph), the document with
each paragraph coloured by risk and its claim sentences marked, per claim its label / relation /
confidence, the suggested action, hints, citation check and expandable evidence, and a closing
"Sources" section with one anchor `chunk-<escaped chunk_id>` per cited chunk (see `chunk_anchor`).
All document text is escaped; only http(s) urls become links.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from factlab.atomic import write_text
from factlab.cards.model import ClaimCard, EvidenceItem, LayerFinding, ParagraphCard, Report, excerpt
from factlab.rules.business import risk_rank
from factlab.schema import LABELS, RISK_LEVELS, detect_language

STATIC_DIR = Path(__file__).resolve().parent / "static"  # report.css, report.js, ui.yaml: data, not Python


@functools.cache
def _static(name: str) -> str:
    return (STATIC_DIR / name).read_text(encoding="utf-8")


@functools.cache
def ui_words(lang: str) -> dict[str, str]:
    """The report's interface words in `lang` (static/ui.yaml).

    >>> ui_words("zh")["sources"]
    '来源'
    """
    return yaml.safe_load(_static("ui.yaml"))[lang]





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
        f'<div class="claim risk-{_esc(claim.risk_level)}" id="{_esc(anchor)}" '
        f'data-paragraph="{_esc(paragraph.paragraph_id)}" data-claim="{_esc(claim.claim_id)}">',
        f'<div class="claim-head">{"".join(badges)}<span class="badge">{_esc(claim.claim_id)}</span></div>',
        f'<p class="claim-text">{_esc(claim.text)}</p>',
        f'<p class="action">{_esc(claim.suggested_action)}</p>',
    ]
    if claim.reused and claim.reused.get("kind") == "near":
        parts.append(f'<p class="reused">{_esc(ui["reused"])}: “{_esc(claim.reused["claim"])}”</p>')
    if claim.hints:
        parts.append('<ul class="hints">' + "".join(f"<li>{_esc(h)}</li>" for h in claim.hints) + "</ul>")
    if claim.newest_source:
        newest = claim.newest_source
        parts.append(f'<p class="newest">newest source: {_esc(newest.get("title") or newest.get("source_id", ""))} '
                     f'({_esc(str(newest.get("date", "")))})</p>')
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


def _findings_html(findings: list[LayerFinding], ui: dict[str, str]) -> str:
    if not findings:
        return ""
    items = "".join(
        f'<li class="finding layer-{_esc(f.layer)}"><span class="badge">{_esc(f.layer)}</span>'
        f'<span class="badge">{_esc(f.kind)}</span> “{_esc(f.keyword)}”: {_esc(f.message)} '
        f'(<a href="#{_esc(paragraph_anchor(f.other_paragraph_id))}">{_esc(f.evidence)}</a>)'
        f'<div class="action">{_esc(f.suggested_action)}</div></li>' for f in findings)
    return f'<div class="findings"><strong>{_esc(ui["findings"])}</strong><ul>{items}</ul></div>'


def _paragraph_html(paragraph: ParagraphCard, ui: dict[str, str], findings: list[LayerFinding] = ()) -> str:
    anchor = paragraph_anchor(paragraph.paragraph_id)
    routed = (f" · {_esc(paragraph.paragraph_type)}: {_esc(', '.join(paragraph.layers))}"
              if paragraph.paragraph_type or paragraph.layers else "")
    return (
        f'<article class="para risk-{_esc(paragraph.risk_level)}" id="{_esc(anchor)}">'
        f'<div class="para-head">{_esc(ui["paragraph"])} {_esc(paragraph.paragraph_id)} · '
        f"[{paragraph.start}, {paragraph.end}) · {_esc(paragraph.risk_level)} · "
        f"{len(paragraph.claims)} {_esc(ui['claims'])}{routed}</div>"
        f'<p class="para-text">{_highlight(paragraph.text, _claim_spans(paragraph))}</p>'
        f'<div class="claims">{"".join(_claim_html(paragraph, c, ui) for c in paragraph.claims)}</div>'
        f"{_findings_html(list(findings), ui)}</article>"
    )


def _by_paragraph(report: Report) -> dict[str, list[LayerFinding]]:
    out: dict[str, list[LayerFinding]] = {}
    for finding in report.findings:
        out.setdefault(finding.paragraph_id, []).append(finding)
    return out


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
    skipped = ""
    if report.skipped_sources:
        items = "".join(f"<li>{_esc(line)}</li>" for line in report.skipped_sources)
        skipped = f'<div class="skipped" id="skipped-sources"><h3>{_esc(ui["skipped"])}</h3><ul>{items}</ul></div>'
    return (f'<section class="sources" id="sources"><h2>{_esc(ui["sources"])}</h2>{skipped}{"".join(blocks)}'
            "</section>")


def _side_html(report: Report, ui: dict[str, str]) -> str:
    ranked = riskiest_first(report.paragraphs)
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
    for key in ("errors", "review", "not_checkworthy", "skipped_sources"):
        if key in summary:
            chips.append(f"{key}: {summary[key]}")
    for layer, count in summary.get("findings", {}).items():
        chips.append(f"{layer} findings: {count}")
    risks = summary.get("paragraph_risk", {})
    chips.extend(f"¶ {level}: {risks[level]}" for level in RISK_LEVELS if level in risks)
    return '<div class="chips">' + "".join(f'<span class="chip">{_esc(c)}</span>' for c in chips) + "</div>"


def riskiest_first(paragraphs: list[ParagraphCard]) -> list[ParagraphCard]:
    """Paragraphs by risk, red first; document order within a level."""
    return sorted(paragraphs, key=lambda p: -risk_rank(p.risk_level))


def render_html(report: Report, risk_first: bool = False, extra_head: str = "", extra_body: str = "") -> str:
    """Render the whole report as one self-contained HTML page (UTF-8, no external resources).

    Args:
        report: the report built by `factlab.cards.build.build_report`.
        risk_first: the document's paragraphs riskiest first (the review app) instead of in document order.
        extra_head, extra_body: trusted markup added at the end of <head> / <body> (the review app's style and
            script); never document text.

    Returns:
        The HTML text. UI words are Chinese when the document text is mostly Chinese.
    """
    lang = detect_language("".join(p.text for p in report.paragraphs) or report.document)
    ui = ui_words(lang)
    paragraphs = riskiest_first(report.paragraphs) if risk_first else report.paragraphs
    found = _by_paragraph(report)
    return "".join(
        [
            f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
            f"<title>{_esc(ui['title'])}: {_esc(report.document)}</title>\n",
            f"<style>{_static('report.css')}</style>\n{extra_head}</head>\n<body>\n",
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
            "".join(_paragraph_html(p, ui, found.get(p.paragraph_id, [])) for p in paragraphs),
            "</section>",
            _sources_html(report, ui),
            "</main></div>\n",
            f"<script>{_static('report.js')}</script>\n{extra_body}</body>\n</html>\n",
        ]
    )


def write_report_html(report: Report, path: str | Path) -> Path:
    """Write `render_html(report)` to `path` as UTF-8, atomically; return the path."""
    return write_text(path, render_html(report))


def scoped_css(css: str, scope: str) -> str:
    """`css` with every rule limited to elements under `scope` (`:root`, `html` and `body` become the scope itself),
    so the report's style can sit inside a notebook page without restyling it.

    >>> scoped_css("body { margin:0 } .a, .b:hover { x:1 } @media (max-width: 8px) { .c { y:2 } }", ".fl")
    '.fl { margin:0 }\\n.fl .a, .fl .b:hover { x:1 }\\n@media (max-width: 8px) { .fl .c { y:2 } }'
    """
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    out, at = [], 0
    while True:
        brace = css.find("{", at)
        if brace < 0:
            break
        head = css[at:brace].strip()
        if head.startswith("@"):  # a block of rules: scope its inside
            depth, end = 1, brace + 1
            while depth and end < len(css):
                depth += {"{": 1, "}": -1}.get(css[end], 0)
                end += 1
            out.append(f"{head} {{ {scoped_css(css[brace + 1:end - 1], scope)} }}")
            at = end
            continue
        close = css.find("}", brace)
        selectors = []
        for selector in (part.strip() for part in head.split(",")):
            first, _, rest = selector.partition(" ")
            if first in (":root", "html", "body"):
                selectors.append(f"{scope} {rest}".strip())
            else:
                selectors.append(f"{scope} {selector}")
        out.append(f"{', '.join(selectors)} {{ {css[brace + 1:close].strip()} }}")
        at = close + 1
    return "\n".join(out)


def render_cells(report: Report) -> str:
    """The report's paragraphs as cells, riskiest first, each with its claim cards: an HTML fragment with its own
    scoped style (what a notebook shows for a `Report`, see `Report._repr_html_`)."""
    lang = detect_language("".join(p.text for p in report.paragraphs) or report.document)
    ui = ui_words(lang)
    found = _by_paragraph(report)
    cells = "".join(_paragraph_html(p, ui, found.get(p.paragraph_id, [])) for p in riskiest_first(report.paragraphs))
    return (f'<div class="factlab-cells" lang="{lang}"><style>{scoped_css(_static("report.css"), ".factlab-cells")}'
            f"</style>{_chips(report)}{cells}</div>")
