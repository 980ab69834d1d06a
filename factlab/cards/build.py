"""Build verify cards: a claim's card from its judged evidence and the business rules' decision (the rules decide,
citation risk included; the card shows it), the error card of a failed claim, paragraph cards and the report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from factlab.cards.actions import suggested_action
from factlab.cards.model import ClaimCard, EvidenceItem, LayerFinding, ParagraphCard, Report, ReviewItem, excerpt
from factlab.rules.business import DECISIVE_RELATIONS, BusinessRules, JudgedEvidence, max_risk
from factlab.rules.citations import claim_citation
from factlab.schema import LABELS, RISK_LEVELS

ERROR_RISK = "yellow"  # a failed claim is unknown, not known-bad: flag it without alarming like `wrong`
# Evidence order on a card: best tier first, then decisive relations, then confidence.
_RELATION_ORDER = {"contradict": 0, "support": 1, "partial_support": 2, "insufficient": 3, "irrelevant": 4}


def _index_sources(sources: Iterable[Any] | None) -> dict[str, Any]:
    index: dict[str, Any] = {}
    for source in sources or ():
        source_id = source.get("source_id") if isinstance(source, Mapping) else getattr(source, "source_id", None)
        if not source_id:
            raise ValueError(f"source record without source_id: {excerpt(repr(source))}")
        index[str(source_id)] = source
    return index


def _meta(source: Any, name: str) -> str:
    value = source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)
    return "" if value is None else str(value)


def _evidence_items(judged: Sequence[JudgedEvidence], sources: Mapping[str, Any]) -> list[EvidenceItem]:
    items = []
    for item in judged:
        ev, source = item.evidence, sources.get(item.evidence.source_id)
        items.append(
            EvidenceItem(
                source_id=ev.source_id,
                chunk_id=ev.chunk_id,
                page=ev.page,
                snippet=ev.text,
                tier=ev.tier,
                relation=item.relation,
                confidence=round(item.confidence, 4),
                domain=ev.domain or (_meta(source, "domain") if source is not None else ""),
                title=ev.title or (_meta(source, "title") if source is not None else ""),
                url=_meta(source, "url") if source is not None else "",
                published=ev.published,
                weak=ev.weak,
            )
        )
    return sorted(items, key=lambda e: (e.tier, _RELATION_ORDER[e.relation], -e.confidence, e.chunk_id))


def build_claim_card(
    *,
    claim_id: str,
    text: str,
    judged: Sequence[JudgedEvidence],
    rules: BusinessRules,
    sentence: str = "",
    checkworthy: bool = True,
    vertical: str = "general",
    queries: Sequence[str] = (),
    sources: Iterable[Any] | None = None,
) -> ClaimCard:
    """Build the card of one claim: apply the business rules, check its citation, attach an action.

    Args:
        claim_id: id unique inside the document.
        text: the atomic, decontextualised claim.
        judged: the judged evidence of this claim (may be empty).
        rules: the business rules (instantiated from `conf/business/<name>.yaml`).
        sentence: the verbatim document sentence the claim comes from.
        checkworthy: False for opinions etc.: no label, risk "none".
        vertical: the claim's vertical.
        queries: the search queries used.
        sources: source records (dicts or objects with source_id, title, url, author, year, doi). They
            fill in titles / urls and enable the citation check; None skips the citation check.

    Returns:
        The ClaimCard, suggested action included.
    """
    judged = list(judged)
    if not checkworthy:
        card = ClaimCard(claim_id, text, sentence, False, vertical, list(queries))
        card.suggested_action = suggested_action(card)
        return card
    index = _index_sources(sources)
    citation = claim_citation(text, sentence, list(index.values()), judged) if sources is not None else None
    decision = rules.decide(vertical, judged, citation, claim=text)
    card = ClaimCard(
        claim_id=claim_id,
        text=text,
        sentence=sentence,
        checkworthy=True,
        vertical=vertical,
        queries=list(queries),
        label=decision.label,
        relation=decision.relation,
        confidence=decision.confidence,
        evidence=_evidence_items(judged, index),
        risk_level=decision.risk_level,
        hints=list(decision.hints),
        review=decision.review,
        depends_on=sorted({j.evidence.source_id for j in judged if j.relation in DECISIVE_RELATIONS}),
        citation=citation,
    )
    card.suggested_action = suggested_action(card)
    return card


def build_error_card(
    *,
    claim_id: str,
    text: str,
    error: str,
    sentence: str = "",
    vertical: str = "general",
    queries: Sequence[str] = (),
) -> ClaimCard:
    """Card for a claim whose processing failed (retrieval / judge error, timeout ...).

    >>> build_error_card(claim_id="c1", text="Water boils at 100 C.", error="judge timed out").suggested_action
    'Rerun / check manually: judge timed out'
    """
    if not error:
        raise ValueError(f"claim {claim_id!r}: build_error_card needs a non-empty error reason")
    card = ClaimCard(claim_id, text, sentence, True, vertical, list(queries), risk_level=ERROR_RISK, error=error)
    card.suggested_action = suggested_action(card)
    return card


def build_paragraph_card(
    paragraph_id: str, start: int, end: int, text: str, claims: Sequence[ClaimCard]
) -> ParagraphCard:
    """Group claims under a paragraph; the paragraph's risk is the riskiest claim's ("none" without claims)."""
    return ParagraphCard(paragraph_id, start, end, text, max_risk(*(c.risk_level for c in claims)), list(claims))


def build_report(
    *,
    document: str,
    business: str,
    paragraphs: Sequence[ParagraphCard],
    created: str | None = None,
    chunks: Mapping[str, str] | None = None,
    skipped_sources: Sequence[str] = (),
    findings: Sequence[LayerFinding] = (),
    common_cause_tier: int | None = 3,
) -> Report:
    """Assemble the report: review queue, summary counts and source -> paragraph lineage.

    Args:
        document: path or name of the checked document.
        business: name of the business rules used.
        paragraphs: paragraph cards in document order.
        created: ISO time; now (UTC) when None.
        chunks: chunk_id -> full chunk text for the chunks the evidence cites (optional; the HTML
            report falls back to the snippets).
        skipped_sources: the sources that could not be read ("path[:line]: reason"), shown on the report.
        findings: the consistency / logic layers' findings (`layer_findings`, `logic_findings`).
        common_cause_tier: the tier from which a source many paragraphs rest on is flagged with them
            (`common_cause_findings`, also when contested); None = the common-cause lineage is off.
    """
    paragraphs = list(paragraphs)
    if common_cause_tier is not None:
        findings = [*findings, *common_cause_findings(paragraphs, common_cause_tier)]
    review_queue = [
        ReviewItem(p.paragraph_id, c.claim_id, c.suggested_action)
        for p in paragraphs
        for c in p.claims
        if c.review or c.error
    ]
    lineage: dict[str, list[str]] = {}
    for p in paragraphs:
        for source_id in sorted({s for c in p.claims for s in c.depends_on}):
            lineage.setdefault(source_id, []).append(p.paragraph_id)
    claims = [c for p in paragraphs for c in p.claims]
    summary: dict[str, Any] = {
        "paragraphs": len(paragraphs),
        "claims": len(claims),
        "labels": {label: sum(c.label == label for c in claims) for label in LABELS},
        "errors": sum(bool(c.error) for c in claims),
        "not_checkworthy": sum(not c.checkworthy for c in claims),
        "review": len(review_queue),
        "claim_risk": {level: sum(c.risk_level == level for c in claims) for level in RISK_LEVELS},
        "paragraph_risk": {level: sum(p.risk_level == level for p in paragraphs) for level in RISK_LEVELS},
        "skipped_sources": len(skipped_sources),
        **({"findings": {layer: sum(f.layer == layer for f in findings)
                         for layer in sorted({f.layer for f in findings})}} if findings else {}),
    }
    return Report(
        document=str(document),
        business=business,
        created=created or datetime.now(UTC).isoformat(timespec="seconds"),
        paragraphs=paragraphs,
        review_queue=review_queue,
        summary=summary,
        lineage=dict(sorted(lineage.items())),
        chunks=dict(chunks or {}),
        skipped_sources=list(skipped_sources),
        findings=list(findings),
    )


SUPPORTING = ("support", "partial_support")


def common_cause_findings(paragraphs: Sequence[ParagraphCard], low_tier: int = 3) -> list[LayerFinding]:
    """The common-cause lineage: paragraphs whose claims rest on one source (a supporting snippet of it decided the
    claim's label, and no other source above the low tier supports it too) are a group. When that source is
    contested (a claim resting on it is contradicted by another source above the low tier) or low-tier (all its
    snippets at tier >= `low_tier`), every paragraph of a group of two or more is flagged together, each finding
    naming the source, why, and the other paragraphs. Each paragraph alone checks out against the source; only the
    grouping shows that they stand or fall with it.

    >>> def card(pid, cid, source, tier, other=None):
    ...     ev = [EvidenceItem(source, f"{source}#p1-c1", 1, "s", tier, "support", 0.9, title=source.upper())]
    ...     ev += [EvidenceItem(other, f"{other}#p1-c1", 1, "s", 1, "contradict", 0.9)] if other else []
    ...     claim = ClaimCard(cid, "c", label="correct", relation="support", evidence=ev, depends_on=[source])
    ...     return ParagraphCard(pid, 0, 1, "t", "none", [claim])
    >>> found = common_cause_findings([card("p1", "c1", "blog", 3), card("p2", "c2", "blog", 3), card("p3", "c3",
    ...     "who", 1)])
    >>> [(f.paragraph_id, f.kind, f.keyword, f.other_paragraph_id) for f in found]
    [('p1', 'common_cause', 'BLOG', 'p2'), ('p2', 'common_cause', 'BLOG', 'p1')]
    >>> common_cause_findings([card("p1", "c1", "who", 1), card("p2", "c2", "who", 1)])
    []
    """
    rests: dict[str, list[tuple[str, ClaimCard]]] = {}
    for paragraph in paragraphs:
        for claim in paragraph.claims:
            supporters: dict[str, int] = {}
            for e in claim.evidence:
                if e.relation in SUPPORTING and e.source_id in claim.depends_on:
                    supporters[e.source_id] = min(e.tier, supporters.get(e.source_id, e.tier))
            for source_id in supporters:  # rests on it: no other supporter above the low tier corroborates
                if all(tier >= low_tier for other, tier in supporters.items() if other != source_id):
                    rests.setdefault(source_id, []).append((paragraph.paragraph_id, claim))
    out = []
    for source_id, uses in sorted(rests.items()):
        group = list(dict.fromkeys(pid for pid, _ in uses))
        if len(group) < 2:
            continue
        own = [e for _, claim in uses for e in claim.evidence if e.source_id == source_id]
        tier = min(e.tier for e in own)
        against = sorted({e.source_id for _, claim in uses for e in claim.evidence  # a low-tier source contests no one
                          if e.relation == "contradict" and e.source_id != source_id and e.tier < low_tier})
        why = []
        if against:
            why.append(f"contested by {', '.join(against)}")
        if tier >= low_tier:
            why.append(f"tier {tier} only")
        if not why:
            continue
        title = next((e.title for e in own if e.title), "") or source_id
        for pid in group:
            others = [g for g in group if g != pid]
            out.append(LayerFinding(
                paragraph_id=pid, layer="fact", kind="common_cause", status="flagged", keyword=title,
                evidence=f"{source_id} ({'; '.join(why)}) also carries {', '.join(others)}",
                message=f"{len(group)} paragraphs rest on one source that is {' and '.join(why)}",
                suggested_action=f"Check {title} first, or find an independent source: paragraphs {', '.join(group)} "
                                 "stand or fall with it.",
                other_paragraph_id=others[0]))
    return out


LOGIC_ACTIONS = {  # what to do about each logic finding (factlab.schema.LOGIC_KINDS)
    "causal_overclaim": "Write 'is associated with' unless an experiment (a randomised trial) shows the cause, or cite "
                        "that experiment.",
    "scope_shift": "State the scope the result was found in (e.g. 'in mice', 'under laboratory conditions'), or cite "
                   "evidence for the wider one.",
    "carried_over": "Restate the earlier result's scope here, or cite evidence that it holds in this setting.",
    "overgeneralisation": "Narrow the conclusion to what the evidence covers (the study, its sample, its season).",
}


def logic_findings(paragraph_ids: list[str], issues: list[list]) -> list[LayerFinding]:
    """Cards for the logic layer's findings (factlab.rules.logic.LogicIssue, per paragraph in order); the evidence is
    the premise the conclusion goes beyond, with its paragraph.

    >>> from factlab.rules.logic import LogicIssue
    >>> card = logic_findings(["p1", "p2"], [[], [LogicIssue("carried_over", "patients", "why", "in mice", 0)]])[0]
    >>> card.paragraph_id, card.layer, card.evidence, card.other_paragraph_id
    ('p2', 'logic', 'p1: “in mice”', 'p1')
    """
    out = []
    for paragraph_id, found in zip(paragraph_ids, issues, strict=True):
        for issue in found:
            other = paragraph_ids[issue.premise_paragraph] if issue.premise_paragraph is not None else paragraph_id
            out.append(LayerFinding(
                paragraph_id=paragraph_id, layer="logic", kind=issue.kind, status="flagged", keyword=issue.keyword,
                evidence=f"{other}: “{issue.premise}”" if issue.premise else "", message=issue.reason,
                suggested_action=LOGIC_ACTIONS.get(issue.kind, "Check that the conclusion follows from its premises."),
                other_paragraph_id=other if other != paragraph_id else ""))
    return out


def layer_findings(found) -> list[LayerFinding]:
    """Cards for the consistency layer's findings (factlab.rules.document.Finding).

    >>> from factlab.rules.document import consistency_findings
    >>> [c.keyword for c in layer_findings(consistency_findings([("p1", "50 mg"), ("p2", "100毫克")]))]
    ['毫克']
    """
    return [LayerFinding(paragraph_id=f.paragraph_id, layer="consistency", kind=f.kind, status="flagged",
                         keyword=f.keyword, evidence=f"{f.other.paragraph_id}: “{f.other.text}”",
                         suggested_action=f.suggested_action, message=f.message,
                         other_paragraph_id=f.other.paragraph_id) for f in found]


