"""Helpers shared by the reliability tests (a uniquely named module, not conftest, so imports cannot pick up another
folder's conftest): the red-team set of injected snippets."""

from __future__ import annotations

import json
from pathlib import Path

REDTEAM = Path(__file__).with_name("redteam.jsonl")


def redteam() -> list[dict]:
    """The red-team cases: claim, clean snippet, the same snippet with an injection, a fact that must survive."""
    return [json.loads(line) for line in REDTEAM.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged_label(student, judge, rules, claim: str, snippet: str) -> tuple[str, str]:
    """(the judge's relation, the rules' label) of a claim against one tier-1 snippet, on the real LM."""
    from factlab.rules.business import JudgedEvidence
    from factlab.schema import Evidence

    with student.context():
        pred = judge(claim=claim, evidence=[snippet])
    evidence = Evidence("src", "src#p1-c1", snippet, tier=1)
    decision = rules.decide("general", [JudgedEvidence(evidence, pred.judgments[0])], claim=claim)
    return pred.judgments[0].relation, decision.label
