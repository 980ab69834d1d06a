"""The common-cause lineage (`factlab.cards.build.common_cause_findings`) on its gold
(datasets/layers/common_cause_gold.jsonl: small documents given as paragraphs of claims with their judged evidence,
each with the groups a careful reader would flag): the cards are built by the default business rules, then grouped.
Printed: exact-group precision / recall and documents with a false group, per language. The gold is read by
`factlab.data.benchmark_gold`, scored by `factlab.evals.layer_gold.score_common_cause`.

    python benchmarks/common_cause.py [gold.jsonl]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from factlab.data.benchmark_gold import COMMON_CAUSE_GOLD
    from factlab.evals.layer_gold import score_common_cause

    result = score_common_cause(Path(sys.argv[1]) if len(sys.argv) > 1 else COMMON_CAUSE_GOLD)
    print("\n".join(result["scores"].markdown(
        ["all", "en", "zh"], "gold groups", "docs with a false group", "docs_with_extra")))


if __name__ == "__main__":
    main()
