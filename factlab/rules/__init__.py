"""Deterministic rules: judged evidence + business config -> label, risk, hints; citation checks."""

from factlab.rules.business import BusinessRules, JudgedEvidence, RuleDecision, max_risk
from factlab.rules.citations import (
    CitationCheck,
    CitationMention,
    check_citation,
    check_claim_citations,
    find_citations,
)

__all__ = [
    "BusinessRules",
    "CitationCheck",
    "CitationMention",
    "JudgedEvidence",
    "RuleDecision",
    "check_citation",
    "check_claim_citations",
    "find_citations",
    "max_risk",
]
