"""Each checker on the ~6,000-character Chinese report against the bundled corpus: model loading (cold: first build in
a fresh process; the index is built before and reported apart), then the check itself, cold (first document) and
warm (the same document again, models loaded), claims, labels, escalations, LM calls (printed table).

    python benchmarks/checkers.py                                  # checker=fast
    python benchmarks/checkers.py --checker fast funnel --funnel-share 0.2 --lm local_qwen05
    python benchmarks/checkers.py --set checker.stages.judge.model=models:/factlab-distill_judge/1

The funnel escalates by its policy (conf/checker/funnel.yaml), capped at --funnel-share of the claims (the most
urgent first), so its cost at a given escalation share is measured, not extrapolated.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "outputs" / "benchmarks" / "checkers"


def lm_calls(costs: dict) -> int:
    return int(sum(c.get("calls", 0) for c in costs.values()))


def measure(name: str, args) -> dict:
    from hydra.utils import instantiate

    from factlab.checkers.build import build_checker
    from factlab.config import compose_config
    from factlab.runtime import configure_lm_cache, prepare_offline_env

    prepare_offline_env()
    overrides = [f"input={args.input}", f"sources={args.sources}", f"checker={name}", "progress=true",
                 f"lm@student={args.lm}", "claim_cache.enabled=false", *args.set]
    if name == "funnel":
        overrides.append(f"checker.escalate.max_share={args.funnel_share}")
    cfg = compose_config("verify", overrides)
    configure_lm_cache(OUT / "dspy")
    started = time.perf_counter()
    instantiate(cfg.retriever)  # the index, timed apart from the models
    index_s = time.perf_counter() - started
    started = time.perf_counter()
    checker = build_checker(cfg)
    load_s = time.perf_counter() - started
    text = Path(args.input).read_text(encoding="utf-8")
    runs = []
    for _ in range(args.runs):
        started = time.perf_counter()
        report = checker.run(text, name=args.input).report
        runs.append(time.perf_counter() - started)
    summary = report.summary
    return {"checker": name, "index_s": round(index_s, 2), "load_s": round(load_s, 2),
            "cold_s": round(runs[0], 2), "warm_s": round(statistics.median(runs[1:]), 2) if len(runs) > 1 else None,
            "warm_range": [round(min(runs[1:]), 2), round(max(runs[1:]), 2)] if len(runs) > 1 else None,
            "paragraphs": summary["paragraphs"], "claims": summary["claims"] - summary["not_checkworthy"],
            "labels": summary["labels"], "errors": summary["errors"], "funnel": summary.get("funnel"),
            "lm_calls": lm_calls(checker.meter.costs()), "costs": checker.meter.costs(), "chars": len(text)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checker", nargs="+", default=["fast"])
    parser.add_argument("--input", default=str(ROOT / "datasets/bundled/examples/report_zh_long.md"))
    parser.add_argument("--sources", default=str(ROOT / "datasets/bundled/corpus"))
    parser.add_argument("--lm", default="local_qwen05")
    parser.add_argument("--runs", type=int, default=6, help="checks of the document per checker (1 cold + warm)")
    parser.add_argument("--funnel-share", type=float, default=0.2)
    parser.add_argument("--set", nargs="*", default=[], help="extra config overrides")
    args = parser.parse_args()
    rows = [measure(name, args) for name in args.checker]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2), encoding="utf-8")
    print(f"\ndocument: {args.input} ({rows[0]['chars']} characters), sources {args.sources}, runs {args.runs}\n")
    print("| checker | index s | model load s | check s cold | check s warm, median [min, max] | paragraphs | claims | "
          "escalated | "
          "LM calls | labels (correct / wrong / disputed / unverifiable) | errors |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        labels = " / ".join(str(r["labels"][k]) for k in ("correct", "wrong", "disputed", "unverifiable"))
        escalated = f"{r['funnel']['escalated']} ({r['funnel']['fast_s']:.1f} s fast + " \
                    f"{r['funnel']['professional_s']:.1f} s LM)" if r["funnel"] else ""
        warm = f"{r['warm_s']} {r['warm_range']}" if r["warm_s"] is not None else ""
        print(f"| {r['checker']} | {r['index_s']} | {r['load_s']} | {r['cold_s']} | {warm} | "
              f"{r['paragraphs']} | {r['claims']} | {escalated} | {r['lm_calls']} | {labels} | {r['errors']} |")
    print(f"\nstage seconds (last run of each): see {OUT / 'results.json'}")


if __name__ == "__main__":
    main()
