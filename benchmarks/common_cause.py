"""The common-cause lineage (`factlab.cards.build.common_cause_findings`) on its gold
(datasets/layers/common_cause_gold.jsonl: small documents given as paragraphs of claims with their judged evidence,
each with the groups a careful reader would flag): the cards are built by the default business rules, then grouped.
Printed: exact-group precision / recall and documents with a false group, per language.

    python benchmarks/common_cause.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
GOLD = ROOT / "datasets" / "layers" / "common_cause_gold.jsonl"


def cards_of(doc: dict, rules) -> list:
    """The paragraph cards of a gold document, each claim carded by `rules` from its judged evidence."""
    from factlab.cards.build import build_claim_card, build_paragraph_card
    from factlab.rules.business import JudgedEvidence
    from factlab.schema import Evidence, Judgment

    cards, offset = [], 0
    for p_index, claims in enumerate(doc["paragraphs"]):
        built = []
        for c_index, claim in enumerate(claims):
            judged = [JudgedEvidence(Evidence(source_id=s, chunk_id=f"{s}#p1-c{i + 1}", text=claim["text"], tier=t),
                                     Judgment(relation=r, confidence=0.9, reason="gold"))
                      for i, (s, t, r) in enumerate(claim["evidence"])]
            built.append(build_claim_card(claim_id=f"p{p_index + 1}-c{c_index + 1}", text=claim["text"],
                                          judged=judged, rules=rules))
        text = " ".join(c["text"] for c in claims)
        cards.append(build_paragraph_card(f"p{p_index + 1}", offset, offset + len(text), text, built))
        offset += len(text) + 2
    return cards


def score(gold_path: Path = GOLD) -> dict:
    from hydra.utils import instantiate

    from factlab.cards.build import common_cause_findings
    from factlab.config import compose_config
    from factlab.metrics import SetScores

    rules = instantiate(compose_config("verify", ["input=x", "sources=y"]).business)
    scores = SetScores()
    for line in gold_path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        want = {(source, tuple(f"p{i}" for i in group)) for source, group in doc["flagged"]}
        groups: dict[str, list[str]] = {}
        for f in common_cause_findings(cards_of(doc, rules)):
            groups.setdefault(f.evidence.split(" ")[0], []).append(f.paragraph_id)
        scores.add(doc["doc_id"], ["all", doc["lang"]], want, {(s, tuple(p)) for s, p in groups.items()})
    table = {key: {**row, "groups": row["gold"], "docs_with_a_false_group": row["docs_with_extra"]}
             for key, row in scores.table(["all", "en", "zh"]).items()}
    return {"table": table, "misses": scores.misses, "extras": scores.extras, "scores": scores}


def main() -> None:
    result = score(Path(sys.argv[1]) if len(sys.argv) > 1 else GOLD)
    print("\n".join(result["scores"].markdown(
        ["all", "en", "zh"], "gold groups", "docs with a false group", "docs_with_extra")))


if __name__ == "__main__":
    main()
