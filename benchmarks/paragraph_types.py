"""The paragraph typer (the routing table's key) on the test split of `dataset=paragraph_types`: the routing table's
patterns (the default, no model), the LM stage `paragraph_type`, or its trained classifier; accuracy and macro-F1
with 95% bootstrap intervals, per language and source (the written gold, SciFact sections), and the confusion.

    python benchmarks/paragraph_types.py                                    # the routing patterns
    python benchmarks/paragraph_types.py --engine stage --lm local_qwen05   # the LM stage, one call per paragraph
    python benchmarks/paragraph_types.py --engine classifier --model models:/factlab-distill_paragraph_type/latest
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def predictor(engine: str, lm: str, model: str | None):
    """paragraph -> type, for the engine."""
    from hydra.utils import instantiate

    from factlab.config import compose_config

    if engine == "rules":
        routing = instantiate(compose_config("verify", ["input=x", "sources=y", "routing=default"]).routing)
        return routing.paragraph_type, None
    from factlab.stages.build import build_program

    overrides = ["stage=paragraph_type", f"lm@student={lm}"]
    if engine == "classifier":
        overrides += ["stage.backend=classifier", f"stage.model={model}"]
    cfg = compose_config("run_stage", overrides)
    program = build_program(cfg.stage)
    handle = instantiate(cfg.student) if engine == "stage" else None

    def predict(text: str) -> str:
        if handle is None:
            return str(program(paragraph=text).paragraph_type)
        with handle.context():
            return str(program(paragraph=text).paragraph_type)

    return predict, handle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=["rules", "stage", "classifier"], default="rules")
    parser.add_argument("--lm", default="local_qwen05")
    parser.add_argument("--model", default=None, help="classifier: a model folder or MLflow URI")
    parser.add_argument("--split", default="test")
    parser.add_argument("--max", type=int, default=None, help="at most this many paragraphs (seeded)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    from hydra.utils import instantiate
    from tqdm import tqdm

    from factlab.config import compose_config
    from factlab.data.splits import seeded_sample
    from factlab.metrics import bootstrap_ci, classification_metrics
    from factlab.programs.paragraph_type import CLASSIFIER_LABELS

    cases = [c for c in instantiate(compose_config("optimize", ["stage=paragraph_type",
                                                                "dataset=paragraph_types"]).dataset)
             if c["split"] == args.split]
    cases = seeded_sample(cases, args.max, 0)
    predict, _ = predictor(args.engine, args.lm, args.model)
    rows = []
    for case in tqdm(cases, desc=f"paragraph_type {args.engine}", unit="paragraph"):
        start = time.perf_counter()
        try:
            got = predict(case["text"])
        except Exception as exc:  # an unparsable answer counts as wrong, and is named
            got = f"error: {type(exc).__name__}"
        rows.append({"case_id": case["case_id"], "lang": case["lang"], "gold": case["paragraph_type"],
                     "pred": got if got in CLASSIFIER_LABELS else "background" if got.startswith("error") else got,
                     "raw": got, "source": "scifact" if case["case_id"].startswith("scifact-") else "written",
                     "seconds": time.perf_counter() - start})

    def stats(subset: list[dict]) -> dict:
        labels = sorted({*CLASSIFIER_LABELS, *(r["pred"] for r in subset)})
        return classification_metrics([r["gold"] for r in subset], [r["pred"] for r in subset], labels)

    print(f"\nparagraph_type ({args.engine}{' ' + args.lm if args.engine == 'stage' else ''}), split {args.split}; "
          f"{1000 * sum(r['seconds'] for r in rows) / max(1, len(rows)):.1f} ms per paragraph")
    print("| subset | paragraphs | accuracy | macro-F1 |")
    print("|---|---|---|---|")
    table = {}
    subsets = {"all": rows, "written en": [r for r in rows if r["source"] == "written" and r["lang"] == "en"],
               "written zh": [r for r in rows if r["source"] == "written" and r["lang"] == "zh"],
               "scifact": [r for r in rows if r["source"] == "scifact"]}
    for name, subset in subsets.items():
        if not subset:
            continue
        m = stats(subset)
        ci = bootstrap_ci(subset, stats, ["accuracy", "macro_f1"], 1000, 0, 0.95)
        table[name] = {**m, "ci": ci}
        print(f"| {name} | {len(subset)} | {m['accuracy']:.2f} [{ci['accuracy'][0]:.2f}, {ci['accuracy'][1]:.2f}] | "
              f"{m['macro_f1']:.2f} [{ci['macro_f1'][0]:.2f}, {ci['macro_f1'][1]:.2f}] |")
    print("confusion (gold -> predicted):", dict(Counter((r["gold"], r["pred"]) for r in rows).most_common()))
    if args.json:
        args.json.write_text(json.dumps({"table": table, "rows": rows}, ensure_ascii=False, indent=1),
                             encoding="utf-8")


if __name__ == "__main__":
    main()
