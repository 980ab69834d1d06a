"""Render a `Report` as ONE self-contained HTML file: inline CSS, a little vanilla JS, no network.

Layout: a side list of paragraphs riskiest first (click scrolls to the paragraph), the document with
each paragraph coloured by risk and its claim sentences marked, per claim its label / relation /
confidence, the suggested action, hints, citation check and expandable evidence, and a closing
"Sources" section with one anchor `chunk-<escaped chunk_id>` per cited chunk (see `chunk_anchor`).
All document text is escaped; only http(s) urls become links.

The markup is in Jinja2 templates (templates/report.html.j2 the page, templates/cells.html.j2 the notebook cells,
templates/cards.html.j2 the parts both show); this module gathers what they show and renders them.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import yaml
from jinja2.ext import Extension
from markupsafe import Markup

from factlab.atomic import write_text
from factlab.cards.model import EvidenceItem, LayerFinding, ParagraphCard, Report, ReviewItem, excerpt
from factlab.rules.business import risk_rank
from factlab.schema import LABELS, RISK_LEVELS, detect_language

STATIC_DIR = Path(__file__).resolve().parent / "static"  # report.css, report.js, ui.yaml: data, not Python
Segment = tuple[str, str | None, str]  # (text, risk or None when unmarked, title): a piece of highlighted text


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


def _escaped(value: object) -> Markup:
    """A template value escaped as `html.escape` escapes it (`&quot;`, `&#x27;`: the entities the report has always
    had), unless it is already markup (a macro's output, a `|safe` static file).

    >>> _escaped("<a title='x'>"), _escaped(Markup("<b>"))
    (Markup('&lt;a title=&#x27;x&#x27;&gt;'), Markup('<b>'))
    """
    if hasattr(value, "__html__"):
        return value
    return Markup(html.escape(str(value), quote=True))


class _JoinedLines(Extension):
    """A template's line breaks and the indentation after them are for its reader, not for the page: they are
    dropped before the template is parsed, so the markup can be laid out over lines and the page keeps the compact
    markup it has always had (no text between inline elements). A space the page needs at a line break is written
    `{{ " " }}`, a line break `{{ nl }}`."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return re.sub(r"\n[ \t]*", "", source)


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


def _highlight_segments(text: str, spans: list[tuple[int, int, str, str]]) -> list[Segment]:
    """`text` cut at the (start, end, risk, title) spans: each piece with the riskier level of the spans covering it
    (None where none does) and their titles, for the template to wrap in <mark>.

    >>> _highlight_segments("ab cd", [(0, 2, "red", "c1"), (1, 2, "yellow", "c2")])
    [('a', 'red', 'c1'), ('b', 'red', 'c1, c2'), (' cd', None, '')]
    """
    spans = [(s, e, r, t) for s, e, r, t in spans if 0 <= s < e <= len(text)]
    cuts = sorted({0, len(text), *(s for s, _, _, _ in spans), *(e for _, e, _, _ in spans)})
    out = []
    for left, right in zip(cuts, cuts[1:], strict=False):
        piece = text[left:right]
        covering = [(r, t) for s, e, r, t in spans if s <= left and right <= e]
        if covering:
            risk = max((r for r, _ in covering), key=risk_rank)
            titles = ", ".join(dict.fromkeys(t for _, t in covering if t))
            out.append((piece, risk, titles))
        else:
            out.append((piece, None, ""))
    return out


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


def _claim_segments(paragraph: ParagraphCard) -> list[Segment]:
    """The paragraph's text with its checked claim sentences marked in their risk colour."""
    return _highlight_segments(paragraph.text, _claim_spans(paragraph))


def _by_paragraph(report: Report) -> dict[str, list[LayerFinding]]:
    out: dict[str, list[LayerFinding]] = {}
    for finding in report.findings:
        out.setdefault(finding.paragraph_id, []).append(finding)
    return out


@dataclass
class _ChunkEntry:
    first: EvidenceItem
    snippets: list[str] = field(default_factory=list)


@dataclass
class _SourceChunk:
    """One chunk of the Sources section: the first evidence item citing it, its link, the paragraphs resting on its
    source, and its full text with the cited snippets marked (None when only the snippets are stored)."""

    chunk_id: str
    first: EvidenceItem
    url: str | None
    used_by: list[str]
    text: list[Segment] | None
    snippets: list[str]


def _source_chunks(report: Report) -> list[_SourceChunk]:
    chunks: dict[str, _ChunkEntry] = {}
    for _, claim in report.claims():
        for item in claim.evidence:
            entry = chunks.setdefault(item.chunk_id, _ChunkEntry(item))
            if item.snippet and item.snippet not in entry.snippets:
                entry.snippets.append(item.snippet)
    out = []
    for chunk_id, entry in chunks.items():
        item = entry.first
        full = report.chunks.get(chunk_id)
        text = None
        if full:
            spans = []
            for snippet in entry.snippets:
                at = full.find(snippet)
                if at >= 0:
                    spans.append((at, at + len(snippet), "none", ""))
            text = _highlight_segments(full, spans)
        out.append(_SourceChunk(chunk_id, item, _safe_url(item.url), report.lineage.get(item.source_id, []), text,
                                entry.snippets))
    return out


def _review_queue(report: Report) -> list[tuple[ReviewItem, str]]:
    """The review queue's entries, each with its claim's risk level (yellow when the claim is not in the report)."""
    by_pair = {(p.paragraph_id, c.claim_id): c for p, c in report.claims()}
    queue = []
    for entry in report.review_queue:
        claim = by_pair.get((entry.paragraph_id, entry.claim_id))
        queue.append((entry, claim.risk_level if claim else "yellow"))
    return queue


def _chips(report: Report) -> list[str]:
    """The summary's counts as the chips of the page's header.

    >>> _chips(Report("d", "default", "t", summary={"claims": 3, "labels": {"wrong": 1}, "paragraph_risk": {"red": 1}}))
    ['claims: 3', 'wrong: 1', '¶ red: 1']
    """
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
    return chips


def riskiest_first(paragraphs: list[ParagraphCard]) -> list[ParagraphCard]:
    """Paragraphs by risk, red first; document order within a level."""
    return sorted(paragraphs, key=lambda p: -risk_rank(p.risk_level))


@functools.cache
def _templates() -> jinja2.Environment:
    """The report's templates (factlab/cards/templates), every value escaped, with the helpers they call."""
    environment = jinja2.Environment(loader=jinja2.PackageLoader("factlab.cards", "templates"), autoescape=True,
                                     finalize=_escaped, undefined=jinja2.StrictUndefined, extensions=[_JoinedLines])
    environment.globals.update(chunk_anchor=chunk_anchor, paragraph_anchor=paragraph_anchor,
                               claim_anchor=claim_anchor, safe_url=_safe_url, excerpt=excerpt,
                               claim_segments=_claim_segments)
    return environment


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
    return _templates().get_template("report.html.j2").render(
        report=report, lang=lang, ui=ui_words(lang), css=_static("report.css"), js=_static("report.js"),
        extra_head=extra_head, extra_body=extra_body, chips=_chips(report),
        paragraphs=riskiest_first(report.paragraphs) if risk_first else report.paragraphs,
        ranked=riskiest_first(report.paragraphs), queue=_review_queue(report), findings=_by_paragraph(report),
        chunks=_source_chunks(report))


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
    return _templates().get_template("cells.html.j2").render(
        lang=lang, ui=ui_words(lang), css=scoped_css(_static("report.css"), ".factlab-cells"), chips=_chips(report),
        paragraphs=riskiest_first(report.paragraphs), findings=_by_paragraph(report))
