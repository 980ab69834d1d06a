"""Verify cards: what the pipeline hands the reviewer, per claim, per paragraph and per document.

A `ClaimCard` carries the claim, the rules' label / relation / risk, the evidence with its tier and
relation, one concrete `suggested_action`, and the sources the label rests on (`depends_on`). A
`ParagraphCard` groups the claims of one paragraph under the riskiest claim's level; a `Report` adds
the review queue, summary counts and the lineage source -> paragraphs (what to recheck when a source
changes). Everything round-trips through JSON (`to_dict` / `from_dict`, `write_cards_json` /
`read_cards_json`).

A claim whose processing failed has no label (LABELS has no "error"): its `error` field holds the
reason, its risk is yellow and its action says to rerun or check by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from factlab.rules.business import DECISIVE_RELATIONS, BusinessRules, JudgedEvidence, max_risk
from factlab.rules.citations import CitationCheck, check_claim_citations
from factlab.schema import LABELS, RELATIONS, RISK_LEVELS, detect_language

ERROR_RISK = "yellow"  # a failed claim is unknown, not known-bad: flag it without alarming like `wrong`
_EXCERPT_CHARS = 80  # long enough to recognise the passage, short enough for one line of a card
# Evidence order on a card: best tier first, then decisive relations, then confidence.
_RELATION_ORDER = {"contradict": 0, "support": 1, "partial_support": 2, "insufficient": 3, "irrelevant": 4}


def _from_fields(cls: type, data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Check `data` against the dataclass fields of `cls`: no unknown keys, no missing required ones."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{where}: expected a JSON object for {cls.__name__}, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown} for {cls.__name__}; expected {sorted(known)}")
    required = [name for name, f in known.items() if f.default is MISSING and f.default_factory is MISSING]
    missing = [name for name in required if name not in data]
    if missing:
        raise ValueError(f"{where}: missing required field(s) {missing} for {cls.__name__}")
    return dict(data)


def excerpt(text: str, limit: int = _EXCERPT_CHARS) -> str:
    """Collapse whitespace and cut `text` to at most `limit` characters, marking a cut with "…".

    >>> excerpt("a  b\\n c")
    'a b c'
    >>> excerpt("abcdefghij", limit=5)
    'abcd…'
    """
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class EvidenceItem:
    """One judged snippet as a card shows it."""

    source_id: str
    chunk_id: str
    page: int
    snippet: str
    tier: int
    relation: str
    confidence: float
    domain: str = ""
    title: str = ""
    url: str = ""

    def __post_init__(self) -> None:
        if self.relation not in RELATIONS:
            raise ValueError(
                f"evidence {self.chunk_id!r}: relation {self.relation!r} is not one of {', '.join(RELATIONS)}"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "evidence") -> EvidenceItem:
        return cls(**_from_fields(cls, data, where))


@dataclass
class ClaimCard:
    """Everything the reviewer needs about one claim."""

    claim_id: str
    text: str
    sentence: str = ""  # the verbatim sentence of the document the claim comes from
    checkworthy: bool = True
    vertical: str = "general"
    queries: list[str] = field(default_factory=list)
    label: str | None = None  # one of LABELS; None when not checked (not check-worthy, or error)
    relation: str | None = None  # aggregated relation, one of RELATIONS; None when not checked
    confidence: float = 0.0
    evidence: list[EvidenceItem] = field(default_factory=list)
    suggested_action: str = ""
    risk_level: str = "none"
    hints: list[str] = field(default_factory=list)
    review: bool = False  # True: the claim is in the report's review queue
    depends_on: list[str] = field(default_factory=list)  # source_ids whose snippets decided the label
    error: str | None = None  # why processing failed; None when it did not
    citation: CitationCheck | None = None  # the claim's cited work, checked; None when it cites nothing

    def __post_init__(self) -> None:
        where = f"claim {self.claim_id!r}"
        if self.label is not None and self.label not in LABELS:
            hint = " (a failed claim keeps label None and sets `error`)" if self.label == "error" else ""
            raise ValueError(f"{where}: label {self.label!r} is not one of {', '.join(LABELS)}{hint}")
        if self.relation is not None and self.relation not in RELATIONS:
            raise ValueError(f"{where}: relation {self.relation!r} is not one of {', '.join(RELATIONS)}")
        if self.risk_level not in RISK_LEVELS:
            raise ValueError(f"{where}: risk_level {self.risk_level!r} is not one of {', '.join(RISK_LEVELS)}")

    @property
    def lang(self) -> str:
        return detect_language(self.text)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "claim") -> ClaimCard:
        data = _from_fields(cls, data, where)
        data["evidence"] = [
            EvidenceItem.from_dict(item, f"{where}.evidence[{i}]") for i, item in enumerate(data.get("evidence", []))
        ]
        if data.get("citation") is not None:
            data["citation"] = CitationCheck.from_dict(data["citation"])
        return cls(**data)


@dataclass
class ParagraphCard:
    """One paragraph of the document with its claims; its risk is the riskiest claim's."""

    paragraph_id: str
    start: int  # character offsets into the document text
    end: int
    text: str
    risk_level: str
    claims: list[ClaimCard] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.risk_level not in RISK_LEVELS:
            raise ValueError(
                f"paragraph {self.paragraph_id!r}: risk_level {self.risk_level!r} is not one of "
                f"{', '.join(RISK_LEVELS)}"
            )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "paragraph") -> ParagraphCard:
        data = _from_fields(cls, data, where)
        data["claims"] = [
            ClaimCard.from_dict(item, f"{where}.claims[{i}]") for i, item in enumerate(data.get("claims", []))
        ]
        return cls(**data)


