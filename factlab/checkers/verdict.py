"""From judged evidence to a claim's card, one part every checker is built with: the consistency signal, the vertical
checkers and the timeliness check (each when on) have their say, then the business rules give the label.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from factlab.cards.build import build_claim_card
from factlab.cards.model import ClaimCard
from factlab.checkers.veto import ClassifierVeto
from factlab.pipeline.trace import ClaimTrace
from factlab.retrieval.verticals import VerticalRouter
from factlab.rules import consistency as consistency_signal
from factlab.rules.business import BusinessRules, JudgedEvidence
from factlab.rules.timeliness import Timeliness


class Verdict:
    """The label policy of a checker.

    Args:
        rules: the business rules (conf/business).
        consistency: settings of the deterministic value checks between claim and evidence
            (`factlab.rules.consistency.apply`: max_tier, min_overlap); None = off.
        verticals: the vertical checkers' router (`factlab.retrieval.verticals.VerticalRouter`): the checker that
            applies to a claim adds its judged evidence (a lookup table's row, a reference text) and hints; None = off.
        timeliness: the timeliness check (`factlab.rules.timeliness.Timeliness`, conf/timeliness): support from a
            source a newer one supersedes counts only for the past; the card names the newest source. None or a
            disabled one = off.
        veto: the classifier veto (`factlab.checkers.veto.ClassifierVeto`): an LM support the shipped classifier
            judge reads as a contradiction is set aside and the card goes to review; None = off (the fast checker,
            whose judge is that classifier).
    """

    def __init__(self, rules: BusinessRules, consistency: Mapping[str, Any] | None = None,
                 verticals: VerticalRouter | None = None, timeliness: Timeliness | None = None,
                 veto: ClassifierVeto | None = None) -> None:
        self.rules = rules
        self.consistency = dict(consistency) if consistency else None
        self.verticals = verticals
        self.timeliness = timeliness if timeliness is not None and timeliness.enabled else None
        self.veto = veto

    def decide(self, trace: ClaimTrace, sources: list, checker: str) -> ClaimCard:
        """The card of a judged claim (set on the trace and returned)."""
        judgments, notes = list(trace.judgments), []
        if self.consistency is not None:
            judgments, notes = consistency_signal.apply(trace.text, trace.evidence, judgments, **self.consistency)
        vetoed = []
        if self.veto is not None:  # an LM support the classifier reads as a contradiction does not count
            judgments, vetoed = self.veto.apply(trace.text, trace.evidence, judgments)
            notes = [*vetoed, *notes]
        judged = [JudgedEvidence(e, j) for e, j in zip(trace.evidence, judgments, strict=False)]
        answer = self.verticals.check(trace.text, sources) if self.verticals is not None else None
        if answer is not None:  # a specialised checker's rows weigh like judged snippets; its hints go first
            judged += [JudgedEvidence(e, j) for e, j in answer.judged]
            notes = [*notes, *(f"{answer.checker}: {hint}" for hint in answer.hints)]
        newest = None
        if self.timeliness is not None:  # superseded support counts for the past only
            judged, dated, newest = self.timeliness.apply(trace.text, judged, sources)
            notes = [*notes, *dated]
        trace.card = build_claim_card(claim_id=trace.claim_id, text=trace.text, judged=judged, rules=self.rules,
                                      sentence=trace.sentence, vertical=trace.vertical, queries=trace.queries,
                                      sources=sources)
        trace.card.hints = [*notes, *trace.card.hints]
        trace.card.newest_source = newest.to_dict() if newest is not None else None
        if (answer is not None and answer.review) or vetoed:
            trace.card.review = True
        trace.card.checker = checker
        trace.relation = trace.card.relation
        return trace.card
