"""The consistency layer (factlab/rules/document.py) on its gold (datasets/layers/consistency_gold.jsonl: short
documents in English and Chinese, each with the findings a careful reader would raise, and clean documents that
must raise none): precision, recall and false-alarm documents, per kind and language (printed table).

    python benchmarks/consistency_layer.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "datasets" / "layers" / "consistency_gold.jsonl"


def score(gold_path: Path = GOLD) -> dict:
    from factlab.metrics import SetScores
    from factlab.rules.document import consistency_findings

    scores = SetScores()
    for line in gold_path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        pairs = [(f"p{i + 1}", text) for i, text in enumerate(doc["paragraphs"])]
        want = {(f["kind"], f["keyword"], f"p{f['paragraph']}") for f in doc["findings"]}
        got = {(f.kind, f.keyword, f.paragraph_id) for f in consistency_findings(pairs)}
        scores.add(doc["doc_id"], ["all", doc["lang"]], want, got)
    table = {key: {**row, "findings": row["gold"]} for key, row in scores.table(["all", "en", "zh"]).items()}
    return {"table": table, "misses": scores.misses, "extras": scores.extras, "scores": scores}


def main() -> None:
    result = score(Path(sys.argv[1]) if len(sys.argv) > 1 else GOLD)
    print("\n".join(result["scores"].markdown(
        ["all", "en", "zh"], "gold findings", "clean docs with a finding", "false_alarm_docs")))


if __name__ == "__main__":
    main()