@dataclass
class ReviewItem:
    """One entry of the review queue: a claim a person must look at before the report is trusted."""

    paragraph_id: str
    claim_id: str
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "review_queue") -> ReviewItem:
        return cls(**_from_fields(cls, data, where))


@dataclass
class Report:
    """All cards of one checked document."""

    document: str  # path (or name) of the checked document
    business: str  # name of the business rules used (conf/business/<name>.yaml)
    created: str  # ISO 8601 time the report was built
    paragraphs: list[ParagraphCard] = field(default_factory=list)
    review_queue: list[ReviewItem] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    lineage: dict[str, list[str]] = field(default_factory=dict)  # source_id -> paragraph_ids resting on it
    chunks: dict[str, str] = field(default_factory=dict)  # chunk_id -> chunk text, for the Sources section

    def claims(self) -> list[tuple[ParagraphCard, ClaimCard]]:
        """Every (paragraph, claim) pair in document order."""
        return [(p, c) for p in self.paragraphs for c in p.claims]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "report") -> Report:
        data = _from_fields(cls, data, where)
        data["paragraphs"] = [
            ParagraphCard.from_dict(item, f"{where}.paragraphs[{i}]")
            for i, item in enumerate(data.get("paragraphs", []))
        ]
        data["review_queue"] = [
            ReviewItem.from_dict(item, f"{where}.review_queue[{i}]")
            for i, item in enumerate(data.get("review_queue", []))
        ]
        return cls(**data)


# --- suggested action ---------------------------------------------------------------------------

_TEMPLATES = {
    "en": {
        "error": "Rerun / check manually: {reason}",
        "not_checkworthy": "Nothing to check: not a check-worthy factual statement",
        "wrong": 'Check {ref}: it contradicts the claim ("{excerpt}")',
        "disputed_conflict": (
            "Sources disagree: {support} supports the claim, {contradict} contradicts it; "
            "decide which holds or qualify the claim"
        ),
        "disputed_partial": 'Only partly supported by {ref} ("{excerpt}"): narrow the claim to what the source says',
        "review": (
            'Review by hand: {ref} may contradict the claim ("{excerpt}"), '
            "but the judge is unsure (confidence {confidence:.2f})"
        ),
        "insufficient_basis": (
            "Find a stronger or second source: {ref} (tier {tier}) {verb} the claim but is not enough under these rules"
        ),
        "inconclusive": 'No conclusive evidence: find a primary source for "{claim}"',
        "no_evidence": 'No evidence found: find a primary source for "{claim}"',
        "correct": "No action needed: supported by {ref}",
        "correct_conflict": "Supported by {ref}; optionally check {other}, a lower-tier source that contradicts it",
        "citation_missing": 'Check the reference "{cited}": no such work among the sources',
        "citation_unsupported": 'Check the reference "{cited}": {source} has no passage supporting the claim',
        "ref": "{title} ({source_id}) p.{page}",
        "ref_untitled": "{source_id} p.{page}",
        "support": "supports",
        "partial_support": "partly supports",
        "contradict": "contradicts",
    },
    "zh": {
        "error": "重新运行或人工核查：{reason}",
        "not_checkworthy": "无需核查：不是可核查的事实陈述",
        "wrong": "核对{ref}：该来源与本句矛盾（“{excerpt}”）",
        "disputed_conflict": (
            "来源意见不一：{support}支持本句，{contradict}与之矛盾；请判断以哪个为准，或为本句加上限定"
        ),
        "disputed_partial": "仅部分得到{ref}支持（“{excerpt}”）：请把本句收窄到来源所述的范围",
        "review": "请人工复核：{ref}可能与本句矛盾（“{excerpt}”），但判断把握不足（置信度 {confidence:.2f}）",
        "insufficient_basis": "请补充更权威或更多的来源：{ref}（第{tier}级）{verb}本句，但按当前规则还不够",
        "inconclusive": "证据不足以判断：请为“{claim}”查找一手来源",
        "no_evidence": "未找到证据：请为“{claim}”查找一手来源",
        "correct": "无需处理：{ref}支持本句",
        "correct_conflict": "{ref}支持本句；可再看一下与之矛盾的较低级来源{other}",
        "citation_missing": "核对引用“{cited}”：来源中没有这篇文献",
        "citation_unsupported": "核对引用“{cited}”：{source}中没有支持本句的段落",
        "ref": "《{title}》（{source_id}）第{page}页",
        "ref_untitled": "{source_id} 第{page}页",
        "support": "支持",
        "partial_support": "部分支持",
        "contradict": "反驳",
    },
}


