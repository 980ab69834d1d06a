"""The document flow every checker shares, over the parts it is built with (`Parts`): paragraphs -> routing -> the
checker's own paragraph step (claims) and claims step (cards) -> logic -> the report.

Every stage is a function over plain values, so evaluate.py can run a checker with one stage's output replaced by gold
(`fixed=`) and rerun only what follows. Claims run under their own error isolation: one failing claim becomes an error
card, never a failed document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from factlab.cards.build import build_error_card, build_paragraph_card, build_report
from factlab.cards.model import ClaimCard, ParagraphCard
from factlab.checkers.layers import DocumentLayers
from factlab.checkers.verdict import Verdict
from factlab.matching.segment import sentence_rows, source_sentence
from factlab.matching.text import grounded
from factlab.models.errors import classify_exception
from factlab.pipeline.meter import StageMeter
from factlab.pipeline.trace import ClaimTrace, DocumentTrace, ParagraphTrace
from factlab.programs.extract_claims import extraction_input, summarise_context
from factlab.schema import StageName


@dataclass
class Parts:
    """What a checker is made of.

    Attributes:
        name: the checker's name on its cards.
        stages: stage name -> built stage (`factlab.stages.build.Stage`, or any callable answering the stage's fields).
        retriever: the evidence search (`factlab.retrieval.retriever.Retriever`, or anything with `search(queries, k,
            claim)`, `index.sources` and `issues`).
        verdict: judged evidence -> card (`factlab.checkers.verdict.Verdict`).
        layers: the document-level layers (`factlab.checkers.layers.DocumentLayers`).
        meter: per-stage calls, seconds and tokens.
        progress: show progress bars.
        sources: the source records; empty = the retriever's index's.
    """

    name: str
    stages: dict
    retriever: Any
    verdict: Verdict
    layers: DocumentLayers
    meter: StageMeter
    progress: bool = True
    sources: list = field(default_factory=list)

    def source_records(self) -> list:
        """The source records (titles, urls, dates: for cards, citation and timeliness checks): `sources` when given,
        else the retriever's index's as they are now (a web search adds the pages it fetched as it goes)."""
        index = getattr(self.retriever, "index", None)
        return self.sources or (list(index.sources.values()) if index is not None else [])

    @property
    def skipped_sources(self) -> list[str]:
        """The sources that could not be read ("path[:line]: reason"), shown on the report."""
        return [str(issue) for issue in getattr(self.retriever, "issues", [])]

    @property
    def business(self) -> str:
        return self.verdict.rules.name


class BuiltOfParts:
    """What every checker built of `Parts` answers the same way: its parts under the `Checker` protocol's names,
    `check` (the report of `run`) and `assemble` (the report of paragraph traces, which the funnel reuses)."""

    parts: Parts

    name = property(lambda self: self.parts.name)
    stages = property(lambda self: self.parts.stages)
    retriever = property(lambda self: self.parts.retriever)
    meter = property(lambda self: self.parts.meter)
    rules = property(lambda self: self.parts.verdict.rules)

    def check(self, document: str, name: str = "document"):
        return self.run(document, name=name).report

    def assemble(self, paragraphs: list[dict], units: list[ParagraphTrace], name: str) -> DocumentTrace:
        return assemble(self.parts, paragraphs, units, name)


def run_document(parts: Parts, document: str, name: str, fixed: Mapping[str, Any],
                 paragraph: Callable[[int, list[dict], Mapping[str, Any]], ParagraphTrace],
                 claims: Callable[[list[ClaimTrace]], None], workers: int = 1) -> DocumentTrace:
    """One document through the flow: `paragraph(index, paragraphs, fixed)` gives a fact-checked paragraph's claims,
    `claims(todo)` cards every claim that has none yet."""
    paragraphs = fixed[StageName.PARAGRAPHS] if StageName.PARAGRAPHS in fixed else split(parts, document)
    texts = [p["text"] for p in paragraphs]
    bar = tqdm(total=len(paragraphs), desc="paragraphs", unit="paragraph",
               disable=not parts.progress or len(paragraphs) < 2)

    def one(index: int) -> ParagraphTrace:
        kind, layers = parts.layers.route(paragraphs[index]["text"], parts.meter, parts.business)
        if "facts" in layers:
            unit = paragraph(index, paragraphs, fixed)
        else:  # the routing table keeps facts off this type of paragraph: say so on every sentence
            reason = f"not checked for facts: a {kind} paragraph (routing {parts.layers.routing.name})"
            unit = ParagraphTrace(sentences=[{**row, "checkworthy": False, "reason": reason}
                                             for row in sentence_rows(paragraphs[index])], worthy="")
        unit.paragraph_type, unit.layers = kind, layers
        if "logic" in layers:
            parts.layers.check_logic(unit, texts, index, parts.meter)
        bar.update(1)
        return unit

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        units = list(pool.map(one, range(len(paragraphs))))
    bar.close()
    claims([t for unit in units for t in unit.claims if t.card is None])
    return assemble(parts, paragraphs, units, name)


def split(parts: Parts, document: str) -> list[dict]:
    return parts.meter.call(StageName.PARAGRAPHS, parts.stages[StageName.PARAGRAPHS], document=document).paragraphs


def assemble(parts: Parts, paragraphs: list[dict], units: list[ParagraphTrace], name: str) -> DocumentTrace:
    """The document's trace and report from its paragraphs' traces (every claim carded)."""
    cards = [paragraph_card(index, paragraph, unit) for index, (paragraph, unit)
             in enumerate(zip(paragraphs, units, strict=True))]
    for card, unit in zip(cards, units, strict=True):  # routed once, in run_document()
        card.paragraph_type, card.layers = unit.paragraph_type, list(unit.layers)
    chunks = {e.chunk_id: e.text for unit in units for t in unit.claims for e in t.evidence}
    report = build_report(document=name, business=parts.business, paragraphs=cards, chunks=chunks,
                          skipped_sources=parts.skipped_sources, findings=parts.layers.findings(cards, units))
    egress = getattr(parts.retriever, "egress", None)
    if egress is not None:  # a web search: every query sent and every host asked, on the report
        report.egress = egress()
    report.summary["ungrounded_claims"] = sum(len(u.ungrounded) for u in units)
    report.summary["checker"] = parts.name
    return DocumentTrace(paragraphs, units, report)


def check_claim(parts: Parts, trace: ClaimTrace, fixed: Mapping[str, Any] | None = None, k: int = 5,
                after: Callable[[ClaimTrace], None] | None = None) -> ClaimTrace:
    """One claim through vertical -> queries -> retrieval -> judge -> rules; `fixed[stage]` replaces a stage's output
    (gold substitution); `after(trace)` runs last (a second opinion: the multi-round agent); errors become an error
    card."""
    fixed = fixed or {}
    stages, meter = parts.stages, parts.meter
    stage = StageName.VERTICAL
    try:
        trace.vertical = fixed[StageName.VERTICAL] if StageName.VERTICAL in fixed else meter.call(
            StageName.VERTICAL, stages[StageName.VERTICAL], claim=trace.text).vertical
        stage = StageName.QUERY_REWRITE
        trace.queries = list(fixed[StageName.QUERY_REWRITE]) if StageName.QUERY_REWRITE in fixed else list(meter.call(
            StageName.QUERY_REWRITE, stages[StageName.QUERY_REWRITE], claim=trace.text).queries)
        stage = "retrieval"
        where = {"vertical": trace.vertical} if getattr(parts.retriever, "takes_vertical", False) else {}
        trace.evidence = list(fixed["retrieval"]) if "retrieval" in fixed else meter.call(
            "retrieval", parts.retriever.search, queries=trace.queries, k=k, claim=trace.text, **where)
        stage = StageName.JUDGE
        if StageName.JUDGE in fixed:
            trace.judgments = list(fixed[StageName.JUDGE])
        elif trace.evidence:
            pred = meter.call(StageName.JUDGE, stages[StageName.JUDGE], claim=trace.text,
                              evidence=[e.text for e in trace.evidence])
            trace.judgments = list(pred.judgments)
        stage = "rules"
        meter.call("rules", decide, parts=parts, trace=trace)
        if after is not None and StageName.JUDGE not in fixed:
            after(trace)
    except Exception as exc:  # isolate: this claim fails, the document goes on
        trace.error = classify_exception(stage, exc)
        error_card(parts, trace)
    return trace


def decide(parts: Parts, trace: ClaimTrace) -> ClaimCard:
    return parts.verdict.decide(trace, parts.source_records(), parts.name)


def error_card(parts: Parts, trace: ClaimTrace) -> None:
    trace.card = build_error_card(claim_id=trace.claim_id, text=trace.text, error=str(trace.error),
                                  sentence=trace.sentence, vertical=trace.vertical or "general", queries=trace.queries)
    trace.card.checker = parts.name


def checkworthy_sentences(parts: Parts, paragraph: dict) -> list[dict]:
    """Sentences of a paragraph with the check-worthiness stage's verdict; a failed call keeps the sentence."""
    out = []
    for row in sentence_rows(paragraph):
        try:
            pred = parts.meter.call(StageName.CHECKWORTHY, parts.stages[StageName.CHECKWORTHY], text=row["text"])
            row.update(checkworthy=bool(pred.checkworthy), reason=str(getattr(pred, "reason", "")))
        except Exception as exc:  # keep the sentence: unverifiable beats silently dropped
            error = classify_exception(StageName.CHECKWORTHY, exc)
            row.update(checkworthy=True, reason=f"check-worthiness failed: {error}")
        out.append(row)
    return out


def stage_paragraph(parts: Parts, index: int, paragraphs: list[dict], fixed: Mapping[str, Any], context_chars: int,
                    min_grounding: float, log) -> ParagraphTrace:
    """The document-level stages of one paragraph, stage by stage: sentences, check-worthiness, extraction (given a
    summary of `context_chars` of the paragraphs before it), review, the grounding guard."""
    paragraph = paragraphs[index]
    rows = (fixed[StageName.CHECKWORTHY][index] if StageName.CHECKWORTHY in fixed
            else checkworthy_sentences(parts, paragraph))
    unit = ParagraphTrace(sentences=rows, worthy=extraction_input(r["text"] for r in rows if r["checkworthy"]))
    if not unit.worthy:
        return unit
    unit.context = summarise_context([p["text"] for p in paragraphs[:index]], context_chars)
    try:
        unit.drafts = list(fixed[StageName.EXTRACT_CLAIMS][index] if StageName.EXTRACT_CLAIMS in fixed
                           else parts.meter.call(StageName.EXTRACT_CLAIMS, parts.stages[StageName.EXTRACT_CLAIMS],
                                                 paragraph=unit.worthy, context=unit.context).claims)
        claims = (fixed[StageName.REVIEW_CLAIMS][index] if StageName.REVIEW_CLAIMS in fixed
                  else review(parts, paragraph["text"], unit.drafts))
    except Exception as exc:  # the paragraph's claims are lost, say so on a card
        error = classify_exception(StageName.EXTRACT_CLAIMS, exc)
        trace = ClaimTrace(f"p{index + 1}-c0", unit.worthy, unit.worthy, error=error, placeholder=True)
        trace.card = build_error_card(claim_id=trace.claim_id, text=unit.worthy, error=str(error),
                                      sentence=unit.worthy)
        unit.claims = [trace]
        return unit
    if StageName.REVIEW_CLAIMS not in fixed:  # gold claims are the paragraph's by definition
        claims = ground(unit, paragraph["text"], list(claims), min_grounding, log)
    unit.claims = [ClaimTrace(f"p{index + 1}-c{i + 1}", c, source_sentence(c, rows)) for i, c in enumerate(claims)]
    return unit


def review(parts: Parts, text: str, claims: list[str]) -> list[str]:
    if not claims:
        return []
    return parts.meter.call(StageName.REVIEW_CLAIMS, parts.stages[StageName.REVIEW_CLAIMS], paragraph=text,
                            claims=claims).reviewed_claims


def ground(unit: ParagraphTrace, paragraph: str, claims: list[str], min_grounding: float, log) -> list[str]:
    """The claims grounded in their paragraph; the others are recorded on the trace (and logged), never checked."""
    if min_grounding <= 0:
        return list(claims)
    kept = []
    for claim in claims:
        if grounded(claim, paragraph, min_grounding):
            kept.append(claim)
        else:
            unit.ungrounded.append(claim)
            log.warning("dropped a claim its paragraph does not state (content-word share < %.2f): %r",
                        min_grounding, claim)
    return kept


def paragraph_card(index: int, paragraph: dict, unit: ParagraphTrace) -> ParagraphCard:
    cards = [t.card for t in unit.claims]
    if not cards:  # opinion-only paragraph: show why nothing was checked
        cards = [ClaimCard(f"p{index + 1}-s{i + 1}", r["text"], r["text"], checkworthy=False,
                           suggested_action=r.get("reason", "")) for i, r in enumerate(unit.sentences)
                 if not r["checkworthy"]]
    return build_paragraph_card(f"p{index + 1}", paragraph["start"], paragraph["end"], paragraph["text"], cards)
