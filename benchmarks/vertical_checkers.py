"""The vertical checkers (factlab/retrieval/verticals.py) on their gold (datasets/layers/verticals_gold.jsonl: claims in
English and Chinese for the link checker, a phone-number lookup table and the quotation matcher, each with what a
user expects: whether the checker applies, the relation it answers, whether it sends the claim to review, and the span
its hint must name), with the fixtures in datasets/layers/verticals/ (phones.csv, references/*.txt, sources.json).

Printed table, per checker and language: cases, applies-accuracy, relation accuracy on the cases the gold says the
checker applies to, hints right (a hint naming the gold keyword, and no hint where the gold has none), and precision /
recall of "flagged" (contradict or review) with 95% Wilson intervals; then every miss. The gold is read by
`factlab.data.benchmark_gold`, scored by `factlab.evals.layer_gold.score_verticals`.

    python benchmarks/vertical_checkers.py
    python benchmarks/vertical_checkers.py --gold my_gold.jsonl --json outputs/benchmarks/verticals.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from factlab.data.benchmark_gold import VERTICALS_FIXTURES, VERTICALS_GOLD
from factlab.evals.layer_gold import score_verticals


def _fmt(rate: dict, interval: bool = False) -> str:
    if rate["value"] is None:
        return "-"
    text = f"{rate['value']:.2f} ({rate['k']}/{rate['n']})"
    if interval:
        lo, hi = rate["ci95"]
        text += f" [{lo:.2f}, {hi:.2f}]"
    return text


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gold", type=Path, default=VERTICALS_GOLD, help="gold JSONL (default: %(default)s)")
    parser.add_argument("--fixtures", type=Path, default=VERTICALS_FIXTURES,
                        help="phones.csv, references/, sources.json")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write the numbers here")
    args = parser.parse_args(argv)
    result = score_verticals(args.gold, args.fixtures)
    print("| checker | lang | cases | applies acc. | relation acc. (gold applies) | hints right | "
          "flagged precision [95% CI] | flagged recall [95% CI] |")
    print("|---|---|---|---|---|---|---|---|")
    for checker, rows in result["table"].items():
        for lang, row in rows.items():
            print(f"| {checker} | {lang} | {row['cases']} | {_fmt(row['applies_accuracy'])} | "
                  f"{_fmt(row['relation_accuracy'])} | {_fmt(row['hints_right'])} | "
                  f"{_fmt(row['flagged_precision'], True)} | {_fmt(row['flagged_recall'], True)} |")
    for miss in result["misses"]:
        got, want = miss["got"], miss["expect"]
        print(f"missed  {miss['case_id']} ({', '.join(miss['wrong'])}): expected applies={want['applies']} "
              f"relation={want['relation']} review={want['review']} keyword={want['keyword']!r}; got "
              f"applies={got['applies']} relation={got['relation']} review={got['review']} hints={miss['hints']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
