"""The checking pipeline: document -> paragraphs -> check-worthy sentences -> claims -> review -> per claim
(vertical -> queries -> retrieval -> judge -> rules) -> verify cards.

Every stage is a function over plain values, so evaluate.py can run the pipeline with one stage's output
replaced by gold (`fixed=`) and rerun only what follows. Claims run concurrently (bounded), each under its
own error isolation: one failing claim becomes an error card, never a failed document.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tqdm import tqdm

from factlab.cards.build import (
    build_claim_card,
    build_error_card,
    build_paragraph_card,
    build_report,
    layer_findings,
    logic_findings,
)
from factlab.cards.model import ClaimCard, ParagraphCard, Report
from factlab.matching.segment import sentence_spans
from factlab.matching.text import grounded, similarity
from factlab.models.errors import classify_exception
from factlab.models.lm import LMHandle
from factlab.pipeline.cache import CacheHit, ClaimCache
from factlab.pipeline.logic import LogicLayer
from factlab.pipeline.meter import StageMeter
from factlab.pipeline.trace import ClaimTrace, DocumentTrace, ParagraphTrace
from factlab.programs.extract_claims import extraction_input, summarise_context
from factlab.retrieval.verticals import VerticalRouter
from factlab.rules import consistency
from factlab.rules.business import DECISIVE_RELATIONS, BusinessRules, JudgedEvidence
from factlab.rules.citations import find_citations
from factlab.rules.document import consistency_findings
from factlab.rules.routing import Routing
from factlab.rules.timeliness import Timeliness
from factlab.schema import Judgment

logger = logging.getLogger(__name__)


class Pipeline:
    """The full checking pipeline over built stages.

    Args:
        stages: stage name -> callable module (DSPy program or trained classifier), all seven stages.
        retriever: a `factlab.retrieval.retriever.Retriever` (or anything with `search(queries, k, claim)`).
        rules: the business rules.
        student: the LM the stages run on (None for LM-free stages in tests).
        k: evidence snippets per claim.
        max_workers: claims processed concurrently.
        context_chars: size of the summary of earlier paragraphs given to claim extraction.
        cache: claim-level result cache (None = off).
        sources: source records for titles / urls and citation checks.
        progress: show a progress bar over claims.
        skipped_sources: sources that could not be read ("path[:line]: reason"), shown on the report.
        consistency: settings of the deterministic value checks between claim and evidence
            (`factlab.rules.consistency.apply`: max_tier, min_overlap); None = off.
        min_grounding: share of a claim's content words its paragraph must hold (`factlab.checkers.claims.grounded`):
            a claim restating another paragraph or the context summary is dropped; 0 = off.
        paragraph_workers: paragraphs whose document-level stages (check-worthiness, extraction, review) run at once.
        agent: a factory `rules -> multi-round checker` (`factlab.agents.multi_round.MultiRoundChecker`, called as
            `agent(claim=, search=, vertical=)`); None = single pass only.
        agent_when: the single-pass labels whose claims get the multi-round check (the claims that may need several
            hops: e.g. unverifiable, nothing decisive found in one pass).
        routing: the paragraph-type routing table (`factlab.rules.routing.Routing`): a paragraph whose type has the
            facts layer off gets no fact check, and the consistency layer reports findings only in paragraphs routed
            to it; None = every layer on every paragraph.
        document_checks: the consistency layer's checks (`factlab.rules.document.KINDS`); empty = the layer is off.
        verticals: the vertical checkers' router (`factlab.retrieval.verticals.VerticalRouter`): the checker that
            applies to a claim adds its judged evidence (a lookup table's row, a reference text) and hints; None = off.
        logic: the logic layer (`factlab.pipeline.logic.LogicLayer`, conf/logic): paragraphs routed to it get logic
            findings; None = the layer is off.
        timeliness: the timeliness check (`factlab.rules.timeliness.Timeliness`, conf/timeliness): support from a
            source a newer one supersedes counts only for the past; the card names the newest source. None = off.
        typer: the paragraph_type stage (program or classifier, `paragraph_typer=stage`): its type keys the routing
            table instead of the table's patterns (which answer when it fails); None = the patterns.
    """

    name = "professional"

    def __init__(self, stages: Mapping[str, Callable], retriever, rules: BusinessRules, student: LMHandle | None,
                 k: int = 5, max_workers: int = 4, context_chars: int = 400, cache: ClaimCache | None = None,
                 sources: list | None = None, progress: bool = True, skipped_sources: list[str] | None = None,
                 consistency: Mapping[str, Any] | None = None, min_grounding: float = 0.5,
                 paragraph_workers: int = 1, agent: Callable | None = None,
                 agent_when: Sequence[str] = ("unverifiable",), routing: Routing | None = None,
                 document_checks: Sequence[str] = (), verticals: VerticalRouter | None = None,
                 logic: LogicLayer | None = None, timeliness: Timeliness | None = None,
                 typer: Callable | None = None) -> None:
        self.stages, self.retriever, self.rules = dict(stages), retriever, rules
        self.k, self.max_workers, self.context_chars = k, max_workers, context_chars
        self.cache, self.sources, self.progress = cache, sources, progress
        self.skipped_sources = list(skipped_sources or [])
        self.consistency = dict(consistency) if consistency else None
        self.min_grounding = float(min_grounding)
        self.paragraph_workers = int(paragraph_workers)
        self.agent = agent(rules=rules) if agent is not None else None
        self.agent_when = frozenset(agent_when)
        self.routing = routing
        self.document_checks = tuple(document_checks)
        self.verticals = verticals
        self.logic = logic
        self.timeliness = timeliness
        self.typer = typer
        self.meter = StageMeter(student)

    def route(self, text: str) -> tuple[str, list[str]]:
        """(paragraph type, the layers that check it): facts, and logic / consistency when that layer is on."""
        typed = None
        if self.typer is not None and self.routing is not None:
            try:
                typed = str(self.meter.call("paragraph_type", self.typer, paragraph=text).paragraph_type)
            except Exception as exc:  # the table's patterns answer instead
                logger.warning("paragraph_type failed, the routing patterns decide: %s",
                               classify_exception("paragraph_type", exc))
        kind, layers = (self.routing.layers_for(text, paragraph_type=typed, business=self.rules.name) if self.routing
                        else ("", ["facts", "logic", "consistency"]))
        on = {"facts": True, "logic": self.logic is not None, "consistency": bool(self.document_checks)}
        return kind, [layer for layer in layers if on[layer]]

    def check(self, document: str, name: str = "document") -> Report:
        """The checker interface (`factlab.checkers.base.Checker`): check one document, return its report."""
        return self.run(document, name=name).report

    # document-level stages -------------------------------------------------------------------------------------

    def split(self, document: str) -> list[dict]:
        return self.meter.call("paragraphs", self.stages["paragraphs"], document=document).paragraphs

    def checkworthy_sentences(self, paragraph: dict) -> list[dict]:
        """Sentences of a paragraph with the check-worthiness verdict; a failed call keeps the sentence."""
        out = []
        for row in sentence_rows(paragraph):
            try:
                pred = self.meter.call("checkworthy", self.stages["checkworthy"], text=row["text"])
                row.update(checkworthy=bool(pred.checkworthy), reason=str(getattr(pred, "reason", "")))
            except Exception as exc:  # keep the sentence: unverifiable beats silently dropped
                error = classify_exception("checkworthy", exc)
                row.update(checkworthy=True, reason=f"check-worthiness failed: {error}")
            out.append(row)
        return out

    def extract(self, text: str, context: str) -> list[str]:
        return self.meter.call("extract_claims", self.stages["extract_claims"], paragraph=text, context=context).claims

    def review(self, text: str, claims: list[str]) -> list[str]:
        if not claims:
            return []
        return self.meter.call("review_claims", self.stages["review_claims"], paragraph=text,
                               claims=claims).reviewed_claims

    # claim-level stages ----------------------------------------------------------------------------------------

    def process_claim(self, trace: ClaimTrace, fixed: Mapping[str, Any] | None = None) -> ClaimTrace:
        """Run vertical -> queries -> retrieval -> judge -> rules for one claim; `fixed[stage]` replaces a
        stage's output (gold substitution); errors become an error card."""
        fixed = fixed or {}
        stage = "vertical"
        try:
            trace.vertical = fixed["vertical"] if "vertical" in fixed else self.meter.call(
                "vertical", self.stages["vertical"], claim=trace.text).vertical
            stage = "query_rewrite"
            trace.queries = list(fixed["query_rewrite"]) if "query_rewrite" in fixed else list(self.meter.call(
                "query_rewrite", self.stages["query_rewrite"], claim=trace.text).queries)
            stage = "retrieval"
            trace.evidence = list(fixed["retrieval"]) if "retrieval" in fixed else self.meter.call(
                "retrieval", self.retriever.search, queries=trace.queries, k=self.k, claim=trace.text)
            stage = "judge"
            if "judge" in fixed:
                trace.judgments = list(fixed["judge"])
            elif trace.evidence:
                pred = self.meter.call("judge", self.stages["judge"], claim=trace.text,
                                       evidence=[e.text for e in trace.evidence])
                trace.judgments = list(pred.judgments)
            stage = "rules"
            self.meter.call("rules", self.decide, trace=trace)
            if self.agent is not None and trace.card.label in self.agent_when and "judge" not in fixed:
                self.meter.call("judge", self.multi_round, trace=trace)
        except Exception as exc:  # isolate: this claim fails, the document goes on
            trace.error = classify_exception(stage, exc)
            self._error_card(trace)
        return trace

    def multi_round(self, trace: ClaimTrace) -> None:
        """Check a claim again with the multi-round agent (search and reasoning over several hops); its verdict
        replaces the single pass's when it is decisive. A failing agent leaves the single-pass card, with a hint."""
        before = trace.card.label
        try:
            pred = self.agent(claim=trace.text, search=self.retriever.search, vertical=trace.vertical or "general")
        except Exception as exc:  # the single pass stands
            trace.card.hints.append(f"multi-round check failed ({classify_exception('judge', exc)}); single pass kept")
            return
        rounds = f"multi-round check: {len(pred.rounds)} rounds, {pred.input_tokens} input tokens"
        if pred.relation not in DECISIVE_RELATIONS or not pred.evidence:
            trace.card.hints.append(f"{rounds}; nothing decisive found ({pred.relation})")
            return
        trace.evidence = list(pred.evidence)
        trace.judgments = [Judgment(pred.relation, pred.confidence, "multi-round check")] * len(trace.evidence)
        self.decide(trace)
        trace.card.hints.insert(0, f"{rounds}; decided {trace.card.label} (single pass: {before})")

    def _error_card(self, trace: ClaimTrace) -> None:
        trace.card = build_error_card(claim_id=trace.claim_id, text=trace.text, error=str(trace.error),
                                      sentence=trace.sentence, vertical=trace.vertical or "general",
                                      queries=trace.queries)
        trace.card.checker = self.name

    def decide(self, trace: ClaimTrace) -> ClaimCard:
        """The rules' card of a judged claim, after the consistency signal, the vertical checkers and the timeliness
        check (each when on) have had their say."""
        judgments, notes = list(trace.judgments), []
        if self.consistency is not None:
            judgments, notes = consistency.apply(trace.text, trace.evidence, judgments, **self.consistency)
        judged = [JudgedEvidence(e, j) for e, j in zip(trace.evidence, judgments, strict=False)]
        answer = self.verticals.check(trace.text, self.sources or []) if self.verticals is not None else None
        if answer is not None:  # a specialised checker's rows weigh like judged snippets; its hints go first
            judged += [JudgedEvidence(e, j) for e, j in answer.judged]
            notes = [*notes, *(f"{answer.checker}: {hint}" for hint in answer.hints)]
        newest = None
        if self.timeliness is not None:  # superseded support counts for the past only
            judged, dated, newest = self.timeliness.apply(trace.text, judged, self.sources or [])
            notes = [*notes, *dated]
        trace.card = build_claim_card(claim_id=trace.claim_id, text=trace.text, judged=judged, rules=self.rules,
                                      sentence=trace.sentence, vertical=trace.vertical, queries=trace.queries,
                                      sources=self.sources)
        trace.card.hints = [*notes, *trace.card.hints]
        trace.card.newest_source = newest.to_dict() if newest is not None else None
        if answer is not None and answer.review:
            trace.card.review = True
        trace.card.checker = self.name
        trace.relation = trace.card.relation
        return trace.card

    def _process_cached(self, trace: ClaimTrace) -> ClaimTrace:
        """The claim's card from the cache when an earlier run checked the same claim, else processed and cached.
        A cache entry that cannot be used (an older card format) is dropped and the claim processed: the cache can
        cost a hit, never a claim."""
        context = cache_context(trace.text, trace.sentence)
        if self.cache is not None:
            try:
                hit = self.cache.get(trace.text, context)
            except Exception as exc:  # a cache failure costs a hit, never the claim
                logger.warning("claim cache lookup failed for %r (%s); checking the claim afresh", trace.text, exc)
                hit = None
            if hit is not None:
                try:
                    card = ClaimCard.from_dict(hit.result)
                except (TypeError, ValueError, KeyError) as exc:
                    logger.warning("claim cache: dropping an unreadable entry for %r (%s)", hit.claim, exc)
                    self.cache.drop(hit)
                else:
                    return _served(trace, card, hit)
        trace = self.process_claim(trace)
        if self.cache is not None and trace.error is None:
            try:
                self.cache.put(trace.text, trace.card.to_dict(), context)
            except Exception as exc:  # the card stands; only its reuse is lost
                logger.warning("claim cache could not store %r (%s)", trace.text, exc)
        return trace

    # the whole document ----------------------------------------------------------------------------------------

    def run(self, document: str, name: str = "document", fixed: Mapping[str, Any] | None = None) -> DocumentTrace:
        """Check one document. `fixed` may hold gold for document-level stages: `paragraphs` (list of dicts),
        `checkworthy` (per paragraph, list of sentence dicts), `extract_claims` (per paragraph, list of claims),
        `review_claims` (per paragraph, list of claims). The trace records what every stage received and gave."""
        fixed = fixed or {}
        paragraphs = fixed["paragraphs"] if "paragraphs" in fixed else self.split(document)
        texts = [p["text"] for p in paragraphs]
        bar = tqdm(total=len(paragraphs), desc="paragraphs", unit="paragraph",
                   disable=not self.progress or len(paragraphs) < 2)

        def one(index: int) -> ParagraphTrace:
            kind, layers = self.route(paragraphs[index]["text"])
            if "facts" in layers:
                unit = self._paragraph(index, paragraphs, fixed)
            else:  # the routing table keeps facts off this type of paragraph: say so on every sentence
                reason = f"not checked for facts: a {kind} paragraph (routing {self.routing.name})"
                unit = ParagraphTrace(sentences=[{**row, "checkworthy": False, "reason": reason}
                                                 for row in sentence_rows(paragraphs[index])], worthy="")
            unit.paragraph_type, unit.layers = kind, layers
            if "logic" in layers:
                self.check_logic(unit, texts, index)
            bar.update(1)
            return unit

        with ThreadPoolExecutor(max_workers=max(1, self.paragraph_workers)) as pool:
            units = list(pool.map(one, range(len(paragraphs))))
        bar.close()
        todo = [t for unit in units for t in unit.claims if t.card is None]
        self.claims_phase(todo)
        return self.assemble(paragraphs, units, name)

    def check_logic(self, unit: ParagraphTrace, texts: list[str], index: int) -> None:
        """The logic layer on one paragraph; a failed check (the LM down, an unparsable answer) leaves the paragraph
        without the layer (its card does not list it) and is logged, never raised."""
        try:
            unit.logic = self.logic.check(texts, index, call=self.meter.call)
        except Exception as exc:
            logger.warning("logic layer failed on paragraph %d: %s", index + 1, classify_exception("logic", exc))
            unit.layers = [layer for layer in unit.layers if layer != "logic"]

    def assemble(self, paragraphs: list[dict], units: list[ParagraphTrace], name: str) -> DocumentTrace:
        """The document's trace and report from its paragraphs' traces (every claim carded)."""
        cards = [_paragraph_card(index, paragraph, unit) for index, (paragraph, unit)
                 in enumerate(zip(paragraphs, units, strict=True))]
        for card, unit in zip(cards, units, strict=True):  # routed once, in run()
            card.paragraph_type, card.layers = unit.paragraph_type, list(unit.layers)
        chunks = {e.chunk_id: e.text for unit in units for t in unit.claims for e in t.evidence}
        findings = []
        if self.document_checks:  # the whole document is compared; findings shown where the layer is routed
            routed = {c.paragraph_id for c in cards if "consistency" in c.layers}
            found = consistency_findings([(c.paragraph_id, c.text) for c in cards], self.document_checks)
            findings = layer_findings([f for f in found if f.paragraph_id in routed])
        ids = [c.paragraph_id for c in cards]
        findings = [*logic_findings(ids, [unit.logic for unit in units]), *findings]
        report = build_report(document=name, business=self.rules.name, paragraphs=cards, chunks=chunks,
                              skipped_sources=self.skipped_sources, findings=findings)
        report.summary["ungrounded_claims"] = sum(len(u.ungrounded) for u in units)
        report.summary["checker"] = self.name
        return DocumentTrace(paragraphs, units, report)

    def claims_phase(self, todo: list[ClaimTrace]) -> None:
        """Process every claim that has no card yet: concurrently, each isolated, through the claim cache."""
        bar = tqdm(total=len(todo), desc="claims", unit="claim", disable=not self.progress)
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            for _ in pool.map(lambda t: (self._process_cached(t), bar.update(1)), todo):
                pass
        bar.close()

    def ground(self, unit: ParagraphTrace, paragraph: str, claims: list[str]) -> list[str]:
        """The claims grounded in their paragraph; the others are recorded on the trace (and logged), never checked."""
        if self.min_grounding <= 0:
            return list(claims)
        kept = []
        for claim in claims:
            if grounded(claim, paragraph, self.min_grounding):
                kept.append(claim)
            else:
                unit.ungrounded.append(claim)
                logger.warning("dropped a claim its paragraph does not state (content-word share < %.2f): %r",
                               self.min_grounding, claim)
        return kept

    def _paragraph(self, index: int, paragraphs: list[dict], fixed: Mapping[str, Any]) -> ParagraphTrace:
        """The document-level stages of one paragraph: sentences, check-worthiness, extraction, review."""
        paragraph = paragraphs[index]
        rows = fixed["checkworthy"][index] if "checkworthy" in fixed else self.checkworthy_sentences(paragraph)
        unit = ParagraphTrace(sentences=rows, worthy=extraction_input(r["text"] for r in rows if r["checkworthy"]))
        if not unit.worthy:
            return unit
        unit.context = summarise_context([p["text"] for p in paragraphs[:index]], self.context_chars)
        try:
            unit.drafts = list(fixed["extract_claims"][index] if "extract_claims" in fixed
                               else self.extract(unit.worthy, unit.context))
            claims = fixed["review_claims"][index] if "review_claims" in fixed else self.review(paragraph["text"],
                                                                                                  unit.drafts)
        except Exception as exc:  # the paragraph's claims are lost, say so on a card
            error = classify_exception("extract_claims", exc)
            trace = ClaimTrace(f"p{index + 1}-c0", unit.worthy, unit.worthy, error=error, placeholder=True)
            trace.card = build_error_card(claim_id=trace.claim_id, text=unit.worthy, error=str(error),
                                          sentence=unit.worthy)
            unit.claims = [trace]
            return unit
        if "review_claims" not in fixed:  # gold claims are the paragraph's by definition
            claims = self.ground(unit, paragraph["text"], list(claims))
        unit.claims = [ClaimTrace(f"p{index + 1}-c{i + 1}", c, source_sentence(c, rows)) for i, c in enumerate(claims)]
        return unit


def cache_context(claim: str, sentence: str) -> str:
    """What a claim's card depends on besides its text: the works its sentence cites, when the claim cites none (the
    citation check falls back to the sentence).

    >>> cache_context("Aspirin works.", "Smith et al. (2019) found that aspirin works.")
    'Smith et al. (2019)'
    >>> cache_context("Smith et al. (2019) found that aspirin works.", "Smith et al. (2019) found it.")
    ''
    """
    if find_citations(claim):
        return ""
    return " | ".join(m.text for m in find_citations(sentence))


def _served(trace: ClaimTrace, card: ClaimCard, hit: CacheHit) -> ClaimTrace:
    """The trace of a claim served from the cache; a near hit says on its card which claim it reuses."""
    card.claim_id, card.sentence, card.text = trace.claim_id, trace.sentence, trace.text
    card.reused = {"kind": hit.kind, "claim": hit.claim, "similarity": hit.similarity}
    if hit.kind == "near":
        card.hints = [f"verdict reused from the near-identical claim {hit.claim!r} (cosine {hit.similarity:.3f}; "
                      "same numbers, dates, units, negation, names and qualifiers)", *card.hints]
    trace.card, trace.cached = card, True
    trace.vertical, trace.queries, trace.relation = card.vertical, card.queries, card.relation
    return trace


def sentence_rows(paragraph: dict) -> list[dict]:
    """The sentences of a paragraph as rows {"text", "start", "end"} (document offsets), headings skipped."""
    return [{"text": paragraph["text"][a:b].strip(), "start": paragraph["start"] + a, "end": paragraph["start"] + b}
            for a, b in _sentence_spans(paragraph["text"])]


def checkable_sentences(document: str) -> bool:
    r"""Whether a document has any sentence to check (Markdown headings alone state no claim).

    >>> checkable_sentences("# Title\n\n## Part two"), checkable_sentences("# Title\nIt rose 2% in 2020.")
    (False, True)
    """
    return bool(_sentence_spans(document))


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    r"""Sentence spans of a paragraph, line by line, skipping Markdown headings (titles state no claim).

    >>> t = "# Title\nFirst one. Second one.\n- item three"
    >>> [t[a:b] for a, b in _sentence_spans(t)]
    ['First one.', 'Second one.', 'item three']
    """
    spans, pos = [], 0
    for line in text.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        body = line.strip()
        if not body or body.startswith("#"):
            continue
        marker = re.match(r"\s*([-*+]|\d+[.)])\s+", line)
        offset = start + (marker.end() if marker else 0)
        spans += [(offset + a, offset + b) for a, b in sentence_spans(text[offset:pos])
                  if text[offset + a:offset + b].strip()]
    return spans


def source_sentence(claim: str, rows: list[dict]) -> str:
    """The check-worthy sentence a claim most likely came from (highest token overlap)."""
    worthy = [r["text"] for r in rows if r["checkworthy"]] or [r["text"] for r in rows]
    return max(worthy, key=lambda s: similarity(claim, s), default="")


def _paragraph_card(index: int, paragraph: dict, unit: ParagraphTrace) -> ParagraphCard:
    cards = [t.card for t in unit.claims]
    if not cards:  # opinion-only paragraph: show why nothing was checked
        cards = [ClaimCard(f"p{index + 1}-s{i + 1}", r["text"], r["text"], checkworthy=False,
                           suggested_action=r.get("reason", "")) for i, r in enumerate(unit.sentences)
                 if not r["checkworthy"]]
    return build_paragraph_card(f"p{index + 1}", paragraph["start"], paragraph["end"], paragraph["text"], cards)