def _ref(item: EvidenceItem, words: Mapping[str, str]) -> str:
    key = "ref" if item.title else "ref_untitled"
    return words[key].format(title=item.title, source_id=item.source_id, page=item.page)


def _first(card: ClaimCard, relation: str) -> EvidenceItem | None:
    """The strongest snippet with `relation`: cards keep evidence best tier first, then by confidence."""
    return next((e for e in card.evidence if e.relation == relation), None)


def suggested_action(card: ClaimCard) -> str:
    """One short, concrete instruction for the reviewer, in the claim's language (Chinese or English).

    Args:
        card: a claim card with label, evidence (sorted as `build_claim_card` sorts it), review,
            error and citation filled in.

    Returns:
        The action, e.g. 'Check WHO report (who-2020) p.3: it contradicts the claim ("...")'.
    """
    words = _TEMPLATES[card.lang]
    if card.error:
        return words["error"].format(reason=card.error)
    if not card.checkworthy or card.label is None:
        return words["not_checkworthy"]
    support, contradict, partial = _first(card, "support"), _first(card, "contradict"), _first(card, "partial_support")
    citation = card.citation
    citation_action = None
    if citation is not None and not citation.ok:
        if citation.identity_exists:
            citation_action = words["citation_unsupported"].format(
                cited=citation.cited, source=citation.matched_source_id
            )
        else:
            citation_action = words["citation_missing"].format(cited=citation.cited)

    if card.label == "wrong" and contradict:
        return words["wrong"].format(ref=_ref(contradict, words), excerpt=excerpt(contradict.snippet))
    if card.label == "disputed":
        if support and contradict:
            return words["disputed_conflict"].format(support=_ref(support, words), contradict=_ref(contradict, words))
        if partial:
            return words["disputed_partial"].format(ref=_ref(partial, words), excerpt=excerpt(partial.snippet))
    if card.label == "unverifiable":
        if card.review and contradict:
            return words["review"].format(
                ref=_ref(contradict, words), excerpt=excerpt(contradict.snippet), confidence=contradict.confidence
            )
        if citation_action:
            return citation_action
        basis = support or partial or contradict
        if basis:
            return words["insufficient_basis"].format(
                ref=_ref(basis, words), tier=basis.tier, verb=words[basis.relation]
            )
        key = "inconclusive" if card.evidence else "no_evidence"
        return words[key].format(claim=excerpt(card.text))
    if card.label == "correct" and support:
        if citation_action:
            return citation_action
        lower = next((e for e in card.evidence if e.relation == "contradict" and e.tier > support.tier), None)
        if lower:
            return words["correct_conflict"].format(ref=_ref(support, words), other=_ref(lower, words))
        return words["correct"].format(ref=_ref(support, words))
    # Evidence inconsistent with the label (e.g. a card edited by hand): fall back to the generic search action.
    return words["no_evidence" if not card.evidence else "inconclusive"].format(claim=excerpt(card.text))


# --- builders -----------------------------------------------------------------------------------


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
            )
        )
    return sorted(items, key=lambda e: (e.tier, _RELATION_ORDER[e.relation], -e.confidence, e.chunk_id))


def _claim_citation(
    text: str, sentence: str, sources: Sequence[Any], judged: Sequence[JudgedEvidence]
) -> CitationCheck | None:
    """Check the works cited in the claim (or, if it cites none, in its sentence); return the worst check."""
    checks = check_claim_citations(text, sources, judged) or check_claim_citations(sentence, sources, judged)
    if not checks:
        return None
    return min(checks, key=lambda c: (c.identity_exists, c.content_supports))


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
    decision = rules.decide(vertical, judged)
    hints, risk = list(decision.hints), decision.risk_level
    citation = _claim_citation(text, sentence, list(index.values()), judged) if sources is not None else None
    if citation is not None and not citation.ok:
        hints.append(f"citation {citation.cited!r}: {citation.reason}")
        risk = max_risk(risk, rules.risk["citation_mismatch"])
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
        risk_level=risk,
        hints=hints,
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
) -> Report:
    """Assemble the report: review queue, summary counts and source -> paragraph lineage.

    Args:
        document: path or name of the checked document.
        business: name of the business rules used.
        paragraphs: paragraph cards in document order.
        created: ISO time; now (UTC) when None.
        chunks: chunk_id -> full chunk text for the chunks the evidence cites (optional; the HTML
            report falls back to the snippets).
    """
    paragraphs = list(paragraphs)
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
    )


def write_cards_json(report: Report, path: str | Path) -> Path:
    """Write the report as UTF-8 JSON (Chinese kept readable); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def read_cards_json(path: str | Path) -> Report:
    """Read a report written by `write_cards_json`; errors name the file and the offending field."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from exc
    return Report.from_dict(data, where=str(path))
