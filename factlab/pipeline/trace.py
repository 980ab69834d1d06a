"""What one run of the pipeline did, stage by stage: the record evaluation reads (it never reruns or patches a stage
to find out). One `ParagraphTrace` per paragraph holds its sentence verdicts, the text handed to claim extraction,
the context summary it got, the drafted and the reviewed claims; one `ClaimTrace` per claim holds every claim-level
stage's output and its card.

The stage names are defined here once: DOC_STAGES run per document / paragraph, CLAIM_STAGES per claim, each with a
`fixed=` hook that replaces its output by gold; `rules` turns the judged evidence into the label.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from factlab.cards.model import ClaimCard, Report
from factlab.models.errors import StageError
from factlab.schema import Evidence, Judgment, StageName

DOC_STAGES: tuple[str, ...] = (StageName.PARAGRAPHS, StageName.CHECKWORTHY, StageName.EXTRACT_CLAIMS,
                               StageName.REVIEW_CLAIMS)
CLAIM_STAGES: tuple[str, ...] = (StageName.VERTICAL, StageName.QUERY_REWRITE, "retrieval", StageName.JUDGE)
PIPELINE_STAGES: tuple[str, ...] = (*DOC_STAGES, *CLAIM_STAGES, "rules")


@dataclass
class ClaimTrace:
    """Every stage's output for one claim (what evaluate.py compares with gold).

    `placeholder` marks the error card that stands for a paragraph whose claims could not be extracted: it carries
    the paragraph's check-worthy text, not a claim.
    """

    claim_id: str
    text: str
    sentence: str
    vertical: str | None = None
    queries: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    judgments: list[Judgment] = field(default_factory=list)
    relation: str | None = None
    card: ClaimCard | None = None
    error: StageError | None = None
    cached: bool = False
    placeholder: bool = False


@dataclass
class ParagraphTrace:
    """The document-level stages' output for one paragraph."""

    sentences: list[dict]  # {"text", "start", "end", "checkworthy", "reason"}
    worthy: str = ""  # the check-worthy sentences joined: what claim extraction received
    context: str = ""  # the summary of earlier paragraphs it received
    drafts: list[str] = field(default_factory=list)  # extracted claims, before review
    claims: list[ClaimTrace] = field(default_factory=list)  # reviewed claims (or the placeholder error card)
    ungrounded: list[str] = field(default_factory=list)  # reviewed claims dropped: their paragraph does not state them
    paragraph_type: str = ""  # the routing table's type ("" = not routed)
    layers: list[str] = field(default_factory=list)  # the layers that check it (DocumentLayers.route)
    logic: list = field(default_factory=list)  # the logic layer's findings (factlab.rules.logic.LogicIssue)

    def real_claims(self) -> list[ClaimTrace]:
        """The reviewed claims without the placeholder of a failed extraction."""
        return [t for t in self.claims if not t.placeholder]


@dataclass
class DocumentTrace:
    """One checked document: its paragraphs, per paragraph what the stages did, and the report."""

    paragraphs: list[dict]
    units: list[ParagraphTrace]  # one per paragraph, in order
    report: Report

    @property
    def sentences(self) -> list[list[dict]]:
        return [u.sentences for u in self.units]

    @property
    def claims(self) -> list[list[ClaimTrace]]:
        return [u.claims for u in self.units]

    @property
    def drafts(self) -> list[list[str]]:
        return [u.drafts for u in self.units]
