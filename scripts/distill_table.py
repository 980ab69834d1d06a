# python scripts/distill_table.py gold=outputs/train/distill_checkworthy/<digest> lm15=<folder> [--reference gold]
"""Distilled classifiers side by side on their test predictions: accuracy and macro-F1 against the gold with 95%
bootstrap intervals resampling cases, per language, the teacher's own accuracy on the same rows, and the paired gain
of each classifier over its teacher and over a reference run. Each argument is name=<a train.py work folder or its
test_predictions.jsonl>. Code: factlab/train/distill/compare.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> dict:
    from factlab.train.distill.compare import compare_runs, read_predictions

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="name=path")
    parser.add_argument("--reference", help="the run every other classifier is paired against")
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--out", help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    runs = {}
    for spec in args.runs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            parser.error(f"{spec!r}: expected name=path")
        runs[name] = read_predictions(path)
    out = compare_runs(runs, reference=args.reference, samples=args.samples)
    print(out["table"])
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(out["table"] + "\n", encoding="utf-8")
    return out


if __name__ == "__main__":
    main()
