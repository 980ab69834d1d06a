"""The professional checker: document -> paragraphs -> check-worthy sentences -> claims -> review -> per claim
(vertical -> queries -> retrieval -> judge -> rules) -> verify cards, every stage a built stage (a DSPy program on the
student LM by default, conf/pipeline/default.yaml `stage`). Claims run concurrently (bounded), paragraphs'
document-level stages too; a claim may get a second, multi-round check (several hops) when its single pass says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tqdm import tqdm

from factlab.cards.model import ClaimCard
from factlab.checkers import flow
from factlab.checkers.flow import BuiltOfParts, Parts
from factlab.checkers.layers import DocumentLayers
from factlab.checkers.verdict import Verdict
from factlab.models.errors import classify_exception
from factlab.models.lm import LMHandle
from factlab.pipeline.cache import CacheHit, ClaimCache, ClaimCacheSettings
from factlab.pipeline.meter import StageMeter
from factlab.pipeline.trace import ClaimTrace, DocumentTrace, ParagraphTrace
from factlab.rules.business import DECISIVE_RELATIONS
from factlab.rules.citations import find_citations
from factlab.schema import Judgment, StageName
from factlab.stages.routed import ROUTED_FIELDS, ByVertical

logger = logging.getLogger(__name__)


class ProfessionalChecker(BuiltOfParts):
    """The LM checker over built parts (conf/checker/professional.yaml).

    Args:
        stages: stage name -> built stage, the seven claim stages.
        retriever: the evidence search (`factlab.retrieval.retriever.Retriever`).
        verdict: judged evidence -> card (`factlab.checkers.verdict.Verdict`: business rules, consistency, vertical
            checkers, timeliness).
        layers: the document-level layers (`factlab.checkers.layers.DocumentLayers`); None = every layer off.
        student: the LM the stages run on (None for LM-free stages in tests); its calls are metered per stage.
        name: the checker's name on its cards.
        k: evidence snippets per claim.
        max_workers: claims processed concurrently.
        context_chars: size of the summary of earlier paragraphs given to claim extraction.
        paragraph_workers: paragraphs whose document-level stages (check-worthiness, extraction, review) run at once.
        min_grounding: share of a claim's content words its paragraph must hold (`factlab.matching.text.grounded`):
            a claim restating another paragraph or the context summary is dropped; 0 = off.
        routed: stage -> vertical -> the stage compiled for that vertical (`factlab.stages.build.per_vertical`): the
            vertical stage picks the program on the stage's input.
        claim_cache: the claim cache's settings (opened over the built parts); None = off.
        cache: an opened claim cache (tests); wins over `claim_cache`.
        multi_round: a factory `rules -> multi-round checker` (`factlab.agents.multi_round.MultiRoundChecker`,
            called as `agent(claim=, search=, vertical=)`); used when `multi_round_when` names labels.
        multi_round_when: the single-pass labels whose claims get the multi-round check (e.g. unverifiable).
        progress: show progress bars.
    """

    def __init__(self, stages: Mapping[str, Callable], retriever, verdict: Verdict,
                 layers: DocumentLayers | None = None, student: LMHandle | None = None, name: str = "professional",
                 k: int = 5, max_workers: int = 4, context_chars: int = 400, paragraph_workers: int = 1,
                 min_grounding: float = 0.5, routed: Mapping[str, Mapping[str, Callable]] | None = None,
                 claim_cache: ClaimCacheSettings | None = None, cache: ClaimCache | None = None,
                 multi_round: Callable | None = None, multi_round_when: Sequence[str] = (),
                 progress: bool = True) -> None:
        stages = dict(stages)
        adapters = {n: s.lora for n, s in stages.items() if getattr(s, "lora", None)}  # conf/stage/<n>.yaml `lora`
        for stage, programs in (routed or {}).items():
            if stage not in ROUTED_FIELDS:
                raise ValueError(f"by_vertical.{stage}: only {', '.join(ROUTED_FIELDS)} can have a program per "
                                 "vertical")
            stages[stage] = ByVertical(stages[stage], dict(programs), stages[StageName.VERTICAL], ROUTED_FIELDS[stage])
        self.parts = Parts(name, stages, retriever, verdict, layers or DocumentLayers(),
                           StageMeter(student, adapters), progress)
        self.k, self.max_workers, self.context_chars = k, max_workers, context_chars
        self.paragraph_workers, self.min_grounding = int(paragraph_workers), float(min_grounding)
        if cache is None and claim_cache is not None:
            cache = claim_cache.open(student, retriever, dict(stages), dict(routed or {}))
        self.cache = cache
        when = frozenset(multi_round_when)
        self.agent = multi_round(rules=verdict.rules) if multi_round is not None and when else None
        self.agent_when = when

    def run(self, document: str, name: str = "document", fixed: Mapping[str, Any] | None = None) -> DocumentTrace:
        """Check one document. `fixed` may hold gold for document-level stages: `paragraphs` (list of dicts),
        `checkworthy` (per paragraph, list of sentence dicts), `extract_claims` (per paragraph, list of claims),
        `review_claims` (per paragraph, list of claims). The trace records what every stage received and gave."""
        return flow.run_document(self.parts, document, name, fixed or {}, self.paragraph, self.claims_phase,
                                 workers=self.paragraph_workers)

    # document-level stages -------------------------------------------------------------------------------------

    def paragraph(self, index: int, paragraphs: list[dict], fixed: Mapping[str, Any]) -> ParagraphTrace:
        """The document-level stages of one paragraph: sentences, check-worthiness, extraction, review."""
        return flow.stage_paragraph(self.parts, index, paragraphs, fixed, self.context_chars, self.min_grounding,
                                    logger)

    # claim-level stages ----------------------------------------------------------------------------------------

    def claims_phase(self, todo: list[ClaimTrace]) -> None:
        """Process every claim that has no card yet: concurrently, each isolated, through the claim cache."""
        bar = tqdm(total=len(todo), desc="claims", unit="claim", disable=not self.parts.progress)
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            for _ in pool.map(lambda t: (self._process_cached(t), bar.update(1)), todo):
                pass
        bar.close()

    def process_claim(self, trace: ClaimTrace, fixed: Mapping[str, Any] | None = None) -> ClaimTrace:
        """Run vertical -> queries -> retrieval -> judge -> rules (-> the multi-round check) for one claim;
        `fixed[stage]` replaces a stage's output (gold substitution); errors become an error card."""
        return flow.check_claim(self.parts, trace, fixed, k=self.k, after=self._second_opinion)

    def _second_opinion(self, trace: ClaimTrace) -> None:
        if self.agent is not None and trace.card.label in self.agent_when:
            self.meter.call(StageName.JUDGE, self.multi_round, trace=trace)

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
        flow.decide(self.parts, trace)
        trace.card.hints.insert(0, f"{rounds}; decided {trace.card.label} (single pass: {before})")

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
