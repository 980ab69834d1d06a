"""Verify cards, the model: what the pipeline hands the reviewer, per claim, per paragraph and per document, and its
JSON form. (Building them: factlab/cards/build.py; the action texts: factlab/cards/actions.py.)

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
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from factlab.atomic import write_json
from factlab.rules.citations import CitationCheck
from factlab.schema import LABELS, RELATIONS, RISK_LEVELS, detect_language

_EXCERPT_CHARS = 80  # long enough to recognise the passage, short enough for one line of a card


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


class _Record:
    """JSON round trip of a card dataclass: `to_dict`, and `from_dict` naming unknown or missing fields (with `where`,
    the path inside the file) and rebuilding the fields that hold other records."""

    _WHERE = "record"  # how an error names a top-level record of this class

    @classmethod
    def _records(cls) -> dict[str, type]:
        """Field name -> record class, for the fields holding a list of records (or one record, or None)."""
        return {}

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str | None = None):
        where = where or cls._WHERE
        data = _from_fields(cls, data, where)
        for name, kind in cls._records().items():
            value = data.get(name)
            if isinstance(value, list):
                data[name] = [kind.from_dict(item, f"{where}.{name}[{i}]") for i, item in enumerate(value)]
            elif value is not None:
                data[name] = kind.from_dict(value)
        return cls(**data)


@dataclass
class EvidenceItem(_Record):
    """One judged snippet as a card shows it."""

    _WHERE = "evidence"

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
    published: str = ""  # the page's date (web evidence) or the source record's date / year
    weak: bool = False  # retrieved below retrieval.search.strong_relevance: its contradiction decided nothing

    def __post_init__(self) -> None:
        if self.relation not in RELATIONS:
            raise ValueError(
                f"evidence {self.chunk_id!r}: relation {self.relation!r} is not one of {', '.join(RELATIONS)}"
            )



@dataclass
class ClaimCard(_Record):
    """Everything the reviewer needs about one claim."""

    _WHERE = "claim"

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
    reused: dict | None = None  # served from the claim cache: {"kind": exact | near, "claim", "similarity"}
    checker: str = ""  # the checker that decided the card: fast | professional ("" = not recorded)
    escalation: dict | None = None  # funnel: {"reason", "fast": the fast checker's label / relation / confidence}
    newest_source: dict | None = None  # timeliness: the newest dated source judged (source_id, title, date, tier)

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

    @classmethod
    def _records(cls) -> dict[str, type]:
        return {"evidence": EvidenceItem, "citation": CitationCheck}



@dataclass
class ParagraphCard(_Record):
    """One paragraph of the document with its claims; its risk is the riskiest claim's."""

    _WHERE = "paragraph"

    paragraph_id: str
    start: int  # character offsets into the document text
    end: int
    text: str
    risk_level: str
    claims: list[ClaimCard] = field(default_factory=list)
    paragraph_type: str = ""  # the routing table's type (background, method, ...); "" = not routed
    layers: list[str] = field(default_factory=list)  # the layers that checked it (facts, logic, consistency)

    def __post_init__(self) -> None:
        if self.risk_level not in RISK_LEVELS:
            raise ValueError(
                f"paragraph {self.paragraph_id!r}: risk_level {self.risk_level!r} is not one of "
                f"{', '.join(RISK_LEVELS)}"
            )

    @classmethod
    def _records(cls) -> dict[str, type]:
        return {"claims": ClaimCard}



@dataclass
class LayerFinding(_Record):
    """A finding of a layer beyond single facts (consistency, logic), in the seed's shape: where, the span at issue,
    the other location or snippet it conflicts with, and what to do."""

    _WHERE = "findings"

    paragraph_id: str
    layer: str  # consistency | logic
    kind: str  # e.g. abbreviation, unit_format, citation_format (factlab/rules/document.py)
    status: str  # flagged
    keyword: str  # the span at issue
    evidence: str  # the other location's text (and where), or the source snippet
    suggested_action: str
    message: str = ""
    other_paragraph_id: str = ""


@dataclass
class ReviewItem(_Record):
    """One entry of the review queue: a claim a person must look at before the report is trusted."""

    _WHERE = "review_queue"

    paragraph_id: str
    claim_id: str
    reason: str



@dataclass
class Report(_Record):
    """All cards of one checked document."""

    _WHERE = "report"

    document: str  # path (or name) of the checked document
    business: str  # name of the business rules used (conf/business/<name>.yaml)
    created: str  # ISO 8601 time the report was built
    paragraphs: list[ParagraphCard] = field(default_factory=list)
    review_queue: list[ReviewItem] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    lineage: dict[str, list[str]] = field(default_factory=dict)  # source_id -> paragraph_ids resting on it
    chunks: dict[str, str] = field(default_factory=dict)  # chunk_id -> chunk text, for the Sources section
    skipped_sources: list[str] = field(default_factory=list)  # "path[:line]: reason" of sources that were not read
    findings: list[LayerFinding] = field(default_factory=list)  # the consistency / logic layers' findings
    egress: dict[str, Any] = field(default_factory=dict)  # a web search: backend, every query sent, every host asked

    def claims(self) -> list[tuple[ParagraphCard, ClaimCard]]:
        """Every (paragraph, claim) pair in document order."""
        return [(p, c) for p in self.paragraphs for c in p.claims]

    def _repr_html_(self) -> str:
        """Jupyter shows the report as its cards: paragraphs riskiest first, each claim with its evidence."""
        from factlab.cards.html import render_cells

        return render_cells(self)

    @classmethod
    def _records(cls) -> dict[str, type]:
        return {"paragraphs": ParagraphCard, "review_queue": ReviewItem, "findings": LayerFinding}



def write_cards_json(report: Report, path: str | Path) -> Path:
    """Write the report as UTF-8 JSON (Chinese kept readable), atomically; return the path."""
    return write_json(path, report.to_dict(), indent=2)


def read_cards_json(path: str | Path) -> Report:
    """Read a report written by `write_cards_json`; errors name the file and the offending field."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from exc
    return Report.from_dict(data, where=str(path))
