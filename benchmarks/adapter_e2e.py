# python benchmarks/adapter_e2e.py --base <dir> --adapter <dir> [--long-base <dir> --long-adapter <dir>]
"""End to end with and without a stage adapter: two evaluate.py runs of the same checker on the same split (the
only difference `stage.extract_claims.lora`), side by side, with the paired label gain on the gold claims both scored
(95% bootstrap over cases); optionally two verify.py runs on a report without gold (claims, labels, risks, wall, LM
calls). The runs themselves (docs/train.md, "End to end"):

    python evaluate.py checker=professional stage.judge.backend=classifier stage.checkworthy.backend=classifier \\
        stage.vertical.backend=classifier dataset=bundled tracking=off 'attribution.counterfactual.stages=[]' \\
        output_dir=<dir> [stage.extract_claims.lora=null]

The long report (no gold: claims, labels, risks, LM calls, time), the 0.5B extracting and nothing else on an LM,
one paragraph at a time (so the CPU's load does not turn into read timeouts):

    python verify.py input=datasets/bundled/examples/report_zh_long.md sources=datasets/bundled/corpus \
        checker=professional stage.judge.backend=classifier stage.checkworthy.backend=classifier \
        stage.vertical.backend=classifier stage.review_claims.backend=rules stage.query_rewrite.backend=rules \
        checker.paragraph_workers=1 max_workers=1 student.timeout_s=600 output_dir=<dir> \
        [stage.extract_claims.lora=null]

Writes outputs/benchmarks/adapter_e2e/results.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from independent_logic import save  # noqa: E402  (writes <out>/results.json)

OUT = Path("outputs/benchmarks/adapter_e2e")


def evaluation(folder: Path) -> dict:
    """The headline numbers of one evaluate.py output folder (summary.json)."""
    summary = json.loads((folder / "summary.json").read_text())
    m = summary["metrics"]
    split = next(k.split("/")[0] for k in m if k.endswith("/label/accuracy"))
    costs = summary["costs"]["pipeline"]

    def ci(key: str) -> list[float]:
        return [m.get(f"{split}/{key}_ci_low", float("nan")), m.get(f"{split}/{key}_ci_high", float("nan"))]

    return {"split": split, "cases": m[f"{split}/cases"], "claims": m[f"{split}/items"],
            "label_accuracy": m[f"{split}/label/accuracy"], "label_accuracy_ci": ci("label/accuracy"),
            "label_macro_f1": m[f"{split}/label/macro_f1"], "matched": m[f"{split}/label/matched"],
            "extract_f1": m.get(f"{split}/extract_claims/f1"),
            "extract_recall": m.get(f"{split}/extract_claims/recall"),
            "risk_coverage": m[f"{split}/e2e/risk_coverage"], "risk_coverage_ci": ci("e2e/risk_coverage"),
            "false_alarms": m[f"{split}/e2e/false_alarm_rate"], "false_alarms_ci": ci("e2e/false_alarm_rate"),
            "wall_s": m.get("time/wall_s"), "lm_calls": int(sum(c.get("calls", 0) for c in costs.values())),
            "lm_cache_hits": int(sum(c.get("cache_hits", 0) for c in costs.values())),
            "extract_calls": int(costs.get("extract_claims", {}).get("calls", 0)),
            "pipeline_claims": int(costs.get("judge", {}).get("items", 0))}


def report(folder: Path) -> dict:
    """Claims, labels, risks, wall time and LM calls of one verify.py output folder (its run.json)."""
    run = json.loads((folder / "run.json").read_text())
    summary, costs = run["summary"], run.get("costs", {})
    return {"paragraphs": summary["paragraphs"], "claims": summary["claims"], "errors": summary.get("errors", 0),
            "labels": summary["labels"], "paragraph_risk": summary.get("paragraph_risk", {}),
            "findings": summary.get("findings", {}), "wall_s": round(run["seconds"], 1),
            "lm_calls": int(sum(c.get("calls", 0) for c in costs.values())),
            "extract_seconds": round(costs.get("extract_claims", {}).get("seconds", 0.0), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--base", type=Path, required=True, help="evaluate.py output dir, the stage without adapter")
    parser.add_argument("--adapter", type=Path, required=True, help="evaluate.py output dir, the stage on its adapter")
    parser.add_argument("--long-base", type=Path)
    parser.add_argument("--long-adapter", type=Path)
    parser.add_argument("--bootstrap", type=int, default=2000)
    args = parser.parse_args()

    from factlab.loop.report import correct_by_case, paired_label_gain

    runs = {"without adapter": evaluation(args.base), "with adapter": evaluation(args.adapter)}
    gain, bounds = paired_label_gain(correct_by_case(args.base), correct_by_case(args.adapter), args.bootstrap, 0, 0.95)
    first = runs["without adapter"]
    print(f"\n{first['split']} split: {first['cases']:.0f} cases, {first['claims']:.0f} gold claims\n")
    print("| extract_claims | label accuracy [95%] | macro F1 | gold claims matched | extraction F1 | risk coverage "
          "| false alarms | claims checked | LM calls (cache hits) | wall |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in runs.items():
        low, high = r["label_accuracy_ci"]
        print(f"| {name} | {r['label_accuracy']:.3f} [{low:.3f}, {high:.3f}] "
              f"| {r['label_macro_f1']:.3f} | {r['matched']:.3f} | {r['extract_f1']:.3f} | {r['risk_coverage']:.3f} "
              f"| {r['false_alarms']:.3f} | {r['pipeline_claims']} | {r['lm_calls']} ({r['lm_cache_hits']}) "
              f"| {r['wall_s']:.0f} s |")
    text = "n/a" if bounds is None else f"{gain:+.3f} [{bounds[0]:+.3f}, {bounds[1]:+.3f}]"
    print(f"\npaired label accuracy gain (with - without, same gold claims): {text}")
    results: dict = {"runs": runs, "paired_label_gain": gain, "paired_label_gain_ci": bounds}
    if args.long_base and args.long_adapter:
        long = {"without adapter": report(args.long_base), "with adapter": report(args.long_adapter)}
        results["long_report"] = long
        print("\n| long report | claims (errors) | labels | paragraph risk | LM calls | extraction s | wall s |")
        print("|---|---|---|---|---|---|---|")
        for name, r in long.items():
            print(f"| {name} | {r['claims']} ({r['errors']}) | {r['labels']} | {r['paragraph_risk']} | {r['lm_calls']} "
                  f"| {r['extract_seconds']} | {r['wall_s']} |")
    save(OUT, results)


if __name__ == "__main__":
    main()
