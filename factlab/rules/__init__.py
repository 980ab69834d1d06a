"""Deterministic rules: judged evidence + business config -> label, risk, hints; citation checks (on the citation
model of factlab.matching.citations)."""

from factlab.rules.business import BusinessRules, JudgedEvidence, RuleDecision, max_risk
from factlab.rules.citations import CitationCheck, check_citation, check_claim_citations

__all__ = [
    "BusinessRules",
    "CitationCheck",
    "JudgedEvidence",
    "RuleDecision",
    "check_citation",
    "check_claim_citations",
    "max_risk",
]
