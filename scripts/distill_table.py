# python scripts/distill_table.py gold=outputs/train/distill_checkworthy/<digest> lm15=<folder> [--reference gold]
"""Distilled classifiers side by side on their test predictions: accuracy and macro-F1 against the gold with 95%
bootstrap intervals resampling cases, per language, the teacher's own accuracy on the same rows, and the paired gain
of each classifier over its teacher and over a reference run. Each argument is name=<a train.py work folder or its
test_predictions.jsonl>. Code: factlab/train/distill/compare.py (`main`).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from factlab.train.distill.compare import main  # noqa: E402 - after the repository is on the path

if __name__ == "__main__":
    main()
