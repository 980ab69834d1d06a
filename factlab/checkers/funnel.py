"""The funnel: every claim through the fast checker, the claims its policy names escalated to the professional one.

The escalated claim is checked again from its text (vertical, queries, retrieval, judge, rules on the LM path); its
card keeps what the fast checker said (`card.escalation`) and why it escalated. The report's summary says how many
claims escalated, for which reasons, and what each path cost (`summary["funnel"]`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from factlab.cards.model import ClaimCard
from factlab.pipeline.trace import ClaimTrace, DocumentTrace

# The order in which claims escalate when `max_share` caps them: failures first, then wrong, disputed, the rest.
_URGENCY = {"error": 0, "wrong": 1, "disputed": 2}


@dataclass
class FunnelPolicy:
    """When a fast card escalates (conf/checker/funnel.yaml `escalate`): ANY of the conditions.

    >>> policy = FunnelPolicy(labels=["wrong"], below_confidence=0.6)
    >>> policy.reason(ClaimCard("c1", "x", label="wrong", relation="contradict", confidence=0.9), high_risk=False)
    'label wrong'
    >>> policy.reason(ClaimCard("c2", "x", label="correct", relation="support", confidence=0.5), high_risk=False)
    'confidence 0.50 < 0.6'
    >>> policy.reason(ClaimCard("c3", "x", label="correct", relation="support", confidence=0.9), high_risk=False)
    """

    labels: Sequence[str] = ("wrong", "disputed")
    relations: Sequence[str] = ()
    verticals: Sequence[str] = ()
    high_risk: bool = True
    below_confidence: float = 0.0
    errors: bool = True
    max_share: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.max_share) <= 1.0:
            raise ValueError(f"checker.escalate.max_share must be in [0, 1], got {self.max_share!r}")
        if not 0.0 <= float(self.below_confidence) <= 1.0:
            raise ValueError(f"checker.escalate.below_confidence must be in [0, 1], got {self.below_confidence!r}")

    def reason(self, card: ClaimCard, high_risk: bool) -> str | None:
        """Why this fast card escalates, or None when it stays."""
        if not card.checkworthy:
            return None
        if card.error:
            return "fast path failed" if self.errors else None
        if card.label in self.labels:
            return f"label {card.label}"
        if card.relation in self.relations:
            return f"relation {card.relation}"
        if card.vertical in self.verticals:
            return f"vertical {card.vertical}"
        if self.high_risk and high_risk:
            return f"high-risk vertical {card.vertical}"
        if self.below_confidence and card.confidence < self.below_confidence:
            return f"confidence {card.confidence:.2f} < {self.below_confidence:g}"
        return None

    def select(self, cards: Sequence[ClaimCard], rules) -> list[tuple[int, str]]:
        """(index, reason) of the cards that escalate, capped at `max_share` of them, the most urgent first."""
        chosen = [(i, why) for i, card in enumerate(cards)
                  if (why := self.reason(card, rules.is_high_risk(card.vertical))) is not None]
        cap = int(self.max_share * len(cards) + 1e-9)
        if len(chosen) > cap:
            chosen = sorted(chosen, key=lambda c: (_URGENCY.get("error" if cards[c[0]].error else cards[c[0]].label,
                                                                  3), cards[c[0]].confidence))[:cap]
        return sorted(chosen)


class CombinedMeter:
    """Both paths' stage costs side by side (`fast/<stage>`, `professional/<stage>`); calls go to the fast path."""

    def __init__(self, fast, professional) -> None:
        self.fast, self.professional = fast, professional

    def call(self, stage: str, fn, **kwargs):
        return self.fast.call(stage, fn, **kwargs)

    def costs(self) -> dict[str, dict[str, float]]:
        return {**{f"fast/{k}": v for k, v in self.fast.costs().items()},
                **{f"professional/{k}": v for k, v in self.professional.costs().items()}}


class FunnelChecker:
    """The fast checker, then the professional one for the claims `policy` names.

    Args:
        fast: the fast checker (`factlab.checkers.fast.FastChecker`), or, with `retriever`, a factory of one.
        professional: the professional checker (`factlab.checkers.professional.ProfessionalChecker`), or, with
            `retriever`, a factory of one.
        escalate: when a claim escalates.
        retriever: the retriever both checkers share (conf/checker/funnel.yaml builds it once); None = `fast` and
            `professional` are built checkers.
        name: the checker's name on its report.
    """

    def __init__(self, fast, professional, escalate: FunnelPolicy, retriever=None, name: str = "funnel") -> None:
        if retriever is not None:
            fast, professional = fast(retriever=retriever), professional(retriever=retriever)
        self.fast, self.professional, self.policy, self.name = fast, professional, escalate, name
        self.retriever, self.rules, self.stages = fast.retriever, fast.rules, fast.stages
        self.meter = CombinedMeter(fast.meter, professional.meter)

    @property
    def cache(self):
        return self.professional.cache

    def check(self, document: str, name: str = "document"):
        return self.run(document, name=name).report

    def run(self, document: str, name: str = "document", fixed: Mapping[str, Any] | None = None) -> DocumentTrace:
        started = time.perf_counter()
        trace = self.fast.run(document, name=name, fixed=fixed)
        fast_s = time.perf_counter() - started
        claims = [t for unit in trace.units for t in unit.claims if not t.placeholder]
        chosen = self.policy.select([t.card for t in claims], self.rules)
        fresh = {i: ClaimTrace(claims[i].claim_id, claims[i].text, claims[i].sentence) for i, _ in chosen}
        started = time.perf_counter()
        self.professional.claims_phase(list(fresh.values()))
        professional_s = time.perf_counter() - started
        replaced = {}
        for i, why in chosen:
            replaced[claims[i].claim_id] = self._escalated(claims[i], fresh[i], why)
        for unit in trace.units:
            unit.claims = [replaced.get(t.claim_id, t) for t in unit.claims]
        out = self.fast.assemble(trace.paragraphs, trace.units, name)
        out.report.summary["checker"] = self.name
        out.report.summary["funnel"] = {
            "claims": len(claims), "escalated": len(chosen), "reasons": dict(Counter(why for _, why in chosen)),
            "fast_s": round(fast_s, 3), "professional_s": round(professional_s, 3),
        }
        return out

    def process_claim(self, trace: ClaimTrace, fixed: Mapping[str, Any] | None = None) -> ClaimTrace:
        """One claim through the funnel (what evaluate.py's attribution reruns with `fixed`)."""
        out = self.fast.process_claim(trace, fixed=fixed)
        why = self.policy.reason(out.card, self.rules.is_high_risk(out.card.vertical))
        if why is None:
            return out
        fresh = self.professional.process_claim(ClaimTrace(trace.claim_id, trace.text, trace.sentence), fixed=fixed)
        return self._escalated(out, fresh, why)

    @staticmethod
    def _escalated(fast: ClaimTrace, fresh: ClaimTrace, why: str) -> ClaimTrace:
        """The professional trace of an escalated claim, its card remembering the fast verdict and the reason."""
        before = fast.card
        fresh.card.escalation = {"reason": why, "fast": {"label": before.label, "relation": before.relation,
                                                         "confidence": before.confidence, "error": before.error}}
        return fresh
