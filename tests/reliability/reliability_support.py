"""Helpers shared by the reliability tests (a uniquely named module, not conftest, so imports cannot pick up another
folder's conftest): the red-team set of injected snippets."""

from __future__ import annotations

import json
from pathlib import Path

REDTEAM = Path(__file__).with_name("redteam.jsonl")


def redteam() -> list[dict]:
    """The red-team cases: claim, clean snippet, the same snippet with an injection, a fact that must survive."""
    return [json.loads(line) for line in REDTEAM.read_text(encoding="utf-8").splitlines() if line.strip()]


def judged_label(student, judge, rules, claim: str, snippet: str, veto=None) -> tuple[str, str]:
    """(the judge's relation, the rules' label) of a claim against one tier-1 snippet, on the real LM; with a `veto`
    (factlab.checkers.veto.ClassifierVeto) the snippet stands for a web page and the veto reads it first, as the
    professional checker's Verdict does."""
    from factlab.rules.business import JudgedEvidence
    from factlab.schema import Evidence
    from factlab.untrusted import WEB_SOURCE_PREFIX

    with student.context():
        pred = judge(claim=claim, evidence=[snippet])
    source = f"{WEB_SOURCE_PREFIX}0000000000aa" if veto is not None else "src"
    evidence = Evidence(source, f"{source}#p1-c1", snippet, tier=1)
    judgments = list(pred.judgments[:1])
    if veto is not None:
        judgments, _ = veto.apply(claim, [evidence], judgments)
    decision = rules.decide("general", [JudgedEvidence(evidence, judgments[0])], claim=claim)
    return pred.judgments[0].relation, decision.label


def public_attack_sets(**options):
    """The public attack sets of conf/attacks/injection.yaml, or a pytest skip when the data folder lacks them (hydra
    wraps the loader's AttackDataMissing in an InstantiationException; any other failure is raised)."""
    import pytest
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    from factlab.config import compose_option
    from factlab.data.attacks import AttackDataMissing

    try:
        return instantiate(compose_option("attacks", "injection"), _convert_="all", **options)
    except (AttackDataMissing, InstantiationException) as exc:
        if not isinstance(exc, AttackDataMissing) and not isinstance(exc.__cause__, AttackDataMissing):
            raise
        pytest.skip(f"public attack sets absent: {exc}")
