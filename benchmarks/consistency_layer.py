"""The consistency layer (factlab/rules/document.py) on its gold (datasets/layers/consistency_gold.jsonl: short
documents in English and Chinese, each with the findings a careful reader would raise, and clean documents that
must raise none): precision, recall and false-alarm documents, per kind and language (printed table). The gold is
read by `factlab.data.benchmark_gold`, scored by `factlab.evals.layer_gold.score_consistency`.

    python benchmarks/consistency_layer.py [gold.jsonl]
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> None:
    from factlab.data.benchmark_gold import CONSISTENCY_GOLD
    from factlab.evals.layer_gold import score_consistency

    result = score_consistency(Path(sys.argv[1]) if len(sys.argv) > 1 else CONSISTENCY_GOLD)
    print("\n".join(result["scores"].markdown(
        ["all", "en", "zh"], "gold findings", "clean docs with a finding", "false_alarm_docs")))


if __name__ == "__main__":
    main()
